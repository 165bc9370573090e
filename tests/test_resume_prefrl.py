"""A pref-rl run killed anywhere (mid-rollout included) and resumed ends where an uninterrupted run
does: the same env steps (its budget, exactly), query rounds, label counts and metric rows, none
twice (issue 16, item 8), bit for bit (issue 36)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from rlkit.data import Trajectory
from rlkit.errors import ConfigError, FileFormatError
from rlkit.factories.agent import EpisodeLogCallback
from rlkit.logging import JsonlLogger, rewind_metrics
from rlkit.persistence import write_header
from rlkit.persistence.formats import payload_files
from rlkit.persistence.replay import save_replay
from rlkit.prefrl import PreferenceRL
from rlkit.prefrl import loop as prefrl_loop
from rlkit.prefrl import resume as prefrl_resume
from rlkit.reward import save_reward_model
from rlkit.runners.prefrl import build_preference_rl
from tests.tiny_runs import small_config

ROOT = Path(__file__).resolve().parent.parent


def rows(run_dir: Path) -> list[dict]:
    """metrics.jsonl's rows without their wall time."""
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [{k: v for k, v in json.loads(line).items() if k != "wall_time"} for line in lines]


def run(config, run_dir: Path) -> PreferenceRL:
    logger = JsonlLogger(run_dir)
    try:
        loop = PreferenceRL.from_config(config, logger, run_dir=run_dir)
        loop.learn()
    finally:
        logger.close()
    return loop


def test_a_ppo_run_takes_exactly_its_budget_of_env_steps(tmp_path):
    config = small_config("ppo")  # 600 steps; PPO's rollouts are 64 x 2 = 128 steps
    loop = run(config, tmp_path)
    assert loop.agent.num_timesteps == 600  # was 640: the rollout under way was run to its end
    steps = [r.timestep for r in loop.result.rounds]  # every 200 steps, the last at the budget
    assert steps[-1] == 600 and set(np.diff(steps)) == {200} and len(steps) >= 3
    with pytest.raises(ConfigError, match=r"agent.total_timesteps=601 .*env.n_envs=2"):
        PreferenceRL.from_config(small_config("ppo", **{"agent.total_timesteps": "601"}))


def test_killed_at_a_seeded_random_step_and_resumed_equals_an_unbroken_run(tmp_path, monkeypatch):
    config = small_config("ppo", **{"trainer.max_epochs": "1"})
    unbroken = run(config, tmp_path / "unbroken")
    expected = rows(tmp_path / "unbroken")

    kill_at = 2 * int(np.random.default_rng(16).integers(201, 300))  # mid-rollout, after round 400
    assert kill_at % 128 and 400 < kill_at < 600

    class KilledAt(EpisodeLogCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps == kill_at:
                raise KeyboardInterrupt
            return super()._on_step()

    killed_dir = tmp_path / "killed"
    monkeypatch.setattr(prefrl_loop, "EpisodeLogCallback", KilledAt)
    with pytest.raises(KeyboardInterrupt):
        run(config, killed_dir)
    before = [row for row in expected if row["step"] <= 400]  # 400: logged after its resume point
    assert [row["step"] for row in rows(killed_dir)] == [row["step"] for row in before]
    assert before[-1]["step"] == 400 and len(before) >= 2
    monkeypatch.setattr(prefrl_loop, "EpisodeLogCallback", EpisodeLogCallback)

    resumed = run(config, killed_dir)
    assert resumed.resume_point is not None and resumed.resume_point.timestep == 400
    assert resumed.agent.num_timesteps == unbroken.agent.num_timesteps == 600
    assert [r.timestep for r in resumed.result.rounds] == [r.timestep for r in unbroken.result.rounds]
    assert [r.n_labels for r in resumed.result.rounds] == [r.n_labels for r in unbroken.result.rounds]
    assert len(resumed.dataset) == len(unbroken.dataset) >= 40 + 2 * 20
    assert rows(killed_dir) == expected  # value for value (the round at 400 was logged twice before)


def test_rewinding_metrics_drops_rows_after_the_point_and_a_torn_line(tmp_path):
    lines = [json.dumps({"step": s, "x": 1.0}) + "\n" for s in (0, 10, 10, 20, 30)]
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(lines) + '{"step": 4')
    logger = JsonlLogger(tmp_path)  # open while the file is cut: it appends after the cut
    assert rewind_metrics(tmp_path, after_step=10) == 3
    assert path.read_text() == "".join(lines[:3])
    logger.log({"x": 2.0}, step=20)
    logger.close()
    assert [row["step"] for row in rows(tmp_path)] == [0, 10, 10, 20]
    size = len("".join(lines[:2]))
    assert rewind_metrics(tmp_path, size=size) == 2
    assert path.read_text() == "".join(lines[:2])
    assert rewind_metrics(tmp_path, size=10**6) == 0


