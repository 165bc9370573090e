"""Off-policy agents on a learned reward labelled in batches (issue 14): SAC trains on exactly the
rewards the per-step wrapper gives, while the reward model runs far fewer times than env steps."""

from types import SimpleNamespace
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from stable_baselines3 import SAC
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecNormalize

from rlkit.errors import ConfigError, InvalidDataError
from rlkit.reward import RunningNorm, build_reward_net
from rlkit.reward.normalize import NormalizedReward
from rlkit.reward.numpy_rewards import TorchRewardFn
from rlkit.wrappers import (
    LazyRewardReplayBuffer,
    RewardVecEnvWrapper,
    check_reward_env,
    per_sample_reward,
    relabel_replay_buffer,
)

Array = np.ndarray
SMALL_SAC: dict[str, Any] = {"learning_starts": 60, "batch_size": 32, "seed": 0, "device": "cpu",
                             "policy_kwargs": {"net_arch": [32, 32]}}


class Steps:
    """A StepObserver keeping the reward wrapper's inputs and the true rewards of every step."""

    def __init__(self) -> None:
        self.inputs: list[tuple[Array, Array, Array, Array]] = []
        self.true_rews: list[Array] = []

    def __call__(self, obs: Array, acts: Array, next_obs: Array, true_rews: Array, dones: Array,
                 terminal: Array, infos: list[dict[str, Any]]) -> None:
        self.inputs.append((obs.copy(), acts.copy(), next_obs.copy(), terminal.copy()))
        self.true_rews.append(np.asarray(true_rews, dtype=np.float64).copy())


class CountingReward:
    """A learned reward (small net) that counts its calls and the transitions it labelled."""

    def __init__(self, venv: VecEnv) -> None:
        net = build_reward_net(venv.observation_space, venv.action_space, hidden=(16, 16), seed=1)
        self.fn = TorchRewardFn(net)
        self.calls = 0
        self.rows = 0

    def __call__(self, obs: Array, acts: Array, next_obs: Array, dones: Array) -> Array:
        self.calls += 1
        self.rows += len(obs)
        return self.fn(obs, acts, next_obs, dones)


