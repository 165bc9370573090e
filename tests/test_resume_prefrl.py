"""A pref-rl run killed anywhere (mid-rollout included) and resumed ends where an uninterrupted run
does: the same env steps (its budget, exactly), query rounds, label counts and metric rows, none
twice (issue 16, item 8)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from rlkit.errors import ConfigError, FileFormatError
from rlkit.factories.agent import EpisodeLogCallback
from rlkit.logging import JsonlLogger, rewind_metrics
from rlkit.prefrl import PreferenceRL
from rlkit.prefrl import loop as prefrl_loop
from rlkit.prefrl import resume as prefrl_resume
from tests.test_prefrl import small_config

ROOT = Path(__file__).resolve().parent.parent


def rows(run_dir: Path) -> list[dict]:
    """metrics.jsonl's rows without their wall time."""
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [{k: v for k, v in json.loads(line).items() if k != "wall_time"} for line in lines]


def shape(metric_rows: list[dict]) -> list[tuple]:
    """What a resumed run must repeat exactly: each row's step and names, and the label counts (the
    accuracies of rounds after the kill differ: PPO's rollout cut by the kill is lost)."""
    return [(row["step"], sorted(row), row.get("prefrl/n_labels")) for row in metric_rows]


def run(config, run_dir: Path) -> PreferenceRL:
    logger = JsonlLogger(run_dir)
    try:
        loop = PreferenceRL(config, logger, run_dir=run_dir)
        loop.learn()
    finally:
        logger.close()
    return loop


def test_a_ppo_run_takes_exactly_its_budget_of_env_steps(tmp_path):
    config = small_config("ppo")  # 600 steps; PPO's rollouts are 64 x 2 = 128 steps
    loop = run(config, tmp_path)
    assert loop.agent.num_timesteps == 600  # was 640: the rollout under way was run to its end
    assert [r.timestep for r in loop.result.rounds] == [0, 200, 400, 600]
    with pytest.raises(ConfigError, match=r"agent.total_timesteps=601 .*env.n_envs=2"):
        PreferenceRL(small_config("ppo", **{"agent.total_timesteps": "601"}))


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
    assert [row["step"] for row in rows(killed_dir)] == [0, 200, 400]  # 400: after its resume point
    monkeypatch.setattr(prefrl_loop, "EpisodeLogCallback", EpisodeLogCallback)

    resumed = run(config, killed_dir)
    assert resumed.resume_point is not None and resumed.resume_point.timestep == 400
    assert resumed.agent.num_timesteps == unbroken.agent.num_timesteps == 600
    assert [r.timestep for r in resumed.result.rounds] == [r.timestep for r in unbroken.result.rounds]
    assert [r.n_labels for r in resumed.result.rounds] == [r.n_labels for r in unbroken.result.rounds]
    assert len(resumed.dataset) == len(unbroken.dataset) == 40 + 3 * 20
    got = rows(killed_dir)
    assert shape(got) == shape(expected)  # the round at 400 was logged twice before
    assert got[:3] == expected[:3]  # value for value, the round asked again (400) included


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
    loop = PreferenceRL(config, run_dir=tmp_path)
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
    assert summary["labels"] == expected["labels"] == 20 + 5 * 10
    assert [r["timestep"] for r in summary["rounds"]] == [r["timestep"] for r in expected["rounds"]]
    assert summary["rounds"][-1]["timestep"] == 1000  # the budget, not the end of a rollout (1024)
    assert shape(rows(run_dir)) == shape(rows(tmp_path / "unbroken"))  # no row twice
