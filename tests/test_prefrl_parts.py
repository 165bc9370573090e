"""``PreferenceRL`` over parts built by hand (no config): the loop uses the envs, agent, reward
model and trainer, teacher and selector it is given, and refuses parts it cannot use."""

import textwrap

import numpy as np
import pytest
from stable_baselines3 import PPO, SAC
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.env_util import make_vec_env

from rlkit.data import SegmentPairs
from rlkit.errors import ConfigError
from rlkit.factories.configs import QueryConfig
from rlkit.feedback import SimulatedTeacher, TeacherConfig
from rlkit.prefrl import PreferenceRL, UniformSelector
from rlkit.reward import RewardTrainer, TrainerConfig, build_reward_net
from rlkit.wrappers import LazyRewardReplayBuffer
from tests.fake_data import truthful_labels
from tests.tiny_runs import small_config

QUERY = QueryConfig(every_steps=200, initial_pairs=40, pairs_per_round=20, segment_length=10)


class CountingTeacher:
    """Labels by the true return and keeps the number of pairs of each call."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def label(self, pairs: SegmentPairs) -> np.ndarray:
        self.calls.append(len(pairs))
        return truthful_labels(pairs)


class CountingSelector(UniformSelector):
    """Uniform choice that keeps (candidates, chosen) of each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def select(self, candidates: SegmentPairs, n: int, rng: np.random.Generator) -> np.ndarray:
        chosen = super().select(candidates, n, rng)
        self.calls.append((len(candidates), len(chosen)))
        return chosen


def parts(agent_class=PPO, **agent_kwargs):
    venv = make_vec_env("Pendulum-v1", n_envs=2, seed=0)
    net = build_reward_net(venv.observation_space, venv.action_space, hidden=(32, 32), seed=0)
    agent = agent_class("MlpPolicy", venv, seed=0, **agent_kwargs)
    return venv, agent, net, RewardTrainer(net, TrainerConfig(max_epochs=3))


def test_the_loop_runs_on_the_parts_it_is_given() -> None:
    venv, agent, net, trainer = parts(n_steps=64, batch_size=64, n_epochs=2)
    teacher, selector = CountingTeacher(), CountingSelector()
    before = [p.detach().clone() for p in net.parameters()]
    loop = PreferenceRL(venv, agent, net, trainer, teacher, selector, QUERY, total_timesteps=600,
                        rng=np.random.default_rng(0))
    result = loop.learn()
    assert loop.agent is agent and loop.model is net and loop.trainer is trainer and loop.venv is venv
    assert agent.num_timesteps == 600  # 200 random steps, then the agent's 400
    assert agent.get_env() is loop.wrapped  # it trained on the learned reward
    assert [r.timestep for r in result.rounds] == [200, 400, 600]
    assert teacher.calls == [40, 20, 20]  # the given teacher labelled every round
    assert selector.calls == [(400, 40), (200, 20), (200, 20)]  # it chose among 10 candidates each
    assert result.dataset.sources.tolist() == ["CountingTeacher"] * 80
    np.testing.assert_array_equal(result.dataset.labels, truthful_labels(result.dataset.pairs))
    assert any(not p.equal(q) for p, q in zip(net.parameters(), before, strict=True))  # refit
    assert loop.store.n_steps >= 200 + 400 - 2 * 200  # the agent's own steps were recorded


def test_the_class_docstring_example_runs() -> None:
    doc = PreferenceRL.__doc__ or ""
    block = doc[doc.index("::\n") + 3:].split("\n\n")[0]  # the indented lines after "::"
    names = {"make_vec_env": make_vec_env, "build_reward_net": build_reward_net, "np": np,
             "PPO": PPO, "RewardTrainer": RewardTrainer, "TrainerConfig": TrainerConfig,
             "SimulatedTeacher": SimulatedTeacher, "TeacherConfig": TeacherConfig,
             "UniformSelector": UniformSelector, "QueryConfig": QueryConfig, "PreferenceRL": PreferenceRL}
    exec(textwrap.dedent(block), names)
    result = names["result"]
    assert [r.timestep for r in result.rounds] == [200, 400, 600] and len(result.dataset) == 80
    assert names["loop"].agent.num_timesteps == 600


def test_an_off_policy_agent_gets_the_lazy_buffer_of_its_settings() -> None:
    venv, agent, net, trainer = parts(SAC, learning_starts=100, batch_size=64, buffer_size=5000,
                                      replay_buffer_kwargs={"handle_timeout_termination": False})
    teacher = CountingTeacher()
    loop = PreferenceRL(venv, agent, net, trainer, teacher, UniformSelector(), QUERY,
                        total_timesteps=600, rng=np.random.default_rng(0), normalize_reward=False)
    buffer = agent.replay_buffer
    assert isinstance(buffer, LazyRewardReplayBuffer) and buffer.reward_fn is loop.reward_fn
    assert buffer.buffer_size * buffer.n_envs == 5000 and not buffer.handle_timeout_termination
    assert agent.learning_starts == 100 + 200  # its own random start after the loop's
    loop.learn()
    assert agent.num_timesteps == 600 and buffer.pos == 400 // 2  # its own steps, two envs a row
    assert teacher.calls == [40, 20, 20]


def test_parts_the_loop_cannot_use_are_refused(tmp_path) -> None:
    venv, agent, net, trainer = parts(n_steps=64, batch_size=64)
    rng = np.random.default_rng(0)
    teacher, selector = CountingTeacher(), UniformSelector()
    other = build_reward_net(venv.observation_space, venv.action_space, hidden=(32, 32), seed=1)
    with pytest.raises(ConfigError, match="trains another model"):
        PreferenceRL(venv, agent, other, trainer, teacher, selector, QUERY, 600, rng)
    with pytest.raises(ConfigError, match="agent.total_timesteps=601 is not a whole number"):
        PreferenceRL(venv, agent, net, trainer, teacher, selector, QUERY, 601, rng)
    with pytest.raises(ConfigError, match="pass their config too"):
        PreferenceRL(venv, agent, net, trainer, teacher, selector, QUERY, 600, rng, run_dir=tmp_path)
    config = small_config("ppo", **{"query.pairs_per_round": "10"})
    with pytest.raises(ConfigError, match="differ from the loop's"):
        PreferenceRL(venv, agent, net, trainer, teacher, selector, QUERY, 600, rng, config=config)
    venv, sac, net, trainer = parts(SAC, buffer_size=500, replay_buffer_class=ReplayBuffer)
    sac.replay_buffer.add(*(np.zeros((2, *s)) for s in ((3,), (3,), (1,), ())), np.zeros(2), [{}, {}])
    with pytest.raises(ConfigError, match="ReplayBuffer holding transitions"):
        PreferenceRL(venv, sac, net, trainer, teacher, selector, QUERY, 600, rng)
