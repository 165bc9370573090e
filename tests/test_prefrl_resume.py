"""A pref-rl run killed mid-training resumes from the start of its last query round: the same
pairs are asked again, with the agent, reward model, data and RNGs as they were."""

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

from rlkit.errors import ConfigError
from rlkit.persistence import write_header
from rlkit.prefrl import PreferenceRL
from rlkit.prefrl import loop as prefrl_loop
from rlkit.prefrl import resume as prefrl_resume
from tests.tiny_runs import KilledInRound, small_config

ROOT = Path(__file__).resolve().parent.parent


def vector(module: torch.nn.Module) -> torch.Tensor:
    return torch.nn.utils.parameters_to_vector(module.parameters()).detach().clone()


@pytest.mark.parametrize("algo", ["ppo", "sac"])
def test_a_killed_run_resumes_at_the_round_it_was_killed_in(tmp_path, monkeypatch, algo):
    config = small_config(algo)
    killed = KilledInRound(kill_at=3)  # the initial round, one at step 200, killed at step 400
    monkeypatch.setattr(prefrl_loop, "evaluate_reward", killed)
    first = PreferenceRL.from_config(config, run_dir=tmp_path)
    with pytest.raises(KeyboardInterrupt):
        first.learn()
    # the resume point holds the state at the start of round 3: nothing trained since
    saved_policy, saved_reward = vector(first.agent.policy), vector(first.model)
    saved_labels = first.dataset.labels.copy()
    if algo == "sac":
        names = ("observations", "next_observations", "actions", "rewards", "dones", "timeouts")
        saved_replay = {name: getattr(first.agent.replay_buffer, name).copy() for name in names}

    monkeypatch.setattr(prefrl_loop, "evaluate_reward", again := KilledInRound(kill_at=0))
    resumed = PreferenceRL.from_config(config, run_dir=tmp_path)
    assert resumed.resume_point is not None and resumed.resume_point.timestep == first.agent.num_timesteps
    start = resumed.resume_point.rollout_start  # the round's rollout is stepped again from its start
    assert start is not None and resumed.agent.num_timesteps == start["timestep"]
    rollout = 64 * 2 if algo == "ppo" else 2  # PPO's n_steps x 2 envs; SAC trains every step
    assert first.agent.num_timesteps - rollout <= start["timestep"] < first.agent.num_timesteps
    assert torch.equal(vector(resumed.agent.policy), saved_policy)
    assert torch.equal(vector(resumed.model), saved_reward)
    np.testing.assert_array_equal(resumed.dataset.labels, saved_labels)
    # the trajectories recorded before the round's rollout began, from the point's chunks
    saved_store = first.store.arrays(0, len(resumed.store))
    assert 0 < len(resumed.store) == start["store_trajectories"] <= len(first.store)
    for key, value in resumed.store.arrays().items():
        np.testing.assert_array_equal(value, saved_store[key], err_msg=key)
    assert list(resumed.dataset.sources) == list(first.dataset.sources)
    if algo == "sac":  # every row and reward, from the chunks the rounds wrote
        buffer = resumed.agent.replay_buffer
        assert (buffer.pos, buffer.full) == (first.agent.replay_buffer.pos, first.agent.replay_buffer.full)
        for name, value in saved_replay.items():
            np.testing.assert_array_equal(getattr(buffer, name), value, err_msg=name)
    result = resumed.learn()

    pairs, labels = killed.rounds[-1]
    np.testing.assert_array_equal(again.rounds[0][0], pairs)  # the same pairs asked again,
    np.testing.assert_array_equal(again.rounds[0][1], labels)  # and the same labels given
    monkeypatch.setattr(prefrl_loop, "evaluate_reward", KilledInRound(kill_at=0))
    unbroken = PreferenceRL.from_config(config).learn()  # as an unbroken run: its rounds and labels
    assert [r.timestep for r in result.rounds] == [r.timestep for r in unbroken.rounds]
    assert len(result.rounds) >= 3 and len(result.dataset) == len(unbroken.dataset)
    assert resumed.agent.num_timesteps >= config.agent.total_timesteps


