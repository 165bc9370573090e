"""rlkit.factories.resumable: an SB3 run killed part way and started again ends where one never
stopped did, bit-identical mid-episode too where the env's state can be kept, else when its chunks
end on episode ends; damaged points are refused by name."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from stable_baselines3 import PPO, SAC
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback, CallbackList
from stable_baselines3.common.env_util import make_vec_env

from rlkit.errors import ConfigError, FileFormatError, InvalidDataError
from rlkit.factories.agent import EpisodeLog, EpisodeLogCallback
from rlkit.factories.resumable import ResumableTraining
from rlkit.persistence.arrays import load_npz

EPISODE = 50  # Pendulum cut to 50 steps: chunks of 100 end on episode ends
SAC_KWARGS = {"learning_starts": 100, "train_freq": 2, "batch_size": 16, "buffer_size": 400,
              "policy_kwargs": {"net_arch": [8, 8]}}
PPO_KWARGS = {"n_steps": 50, "batch_size": 25, "n_epochs": 2, "policy_kwargs": {"net_arch": [8, 8]}}


def pendulum() -> gym.Env:
    return gym.make("Pendulum-v1", max_episode_steps=EPISODE)


def rescaled_pendulum() -> gym.Env:
    """Pendulum under a wrapper ``rlkit.persistence.env_state`` does not know (so cannot keep)."""
    return gym.wrappers.RescaleAction(pendulum(), -1.0, 1.0)


def hopper() -> gym.Env:
    """Hopper ends its episodes early when it falls: points land mid-episode."""
    return gym.make("Hopper-v5")


def make_agent(algo: type[BaseAlgorithm] = SAC, env: Callable[[], gym.Env] = pendulum,
               **kwargs: object) -> BaseAlgorithm:
    venv = make_vec_env(env, n_envs=1, seed=3)
    defaults = SAC_KWARGS if algo is SAC else PPO_KWARGS
    return algo("MlpPolicy", venv, seed=3, device="cpu", verbose=0, **{**defaults, **kwargs})


class Killed(Exception):
    """Stands for the process dying part way through a chunk."""


class KillAt(BaseCallback):
    def __init__(self, step: int) -> None:
        super().__init__()
        self.step = step

    def _on_step(self) -> bool:
        if self.num_timesteps >= self.step:
            raise Killed
        return True


def run(directory: Path, total: int, chunk: int, algo: type[BaseAlgorithm] = SAC, kill_at: int | None = None,
        env: Callable[[], gym.Env] = pendulum, **kwargs: object
        ) -> tuple[BaseAlgorithm, EpisodeLog, ResumableTraining]:
    """One sitting: build, resume if there is a point, train (until ``kill_at``)."""
    agent = make_agent(algo, env, **kwargs)
    training = ResumableTraining(directory, total, chunk, settings=kwargs)
    resumed = training.resume(agent)
    log = EpisodeLog(**resumed.progress["log"]) if resumed else EpisodeLog()
    callbacks: list[BaseCallback] = [EpisodeLogCallback(log)]
    if kill_at is not None:
        callbacks.append(KillAt(kill_at))
    try:
        training.train(agent, CallbackList(callbacks), progress=lambda: {"log": asdict(log)})
    except Killed:
        pass
    return agent, log, training


def tensors(agent: BaseAlgorithm) -> dict[str, torch.Tensor]:
    """Every network weight, optimiser moment and SAC's entropy coefficient."""
    found = {f"policy.{k}": v for k, v in agent.policy.state_dict().items()}
    for name, params in agent.get_parameters().items():
        if name != "policy":
            for group, state in params["state"].items():
                found |= {f"{name}.{group}.{k}": v for k, v in state.items() if torch.is_tensor(v)}
    if hasattr(agent, "log_ent_coef"):
        found["log_ent_coef"] = agent.log_ent_coef.detach()
    return found


def assert_same(a: BaseAlgorithm, b: BaseAlgorithm) -> None:
    ta, tb = tensors(a), tensors(b)
    assert ta.keys() == tb.keys()
    for key in ta:
        assert torch.equal(ta[key], tb[key]), key


@pytest.fixture(scope="module")
def sac_run(tmp_path_factory) -> tuple[BaseAlgorithm, EpisodeLog]:
    """300 SAC steps in chunks of 100, never stopped."""
    agent, log, _ = run(tmp_path_factory.mktemp("whole"), 300, 100)
    return agent, log


def test_a_sac_run_killed_in_chunk_3_resumes_bit_identical_at_episode_ends(tmp_path, sac_run):
    whole, whole_log = sac_run
    run(tmp_path / "killed", 300, 100, kill_at=250)  # points at 100 and 200, killed at 250
    assert ResumableTraining(tmp_path / "killed", 300, 100).points() == [100, 200]
    resumed, resumed_log, _ = run(tmp_path / "killed", 300, 100)
    assert (resumed.num_timesteps, resumed._n_updates, resumed._episode_num) == (300, 100, 6)
    assert (whole.num_timesteps, whole._n_updates, whole._episode_num) == (300, 100, 6)
    assert_same(resumed, whole)
    assert resumed_log.timesteps == whole_log.timesteps == [50, 100, 150, 200, 250, 300]  # the callback's
    assert resumed_log.true_returns == whole_log.true_returns  # curve, its first 4 from the point
    plain = make_agent()
    plain.learn(300)  # chunking itself changes nothing: one learn() call trains the same agent
    assert_same(plain, whole)