class SampleLog(LazyRewardReplayBuffer):
    """Keeps the rewards of every sampled row as the algorithm read them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sampled: list[tuple[Array, Array]] = []

    def _get_samples(self, batch_inds: Array, env: VecNormalize | None = None) -> Any:
        samples = super()._get_samples(batch_inds, env)
        self.sampled.append((batch_inds.copy(), self.rewards[batch_inds].copy()))
        return samples


def per_step_reference(reward: CountingReward, steps: Steps) -> Array:
    """The rewards the per-step wrapper gives: a fresh normaliser applied one env step at a time."""
    normalised = NormalizedReward(reward.fn, RunningNorm())
    return np.stack([normalised(*step) for step in steps.inputs])


def train(lazy: bool, vec_steps: int = 150) -> tuple[SAC, CountingReward, Steps]:
    torch.manual_seed(0)
    venv = make_vec_env("Pendulum-v1", n_envs=2, seed=3, env_kwargs={"max_episode_steps": 50})
    reward, steps = CountingReward(venv), Steps()
    reward_fn = NormalizedReward(reward, RunningNorm())
    kwargs = dict(SMALL_SAC)
    if lazy:
        wrapped, buffer_kwargs = per_sample_reward(venv, reward_fn, observers=[steps])
        kwargs.update(buffer_kwargs, replay_buffer_class=SampleLog)
    else:
        wrapped = RewardVecEnvWrapper(venv, reward_fn, observers=[steps])
    agent = SAC("MlpPolicy", wrapped, **kwargs)
    agent.learn(vec_steps * 2)
    return agent, reward, steps


def test_sac_trains_on_the_per_step_rewards_labelled_in_batches() -> None:
    lazy, reward, steps = train(lazy=True)
    per_step, _, _ = train(lazy=False)
    buffer = lazy.replay_buffer
    assert isinstance(buffer, SampleLog)
    expected = per_step_reference(reward, steps)  # one row per vectorised step, in buffer order
    # every batch SAC sampled read the per-step rewards, never a placeholder
    assert buffer.sampled
    for rows, rewards in buffer.sampled:
        np.testing.assert_allclose(rewards, expected[rows], rtol=1e-5, atol=1e-6)
    buffer.label_waiting()
    np.testing.assert_allclose(buffer.rewards[:buffer.pos], expected, rtol=1e-5, atol=1e-6)
    assert per_step.replay_buffer is not None
    np.testing.assert_allclose(per_step.replay_buffer.rewards[:buffer.pos], expected,
                               rtol=1e-5, atol=1e-6)
    # so SAC learned the same policy (up to float rounding of batched against one-row forwards)
    for a, b in zip(per_step.policy.parameters(), lazy.policy.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    # in batches: fewer reward calls than env steps (more so as the buffer grows: a batch of 32
    # from <= 300 rows here), and each transition labelled once
    assert reward.calls == buffer.n_labelled_calls < len(steps.inputs) / 2
    assert reward.rows == 2 * len(steps.inputs)
    # the agent's episode statistics are the true return
    true_return = float(np.sum([r[0] for r in steps.true_rews[:50]]))
    assert lazy.ep_info_buffer is not None
    assert lazy.ep_info_buffer[0]["r"] == pytest.approx(true_return, rel=1e-5)


def test_rows_about_to_be_overwritten_are_labelled_first() -> None:
    venv = DummyVecEnv([lambda: gym.make("Pendulum-v1")])
    reward = CountingReward(venv)
    buffer = LazyRewardReplayBuffer(5, venv.observation_space, venv.action_space, device="cpu",
                                    reward_fn=reward)
    rng = np.random.default_rng(0)
    transitions = []
    for step in range(12):
        obs, next_obs = rng.normal(size=(2, 1, 3)).astype(np.float32)
        action = rng.uniform(-1, 1, size=(1, 1)).astype(np.float32)  # as SB3 stores it: scaled
        done = np.array([step == 7])
        buffer.add(obs, next_obs, action, np.zeros(1), done, [{"TimeLimit.truncated": False}])
        transitions.append((obs, 2.0 * action, next_obs, done))  # Pendulum acts in [-2, 2]
    # 12 rows through 5 slots without a sample: labelled when full, before each overwrite
    assert reward.calls == 2 and buffer.n_waiting == 2
    buffer.label_waiting()
    expected = [reward.fn(*t)[0] for t in transitions[-5:]]
    order = [(buffer.pos + i) % 5 for i in range(5)]  # oldest surviving row first
    np.testing.assert_allclose(buffer.rewards[order, 0], expected, rtol=1e-5)


def test_a_relabelled_buffer_gets_its_rewards_checked_like_every_other_path() -> None:
    venv = DummyVecEnv([lambda: gym.make("Pendulum-v1")] * 2)
    buffer = LazyRewardReplayBuffer(6, venv.observation_space, venv.action_space, device="cpu",
                                    n_envs=2, reward_fn=CountingReward(venv))  # 3 rows of 2 envs
    for _ in range(2):
        buffer.add(np.zeros((2, 3)), np.zeros((2, 3)), np.zeros((2, 1)), np.zeros(2),
                   np.zeros(2), [{}, {}])
    agent = SimpleNamespace(replay_buffer=buffer)

    def nan_at_row_1(obs: Array, acts: Array, next_obs: Array, dones: Array) -> Array:
        return np.where(np.arange(len(obs)) == 2, np.nan, 1.0)  # row 1's first env

    with pytest.raises(InvalidDataError,
                       match=r"non-finite reward .*nan.* relabelling replay rows 0 to 1 \(batch index 2\)"):
        relabel_replay_buffer(agent, nan_at_row_1)  # type: ignore[arg-type]
    with pytest.raises(InvalidDataError, match=r"must return shape \(2,\) relabelling replay rows 0 to 0"):
        relabel_replay_buffer(agent, lambda obs, *_: np.ones((len(obs), 1)), chunk=2)  # type: ignore[arg-type]
    assert relabel_replay_buffer(agent, lambda obs, *_: np.full(len(obs), 3.0)) == 4  # type: ignore[arg-type]
    np.testing.assert_array_equal(buffer.rewards[:2], 3.0)
    assert buffer.n_waiting == 0


def test_vec_normalize_that_cannot_see_the_learned_reward_is_refused() -> None:
    def make() -> DummyVecEnv:
        return DummyVecEnv([lambda: gym.make("Pendulum-v1")])

    def learned(obs: Array, acts: Array, next_obs: Array, dones: Array) -> Array:
        return -np.abs(acts[:, 0]).astype(np.float32)

    inside = SAC("MlpPolicy", RewardVecEnvWrapper(VecNormalize(make()), learned), **SMALL_SAC)
    with pytest.raises(ConfigError, match="inside the reward wrapper"):
        check_reward_env(inside)
    check_reward_env(SAC("MlpPolicy", VecNormalize(RewardVecEnvWrapper(make(), learned),
                                                   norm_reward=False), **SMALL_SAC))
    wrapped, kwargs = per_sample_reward(make(), learned)
    agent = SAC("MlpPolicy", VecNormalize(wrapped), **SMALL_SAC, **kwargs)
    with pytest.raises(ConfigError, match="norm_reward"):
        agent.learn(SMALL_SAC["learning_starts"] + 2)


def test_make_agent_refuses_that_combination_for_every_off_policy_agent_it_builds() -> None:
    from rlkit.factories.builders import make_agent
    from rlkit.factories.configs import AgentConfig

    def learned(obs: Array, acts: Array, next_obs: Array, dones: Array) -> Array:
        return -np.abs(acts[:, 0]).astype(np.float32)

    inside = RewardVecEnvWrapper(VecNormalize(DummyVecEnv([lambda: gym.make("Pendulum-v1")])), learned)
    config = AgentConfig(algo="sac", hyperparams="sb3", device="cpu")
    with pytest.raises(ConfigError, match="inside the reward wrapper"):
        make_agent(config, inside, seed=0)
    assert make_agent(config.replace(algo="ppo"), inside, seed=0) is not None  # PPO reads the rollout


def test_episode_log_leaves_out_the_learned_return_when_no_episode_reported_one() -> None:
    """With rewards paid later (the lazy buffer), episodes carry no learned return: the log says
    nothing about it rather than a NaN (and numpy's empty-slice warning)."""
    import warnings

    from rlkit.factories.agent import EpisodeLog, EpisodeLogCallback

    logged: list[dict[str, float]] = []

    class Recorder:
        def log(self, metrics: dict[str, float], step: int) -> None:
            logged.append(metrics)

    callback = EpisodeLogCallback(EpisodeLog(), Recorder(), every=2)  # type: ignore[arg-type]
    callback.num_timesteps = 10
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for infos in ([{"episode": {"r": -3.0}}], [{"episode": {"r": -1.0}}],
                      [{"episode": {"r": -5.0}, "learned_episode_return": 2.0}],
                      [{"episode": {"r": -7.0}}]):
            callback.locals = {"infos": infos}
            callback._on_step()
    assert logged == [{"agent/true_return": -2.0},
                      {"agent/true_return": -6.0, "agent/learned_return": 2.0}]