def test_a_resume_with_other_settings_is_refused_naming_them(tmp_path, monkeypatch):
    monkeypatch.setattr(prefrl_loop, "evaluate_reward", KilledInRound(kill_at=2))
    with pytest.raises(KeyboardInterrupt):
        PreferenceRL.from_config(small_config("ppo"), run_dir=tmp_path).learn()
    named = r"other settings for \['query.pairs_per_round'\] \(query.pairs_per_round: saved \d+, now 10\)"
    with pytest.raises(ConfigError, match=named):
        PreferenceRL.from_config(small_config("ppo", **{"query.pairs_per_round": "10"}), run_dir=tmp_path)
    patient = {"agent.total_timesteps": "800", "teacher.human.timeout_s": "7200"}
    longer = PreferenceRL.from_config(small_config("ppo", **patient), run_dir=tmp_path)
    assert longer.resume_point is not None  # more steps, or more patience with people, are fine


def test_a_point_lacking_a_setting_is_refused_naming_it_and_devices_may_change(tmp_path, monkeypatch):
    """A point whose config lacks a setting (written by an rlkit that had not that setting yet) is
    refused naming it; where the point was written, and where it resumes, devices may differ."""
    monkeypatch.setattr(prefrl_loop, "evaluate_reward", KilledInRound(kill_at=1))
    sb3 = small_config("ppo", **{"agent.hyperparams": "sb3"})
    with pytest.raises(KeyboardInterrupt):
        PreferenceRL.from_config(sb3, run_dir=tmp_path).learn()
    path = tmp_path / prefrl_resume.RESUME_DIR / prefrl_resume.STATE_FILE
    state = json.loads(path.read_text())
    for section in ("agent", "trainer"):
        state["config"][section]["device"] = "cuda:3"
    rewrite = {k: v for k, v in state.items() if k != "format"}
    write_header(path, prefrl_resume.KIND, rewrite, covers=[path.parent / name for name in state["sha256"]])
    folder = path.parent
    assert prefrl_resume.check(folder, sb3.model_dump(mode="json"))
    assert prefrl_resume.check(folder, small_config(
        "ppo", **{"agent.hyperparams": "sb3", "agent.device": "cpu"}).model_dump(mode="json"))
    assert prefrl_resume.load(folder, sb3.model_dump(mode="json")) is not None
    del rewrite["config"]["agent"]["hyperparams"]
    write_header(path, prefrl_resume.KIND, rewrite, covers=[path.parent / name for name in state["sha256"]])
    refused = r"other settings for \['agent.hyperparams'\] \(agent.hyperparams: saved absent, now \"sb3\"\)"
    with pytest.raises(ConfigError, match=refused):
        prefrl_resume.check(folder, sb3.model_dump(mode="json"))
    with pytest.raises(ConfigError, match=refused):
        prefrl_resume.load(folder, sb3.model_dump(mode="json"))


@pytest.mark.slow
def test_the_command_killed_with_sigkill_resumes_when_run_again(tmp_path):
    overrides = ["env.id=Pendulum-v1", "env.n_envs=2", "agent.algo=sac",
                 "agent.kwargs={learning_starts: 100, batch_size: 64, buffer_size: 5000}",
                 "agent.total_timesteps=1200", "agent.eval_episodes=1", "query.every_steps=200",
                 "query.initial_pairs=20", "query.pairs_per_round=10", "query.segment_length=10",
                 "model.hidden=[16]", "trainer.max_epochs=2"]
    command = [sys.executable, "-m", "rlkit.cli", "pref-rl", "--run-dir", str(tmp_path),
               "--logger", "jsonl", *overrides]
    env = os.environ | {"OMP_NUM_THREADS": "1"}
    run = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    state = tmp_path / "resume" / "state.json"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and run.poll() is None:
        if state.is_file() and json.loads(state.read_text())["timestep"] >= 400:
            break
        time.sleep(0.05)
    assert run.poll() is None, run.stderr.read().decode()
    run.send_signal(signal.SIGKILL)
    run.wait()
    killed_at = json.loads(state.read_text())["timestep"]

    again = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"at step {killed_at}" in again.stderr  # it said where it resumed
    summary = json.loads((tmp_path / "summary.json").read_text())
    # the first round after the 200 random steps (part of the budget), then one every 200 steps
    assert len(summary["rounds"]) == 1 + (1200 - 200) // 200 and summary["labels"] == 20 + 5 * 10