def test_the_replay_buffer_and_counters_come_back_from_a_point(tmp_path):
    agent, _, training = run(tmp_path, 200, 100)
    fresh = make_agent()
    resumed = training.resume(fresh)
    assert resumed is not None and resumed.exact and resumed.timesteps == 200
    assert (fresh.num_timesteps, fresh._n_updates, fresh._episode_num) == (200, 50, 4)
    for name in ("observations", "next_observations", "actions", "rewards", "dones", "timeouts"):
        np.testing.assert_array_equal(getattr(fresh.replay_buffer, name), getattr(agent.replay_buffer, name))
    assert (fresh.replay_buffer.pos, fresh.replay_buffer.full) == (200, False)
    assert_same(fresh, agent)
    again = ResumableTraining(tmp_path, 200, 100)
    again.resume(fresh)
    again.train(fresh)  # at the end already: nothing to do
    assert fresh.num_timesteps == 200 and again.points() == [100, 200]


@pytest.mark.parametrize("algo", [SAC, PPO])
def test_a_run_killed_mid_episode_goes_on_with_that_episode_bit_identical(tmp_path, algo):
    kwargs = {"n_steps": 30, "batch_size": 15} if algo is PPO else {}  # PPO: rollouts of 30
    whole, whole_log, _ = run(tmp_path / "whole", 180, 60, algo, **kwargs)
    run(tmp_path / "killed", 180, 60, algo, kill_at=150, **kwargs)  # points at 60 and 120: mid-episode
    training = ResumableTraining(tmp_path / "killed", 180, 60, settings=kwargs)
    point = training.resume(make_agent(algo, **kwargs))
    assert point is not None and point.timesteps == 120 and point.exact
    resumed, resumed_log, _ = run(tmp_path / "killed", 180, 60, algo, **kwargs)
    assert (resumed.num_timesteps, resumed._n_updates) == (whole.num_timesteps, whole._n_updates)
    assert_same(resumed, whole)
    assert resumed_log.true_returns == whole_log.true_returns  # the episode cut at 120 ends at 150 as it did
    assert resumed_log.timesteps == whole_log.timesteps == [50, 100, 150]


def test_hopper_cut_mid_episode_resumes_bit_identical(tmp_path):
    whole, whole_log, _ = run(tmp_path / "whole", 450, 150, env=hopper)
    run(tmp_path / "killed", 450, 150, env=hopper, kill_at=400)
    episode = load_npz(tmp_path / "killed" / "point-000000000300" / "episode.npz")
    assert len(episode["env0/0:Monitor/rewards"]) > 0  # the point is part way through an episode
    assert "env0/4:HopperEnv/integration" in episode  # MuJoCo's integration state kept
    resumed, resumed_log, _ = run(tmp_path / "killed", 450, 150, env=hopper)
    assert len(whole_log.true_returns) >= 5  # early terminations: many episodes of uneven lengths
    assert_same(resumed, whole)
    assert resumed_log.true_returns == whole_log.true_returns
    assert resumed_log.timesteps == whole_log.timesteps


def test_an_env_layer_it_cannot_keep_means_a_new_episode_equal_in_steps_and_updates_only(tmp_path):
    whole, _, _ = run(tmp_path / "whole", 180, 60, env=rescaled_pendulum)
    run(tmp_path / "killed", 180, 60, env=rescaled_pendulum, kill_at=150)
    resumed, _, training = run(tmp_path / "killed", 180, 60, env=rescaled_pendulum)
    assert (resumed.num_timesteps, resumed._n_updates) == (whole.num_timesteps, whole._n_updates) == (180, 40)
    point = training.resume(make_agent(env=rescaled_pendulum))
    assert point is not None and not point.exact  # 180 is not an episode end: the numbers differ
    assert not (tmp_path / "killed" / "point-000000000180" / "episode.npz").exists()
    weight = "policy.actor.mu.weight"
    assert not torch.equal(tensors(resumed)[weight], tensors(whole)[weight])


def test_a_ppo_run_resumes_bit_identical_without_a_buffer(tmp_path):
    whole, _, _ = run(tmp_path / "whole", 200, 100, PPO)
    run(tmp_path / "killed", 200, 100, PPO, kill_at=150)
    assert not list((tmp_path / "killed").glob("replay"))  # on-policy: nothing but the agent and RNGs
    resumed, _, _ = run(tmp_path / "killed", 200, 100, PPO)
    assert (resumed.num_timesteps, resumed._n_updates) == (whole.num_timesteps, whole._n_updates) == (200, 8)
    assert_same(resumed, whole)