def test_a_bad_rng_state_in_the_resume_point_is_refused_naming_its_file(tmp_path, monkeypatch):
    config = small_config("ppo")

    def killed(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(prefrl_loop, "evaluate_reward", killed)  # in the first round, after its save
    loop = PreferenceRL.from_config(config, run_dir=tmp_path)
    with pytest.raises(KeyboardInterrupt):
        loop.learn()
    point = prefrl_resume.load(loop.resume_dir, config.model_dump(mode="json"))
    point.state["numpy_rng"] = {"bit_generator": "PCG64", "state": {"state": "x"}}
    with pytest.raises(FileFormatError, match=r"state.json: not a PCG64 state"):
        loop._restore(point)


@pytest.mark.slow
def test_rlkit_pref_rl_killed_with_sigkill_mid_rollout_resumes_as_an_unbroken_run(tmp_path):
    overrides = ["env.id=Pendulum-v1", "env.n_envs=2", "agent.algo=ppo",
                 "agent.kwargs={n_steps: 64, batch_size: 64, n_epochs: 1}", "agent.total_timesteps=1000",
                 "agent.eval_episodes=1", "query.every_steps=200", "query.initial_pairs=20",
                 "query.pairs_per_round=10", "query.segment_length=10", "model.hidden=[16]",
                 "trainer.max_epochs=1"]
    env = os.environ | {"OMP_NUM_THREADS": "1", "WANDB_MODE": "offline"}

    def command(run_dir: Path) -> list[str]:
        return [sys.executable, "-m", "rlkit.cli", "pref-rl", "--run-dir", str(run_dir),
                "--logger", "jsonl", *overrides]

    unbroken = subprocess.run(command(tmp_path / "unbroken"), cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=300)
    assert unbroken.returncode == 0, unbroken.stderr

    run_dir = tmp_path / "killed"
    process = subprocess.Popen(command(run_dir), cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    state = run_dir / "resume" / "state.json"
    deadline = time.monotonic() + 240
    while not (state.is_file() and json.loads(state.read_text())["timestep"] >= 400):
        assert process.poll() is None, process.stderr.read().decode()
        assert time.monotonic() < deadline, "the round at step 400 never started"
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)  # in the rounds' training, at whatever step it is
    process.wait()
    killed_at = json.loads(state.read_text())["timestep"]

    again = subprocess.run(command(run_dir), cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"at step {killed_at}" in again.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    expected = json.loads((tmp_path / "unbroken" / "summary.json").read_text())
    # rounds at 200 (after the random steps), 400, ..., 1000
    assert summary["labels"] == expected["labels"] == 20 + 4 * 10
    assert [r["timestep"] for r in summary["rounds"]] == [r["timestep"] for r in expected["rounds"]]
    assert summary["rounds"][-1]["timestep"] == 1000  # the budget, not the end of a rollout (1024)
    assert exact_rows(run_dir) == exact_rows(tmp_path / "unbroken")  # bit-identical, SB3's rows too
    assert summary == expected  # the final evaluation's return included


# -- append-only resume points (issue 14, round writes) ---------------------------------------

def sac_loop(buffer_size: int, run_dir: Path | None = None) -> PreferenceRL:
    """A SAC loop whose store and buffer ``grow`` fills directly (no training: the writes are
    measured, not the agent)."""
    config = small_config("sac", **{"agent.hyperparams": "sb3", "env.n_envs": "1", "agent.kwargs": (
        f"{{learning_starts: 0, buffer_size: {buffer_size}, policy_kwargs: {{net_arch: [16]}}}}")})
    return PreferenceRL.from_config(config, run_dir=run_dir)


def grow(loop: PreferenceRL, steps: int, rng: np.random.Generator, relabel: bool = False) -> None:
    """``steps`` more env steps of Pendulum-sized experience: 200-step trajectories in the store,
    rows in the replay buffer; ``relabel`` rewrites every reward, as a refit does."""
    for _ in range(steps // 200):
        loop.store.append(Trajectory(obs=rng.normal(size=(201, 3)).astype(np.float32),
                                     acts=rng.uniform(-2, 2, size=(200, 1)).astype(np.float32),
                                     rews=rng.normal(size=200).astype(np.float32)))
    buffer, start = loop.agent.replay_buffer, loop.agent.replay_buffer.pos
    for name in ("observations", "next_observations", "actions", "rewards"):
        array = getattr(buffer, name)
        array[start:start + steps] = rng.normal(size=array[start:start + steps].shape)
    buffer.pos += steps
    loop.agent.num_timesteps += steps
    if relabel:
        buffer.rewards[:buffer.pos] = rng.normal(size=buffer.rewards[:buffer.pos].shape)


def files(folder: Path) -> dict[Path, tuple[int, int, int]]:
    return {p: (p.stat().st_ino, p.stat().st_mtime_ns, p.stat().st_size) for p in folder.rglob("*")
            if p.is_file()}


def save_and_measure(loop: PreferenceRL, folder: Path) -> tuple[int, int]:
    """Bytes a round's save wrote (files new or changed on disk) and the point's size after it."""
    before = files(folder) if folder.exists() else {}
    reported = prefrl_resume.save(loop, folder, pending_pairs=10)
    after = files(folder)
    written = sum(stat[2] for path, stat in after.items() if before.get(path) != stat)
    assert reported == written  # what save says it wrote is what changed on disk
    return written, sum(stat[2] for stat in after.values())


@pytest.mark.parametrize("relabel", [False, True])
def test_a_rounds_write_is_the_new_data_not_the_whole_point(tmp_path, relabel):
    loop, rng = sac_loop(400_000), np.random.default_rng(0)
    folder = tmp_path / "resume"
    buffer = loop.agent.replay_buffer
    row_chunk = 16_384 * 36  # positions per chunk file x (obs, next obs, act, done, timeout) bytes
    measured = {}
    for size in (20_000, 300_000):
        grow(loop, size - loop.agent.num_timesteps, rng, relabel)
        save_and_measure(loop, folder)
        grow(loop, 2_000, rng, relabel)  # one round's experience
        measured[size] = save_and_measure(loop, folder)
    (small, _), (big, total) = measured[20_000], measured[300_000]
    assert total > 15e6 and big < total / 5  # the old point rewrote all of it, every round
    # as the run grows 15-fold, a round writes as much as before (give or take one chunk of rows
    # where its new rows straddle two), and with a refit also the rewards it changed (4 bytes a row)
    rewards_growth = 4 * (buffer.pos - 22_000) if relabel else 0
    assert big <= small + row_chunk + rewards_growth + 10_000
    point = prefrl_resume.load(folder, loop.config.model_dump(mode="json"))
    fresh = sac_loop(400_000)
    point.restore_agent(fresh.agent)
    for name in ("observations", "next_observations", "actions", "rewards", "dones", "timeouts"):
        np.testing.assert_array_equal(getattr(fresh.agent.replay_buffer, name), getattr(buffer, name))
    np.testing.assert_array_equal(point.dataset.store.arrays()["obs"], loop.store.arrays()["obs"])
    named = {name for name in point.files if not name.startswith(point.state["round"])} | {"state.json"}
    on_disk = {p.relative_to(folder).as_posix() for p in files(folder)}
    assert {p for p in on_disk if not p.startswith(point.state["round"])} == named  # no leftovers


def test_a_save_killed_before_its_commit_leaves_the_previous_point(tmp_path, monkeypatch):
    loop, rng = sac_loop(50_000), np.random.default_rng(1)
    folder = tmp_path / "resume"
    grow(loop, 10_000, rng)
    prefrl_resume.save(loop, folder, pending_pairs=10)
    config_json = loop.config.model_dump(mode="json")
    grow(loop, 4_000, rng, relabel=True)

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(prefrl_resume, "commit", killed)  # every new file is written by then
    with pytest.raises(KeyboardInterrupt):
        prefrl_resume.save(loop, folder, pending_pairs=10)
    monkeypatch.undo()
    point = prefrl_resume.load(folder, config_json)  # the first point, whole
    assert point.timestep == 10_000 and point.dataset.store.n_steps == 10_000
    fresh = sac_loop(50_000)
    point.restore_agent(fresh.agent)
    assert fresh.agent.replay_buffer.pos == 10_000
    assert not fresh.agent.replay_buffer.rewards[10_000:].any()
    prefrl_resume.save(loop, folder, pending_pairs=10)  # the next save clears the killed one's files
    point = prefrl_resume.load(folder, config_json)
    assert point.timestep == 14_000 and point.dataset.store.n_steps == 14_000
    on_disk = {p.relative_to(folder).as_posix() for p in files(folder)}
    assert {p for p in on_disk if not p.startswith(point.state["round"])} == (
        {name for name in point.files if not name.startswith(point.state["round"])} | {"state.json"})


def test_a_point_written_whole_by_a_pre_release_rlkit_is_refused_by_name(tmp_path):
    """Format versions 1 and 2 wrote a point whole (``tensors.pt``, ``replay.npz``,
    ``preferences.*``, ``reward/`` in the folder), version 3 without its command: each refused
    naming the version, and a header without its command or config by the field missing."""
    loop, rng = sac_loop(20_000), np.random.default_rng(2)
    grow(loop, 4_000, rng)
    folder = tmp_path / "resume"
    folder.mkdir()
    prefrl_resume._write_tensors(loop, folder)
    save_replay(loop.agent.replay_buffer, folder / "replay.npz")
    loop.dataset.save(folder / "preferences")
    save_reward_model(loop.model, folder / "reward", norm=loop.reward_norm)
    write_header(folder / "state.json", prefrl_resume.KIND, prefrl_resume._state(loop, 10),
                 covers=payload_files(folder))
    config_json = loop.config.model_dump(mode="json")
    with pytest.raises(FileFormatError, match=r"state.json: missing field 'command'"):
        prefrl_resume.load(folder, config_json)
    write_header(folder / "state.json", prefrl_resume.KIND,
                 prefrl_resume._state(loop, 10) | {"command": "pref-rl"}, covers=payload_files(folder))
    with pytest.raises(FileFormatError, match=r"state.json: missing field 'config'"):
        prefrl_resume.load(folder, config_json)
    header = json.loads((folder / "state.json").read_text())
    for version in (2, 3):
        (folder / "state.json").write_text(json.dumps(header | {"format": f"rlkit.prefrl.resume/{version}"}))
        refused = rf"state.json: format is 'rlkit.prefrl.resume/{version}', an old"
        with pytest.raises(FileFormatError, match=refused):
            prefrl_resume.load(folder, config_json)


def test_a_damaged_replay_chunk_is_refused_naming_it(tmp_path):
    loop, rng = sac_loop(20_000), np.random.default_rng(3)
    grow(loop, 2_000, rng)
    folder = tmp_path / "resume"
    prefrl_resume.save(loop, folder, pending_pairs=10)
    chunk = next((folder / "replay").glob("rewards-*.npz"))
    raw = bytearray(chunk.read_bytes())
    raw[len(raw) // 2] ^= 1
    chunk.write_bytes(bytes(raw))
    with pytest.raises(FileFormatError, match=rf"{chunk.name}: damaged"):
        prefrl_resume.load(folder, loop.config.model_dump(mode="json"))


# -- bit-identical resumes (issue 36) ---------------------------------------------------------

CLOCK = ("wall_time", "time/fps", "time/time_elapsed", "time/iterations")  # see exact_rows


def exact_rows(run_dir: Path) -> list[dict]:
    """metrics.jsonl's rows without what a resumed run cannot repeat: wall-clock times, and PPO's
    ``time/iterations``, which SB3 counts in a local variable of ``learn`` (from 1 in each call)."""
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [{k: v for k, v in json.loads(line).items() if k not in CLOCK} for line in lines]


class KilledInRound:
    """Stands in for ``evaluate_reward``: kills the run in round ``kill_at`` (after its point)."""

    def __init__(self, kill_at: int, real=prefrl_loop.evaluate_reward) -> None:
        self.kill_at, self.real, self.calls = kill_at, real, 0

    def __call__(self, *args):
        self.calls += 1
        if self.calls == self.kill_at:
            raise KeyboardInterrupt
        return self.real(*args)


def cli_run(config, run_dir: Path) -> PreferenceRL:
    """As ``rlkit pref-rl`` runs it: SB3's own rows join metrics.jsonl."""
    logger = JsonlLogger(run_dir)
    try:
        loop = build_preference_rl(config, logger, run_dir=run_dir)
        loop.learn()
    finally:
        logger.close()
    return loop


@pytest.mark.parametrize("algo,settings", [
    ("ppo", {"agent.hyperparams": "sb3"}),
    ("ppo", {}),  # rl-zoo3's Pendulum PPO: gSDE, whose noise is drawn at each rollout's start
    ("sac", {"agent.hyperparams": "sb3",
             "agent.kwargs": "{learning_starts: 100, batch_size: 64, policy_kwargs: {net_arch: [32]}}"}),
])
def test_a_run_killed_mid_episode_and_mid_rollout_resumes_bit_identically(tmp_path, monkeypatch, algo,
                                                                          settings):
    config = small_config(algo, **{"agent.total_timesteps": "1000", "trainer.max_epochs": "1", **settings})
    monkeypatch.setattr(prefrl_loop, "evaluate_reward", KilledInRound(0))
    unbroken = cli_run(config, tmp_path / "unbroken")
    monkeypatch.setattr(prefrl_loop, "evaluate_reward", KilledInRound(2))  # the round at step 400:
    with pytest.raises(KeyboardInterrupt):  # 100 steps into each env's episode, PPO mid-rollout
        cli_run(config, tmp_path / "killed")
    monkeypatch.setattr(prefrl_loop, "evaluate_reward", KilledInRound(0))
    resumed = cli_run(config, tmp_path / "killed")
    assert resumed.resume_point is not None and resumed.resume_point.timestep == 400
    assert resumed.resume_point.rollout_start is not None

    assert exact_rows(tmp_path / "killed") == exact_rows(tmp_path / "unbroken")  # SB3's rows too
    assert any(key.startswith("train/") for row in exact_rows(tmp_path / "killed") for key in row)
    assert [vars(r) for r in resumed.result.rounds] == [vars(r) for r in unbroken.result.rounds]
    np.testing.assert_array_equal(resumed.dataset.labels, unbroken.dataset.labels)
    for name, value in unbroken.agent.get_parameters().items():  # networks and optimisers
        for key, tensor in value.items():
            if isinstance(tensor, torch.Tensor):
                assert torch.equal(resumed.agent.get_parameters()[name][key], tensor), (name, key)
    for key, value in unbroken.store.arrays().items():
        np.testing.assert_array_equal(resumed.store.arrays()[key], value, err_msg=key)
    assert resumed.result.episodes.true_returns == unbroken.result.episodes.true_returns
    assert resumed.agent.num_timesteps == unbroken.agent.num_timesteps == 1000


def test_a_damaged_rollout_start_is_refused_naming_its_file(tmp_path, monkeypatch):
    config = small_config("ppo", **{"agent.hyperparams": "sb3"})
    monkeypatch.setattr(prefrl_loop, "evaluate_reward", KilledInRound(2))  # the round at step 400
    with pytest.raises(KeyboardInterrupt):
        PreferenceRL.from_config(config, run_dir=tmp_path).learn()
    path = tmp_path / prefrl_resume.RESUME_DIR / prefrl_resume.STATE_FILE
    state = json.loads(path.read_text())
    assert state["rollout_start"]["timestep"] < 400
    bad_rngs = {"rngs": {"python": [], "numpy_global": []}}
    for damage, refused in (({"timestep": "x"}, r"state.json: field 'rollout_start' is not the start"),
                            (bad_rngs, r"state.json: not a numpy RandomState state")):
        edited = state | {"rollout_start": state["rollout_start"] | damage}
        write_header(path, prefrl_resume.KIND, {k: v for k, v in edited.items() if k != "format"},
                     covers=[path.parent / name for name in state["sha256"]])
        with pytest.raises(FileFormatError, match=refused):
            PreferenceRL.from_config(config, run_dir=tmp_path)
