"""The PettingZoo wrapper: per-agent learned rewards, true returns in info, the API unchanged."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from gymnasium import spaces
from pettingzoo import ParallelEnv
from pettingzoo.test import parallel_api_test

from rlkit.errors import InvalidDataError
from rlkit.wrappers import PettingZooRewardWrapper

LEFT, STAY, RIGHT = 0, 1, 2


class LineWorld(ParallelEnv):
    """Two agents on a line; each is paid ``-|position|`` and is done when it reaches 0.

    Deterministic: "left" starts at -3, "right" at 4; actions move by -1, 0 or +1.
    """

    metadata = {"name": "line_world_v0", "render_modes": ["ansi"]}

    def __init__(self, max_cycles: int = 6, render_mode: str | None = None) -> None:
        self.possible_agents = ["left", "right"]
        self.agents: list[str] = []
        self.max_cycles = max_cycles
        self.render_mode = render_mode
        self.closed = False
        self._position = {"left": -3.0, "right": 4.0}
        self._t = 0
        self._observation_spaces = {
            a: spaces.Box(-np.inf, np.inf, (2,), np.float32) for a in self.possible_agents
        }
        self._action_spaces = {a: spaces.Discrete(3) for a in self.possible_agents}

    def observation_space(self, agent: str) -> spaces.Box:
        return self._observation_spaces[agent]  # the same object every call, as the API asks

    def action_space(self, agent: str) -> spaces.Discrete:
        return self._action_spaces[agent]

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
        self.agents = list(self.possible_agents)
        self._position = {"left": -3.0, "right": 4.0}
        self._t = 0
        return {a: self._obs(a) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions: dict[str, int]) -> tuple[dict, dict, dict, dict, dict]:
        self._t += 1
        for agent, action in actions.items():
            self._position[agent] += int(action) - 1
        rewards = {a: -abs(self._position[a]) for a in self.agents}
        terminations = {a: self._position[a] == 0 for a in self.agents}
        truncations = {a: self._t >= self.max_cycles for a in self.agents}
        obs = {a: self._obs(a) for a in self.agents}
        infos = {a: {"t": self._t} for a in self.agents}
        self.agents = [a for a in self.agents if not (terminations[a] or truncations[a])]
        return obs, rewards, terminations, truncations, infos

    def state(self) -> np.ndarray:
        return np.array([self._position["left"], self._position["right"]], dtype=np.float32)

    def render(self) -> str | None:
        if self.render_mode is None:
            return None
        return f"left={self._position['left']} right={self._position['right']}"

    def close(self) -> None:
        self.closed = True

    def _obs(self, agent: str) -> np.ndarray:
        other = "right" if agent == "left" else "left"
        return np.array([self._position[agent], self._position[other]], dtype=np.float32)


def position_reward(
    obs: np.ndarray, acts: np.ndarray, next_obs: np.ndarray, dones: np.ndarray
) -> np.ndarray:
    """10 x the new position + 100 at a true termination, + 0.01 x the old position."""
    return 10.0 * next_obs[:, 0] + 100.0 * dones + 0.01 * obs[:, 0]


def test_parallel_api_test_passes_on_env_and_wrapped_env() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the API test reports key-set mistakes only as warnings
        parallel_api_test(LineWorld(), num_cycles=50)
        wrapped = PettingZooRewardWrapper(LineWorld(), {"left": position_reward})
        parallel_api_test(wrapped, num_cycles=50)


def test_replaces_named_agent_only_and_reports_true_episode() -> None:
    env = PettingZooRewardWrapper(LineWorld(max_cycles=6), {"left": position_reward})
    env.reset(seed=0)
    # "left" walks from -3 to 0 in 3 steps (true termination); "right" stays at 4 until truncation.
    expected_left = [10 * -2 + 0.01 * -3, 10 * -1 + 0.01 * -2, 10 * 0 + 100 + 0.01 * -1]
    for t in range(3):
        _, rewards, terminations, _, infos = env.step({"left": RIGHT, "right": STAY})
        assert rewards["left"] == pytest.approx(expected_left[t])
        assert infos["left"]["original_reward"] == -(2 - t)
        assert rewards["right"] == -4.0 and infos["right"]["original_reward"] == -4.0
        assert infos["left"]["t"] == t + 1  # the env's own info survives
    assert terminations["left"]
    assert infos["left"]["original_episode"] == {"r": -3.0, "l": 3}
    # SB3's episode entry holds the TRUE return; the learned one is reported beside it
    assert {k: infos["left"]["episode"][k] for k in "rl"} == {"r": -3.0, "l": 3}
    assert infos["left"]["episode"]["t"] >= 0.0
    assert infos["left"]["learned_episode_return"] == pytest.approx(sum(expected_left))
    assert "original_episode" not in infos["right"] and "episode" not in infos["right"]
    assert env.agents == ["right"]
    for _ in range(3):
        _, rewards, _, truncations, infos = env.step({"right": STAY})
        assert set(rewards) == {"right"}
    assert truncations["right"]
    assert infos["right"]["original_episode"] == {"r": -24.0, "l": 6}
    assert infos["right"]["episode"]["r"] == -24.0  # no reward_fn: nothing learned to report
    assert "learned_episode_return" not in infos["right"]
    assert env.agents == []

    env.reset()  # a new episode starts its returns from zero
    _, _, _, _, infos = env.step({"left": STAY, "right": STAY})
    assert "original_episode" not in infos["left"]


def test_add_mode_and_validation() -> None:
    half = {"right": lambda o, a, n, d: np.array([0.5])}
    env = PettingZooRewardWrapper(LineWorld(), half, mode="add")
    env.reset()
    _, rewards, _, _, _ = env.step({"left": STAY, "right": LEFT})
    assert rewards == {"left": -3.0, "right": -3.0 + 0.5}

    with pytest.raises(InvalidDataError, match="'nobody'"):
        PettingZooRewardWrapper(LineWorld(), {"nobody": position_reward})
    broken = PettingZooRewardWrapper(LineWorld(), {"left": lambda o, a, n, d: np.array([np.nan])})
    broken.reset()
    with pytest.raises(InvalidDataError, match=r"nan.*'left'"):
        broken.step({"left": STAY, "right": STAY})


def test_passes_through_the_parallel_env_api() -> None:
    inner = LineWorld(render_mode="ansi")
    env = PettingZooRewardWrapper(inner, {"left": position_reward})
    assert env.possible_agents == ["left", "right"]
    assert env.render_mode == "ansi" and env.unwrapped is inner
    assert env.observation_space("left") is inner.observation_space("left")
    assert env.action_space("right") is inner.action_space("right")
    env.reset()
    assert env.agents == ["left", "right"]
    env.step({"left": RIGHT, "right": LEFT})
    np.testing.assert_array_equal(env.state(), [-2.0, 3.0])
    assert env.render() == "left=-2.0 right=3.0"
    env.close()
    assert inner.closed