def test_a_total_between_rollouts_ends_where_one_learn_call_does(tmp_path):
    agent, _, _ = run(tmp_path, 130, 60, PPO)  # PPO learns 50 steps a rollout: 130 -> 150
    plain = make_agent(PPO)
    plain.learn(130)
    assert agent.num_timesteps == plain.num_timesteps == 150


SIGKILLED = textwrap.dedent("""
    import os, signal, sys
    import torch
    torch.set_num_threads(1)
    sys.path.insert(0, {tests!r})
    from test_resumable_training import KillAt, ResumableTraining, make_agent

    class SigKill(KillAt):
        def _on_step(self):
            if self.num_timesteps >= self.step:
                os.kill(os.getpid(), signal.SIGKILL)
            return True

    agent = make_agent()
    ResumableTraining({directory!r}, 300, 100).train(agent, SigKill(250))
""")


def test_a_sigkilled_process_resumes_where_it_was_killed(tmp_path, sac_run):
    script = SIGKILLED.format(tests=str(Path(__file__).parent), directory=str(tmp_path / "run"))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert ResumableTraining(tmp_path / "run", 300, 100).points() == [100, 200]
    resumed = make_agent()
    training = ResumableTraining(tmp_path / "run", 300, 100)
    assert training.resume(resumed).timesteps == 200
    training.train(resumed)
    assert (resumed.num_timesteps, resumed._n_updates) == (300, 100)
    assert_same(resumed, sac_run[0])


def flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.fixture
def two_points(tmp_path) -> Path:
    """Points at 100 and 200 of a run with no updates yet (quick)."""
    agent = make_agent(learning_starts=1000)
    ResumableTraining(tmp_path, 200, 100).train(agent)
    return tmp_path


def test_a_damaged_point_falls_back_to_the_one_before_and_is_named(two_points):
    names = ["point-000000000200.json", "point-000000000200/agent.zip", "point-000000000200/agent.json",
             "point-000000000200/tensors.pt", "point-000000000200/episode.npz",
             "replay/rows-c00000-g0000200.npz"]
    for name in names:
        path = two_points / name
        good = path.read_bytes()
        flip(path)
        resumed = ResumableTraining(two_points, 200, 100).resume(make_agent(learning_starts=1000))
        assert resumed is not None and resumed.timesteps == 100, name
        assert len(resumed.skipped) == 1 and str(path) in resumed.skipped[0], (name, resumed.skipped)
        path.write_bytes(good)
    assert ResumableTraining(two_points, 200, 100).resume(make_agent(learning_starts=1000)).timesteps == 200


def test_no_whole_point_is_an_error_naming_each_and_a_killed_write_is_ignored(two_points):
    (two_points / "point-000000000200.json").unlink()  # killed before its header: not a point
    assert ResumableTraining(two_points, 200, 100).resume(make_agent(learning_starts=1000)).timesteps == 100
    flip(two_points / "point-000000000100" / "tensors.pt")
    with pytest.raises(FileFormatError, match="no whole resume point") as caught:
        ResumableTraining(two_points, 200, 100).resume(make_agent(learning_starts=1000))
    assert str(two_points / "point-000000000100" / "tensors.pt") in str(caught.value)


def test_a_point_of_other_settings_is_refused_naming_them(two_points):
    with pytest.raises(ConfigError, match=r"other settings for \['lr'\] \(lr: saved absent, now 0.1\)"):
        ResumableTraining(two_points, 200, 100, settings={"lr": 0.1}).resume(make_agent(learning_starts=1000))
    with pytest.raises(InvalidDataError, match="algo='SAC'"):
        ResumableTraining(two_points, 200, 100).resume(make_agent(PPO))
    with pytest.raises(InvalidDataError, match="do not fit this agent"):
        ResumableTraining(two_points, 200, 100).resume(
            make_agent(learning_starts=1000, policy_kwargs={"net_arch": [4]}))
    with pytest.raises(InvalidDataError, match="settings must be JSON data"):
        ResumableTraining(two_points, 200, 100, settings={"reward": object()})


def test_a_later_save_keeps_two_points_and_only_the_chunks_they_name(two_points):
    agent = make_agent(learning_starts=1000)
    training = ResumableTraining(two_points, 400, 100)
    training.resume(agent)
    (two_points / "point-000000000900").mkdir()  # a killed write's leftovers
    training.train(agent)
    assert training.points() == [300, 400]
    assert sorted(p.name for p in two_points.iterdir()) == [
        "point-000000000300", "point-000000000300.json", "point-000000000400", "point-000000000400.json",
        "replay"]
    assert sorted(p.name for p in (two_points / "replay").iterdir()) == [
        "rewards-c00000-g0000300.npz", "rewards-c00000-g0000400.npz",
        "rows-c00000-g0000300.npz", "rows-c00000-g0000400.npz"]
