"""The batched env is N single games side by side, in SB3's VecEnv semantics."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import envs.overcooked as oc
from envs.overcooked.scripted import ScriptedChef


def lockstep(kwargs: dict[str, Any], n_games: int, steps: int, seed: int) -> None:
    """Step a batched env and ``n_games`` ParallelEnvs with the same actions; compare everything.

    Game 0 is driven by the scripted chef (so it delivers and terminates); the others act at random.
    """
    rng = np.random.default_rng(seed)
    venv = oc.OvercookedVecEnv(n_games, **kwargs)
    games = [oc.parallel_env(**kwargs) for _ in range(n_games)]
    chef = ScriptedChef(games[0]) if kwargs.get("macro_actions", True) else None
    obs = venv.reset()
    last = [g.reset() for g in games]
    n_agents, n_actions = venv.n_agents, len(venv.action_names)
    ended = delivered = 0
    for _ in range(steps):
        expected_obs = np.concatenate(
            [[o[a] for a in g.possible_agents] for g, (o, _) in zip(games, last, strict=True)]
        )
        np.testing.assert_array_equal(obs, expected_obs)
        actions = rng.integers(0, n_actions, venv.num_envs)
        if chef:
            actions[:n_agents] = list(chef(*last[0]).values())
        obs, rewards, dones, infos = venv.step(actions)
        for g, game in enumerate(games):
            rows = slice(g * n_agents, (g + 1) * n_agents)
            o, r, term, trunc, info = game.step(
                dict(zip(game.possible_agents, actions[rows].tolist(), strict=True))
            )
            np.testing.assert_allclose(rewards[rows], list(r.values()), rtol=1e-6)
            assert dones[rows].tolist() == [
                t or u for t, u in zip(term.values(), trunc.values(), strict=True)
            ]
            if game.agents:
                assert venv.macro_done[rows].tolist() == [i.get("macro_done", True) for i in info.values()]
                last[g] = (o, info)
                continue
            assert venv.macro_done[rows].all()  # reset at once: every agent takes a new action next
            ended += 1
            delivered += any(term.values())
            for row, agent in zip(range(rows.start, rows.stop), game.possible_agents, strict=True):
                np.testing.assert_array_equal(infos[row]["terminal_observation"], o[agent])
                assert infos[row]["TimeLimit.truncated"] == trunc[agent]
            last[g] = game.reset()
    assert ended >= n_games  # every game reset at least once
    assert delivered >= (1 if chef else 0)  # the chef's game ended by a delivery


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_steps": 40},
        {"max_steps": 50, "obs_radius": 0, "layout": "A9", "n_agents": 2},
        {"max_steps": 30, "macro_actions": False, "layout": "C"},
    ],
)
def test_batched_env_matches_single_games(kwargs: dict[str, Any]) -> None:
    lockstep(kwargs, n_games=3, steps=110, seed=1)


def test_batched_env_rejects_bad_actions() -> None:
    venv = oc.OvercookedVecEnv(2)
    with pytest.raises(RuntimeError, match="reset"):
        venv.step(np.zeros(6, dtype=int))
    venv.reset()
    with pytest.raises(ValueError, match=r"shape \(6,\)"):
        venv.step(np.zeros(5, dtype=int))
    with pytest.raises(ValueError, match=r"out of range 0..13: \[14\]"):
        venv.step(np.array([0, 0, 14, 0, 0, 0]))
    with pytest.raises(TypeError, match="integers"):
        venv.step(np.full(6, 0.5))
    with pytest.raises(ValueError, match="obs_mode"):
        oc.OvercookedVecEnv(2, obs_mode="image")
    with pytest.raises(ValueError, match="num_games"):
        oc.OvercookedVecEnv(0)


def test_features_agree_with_describe() -> None:
    venv = oc.OvercookedVecEnv(2, recipe="tomato")
    venv.reset()
    get_tomato = venv.action_names.index("get tomato")
    for _ in range(2):  # agent_1 of game 1 picks the tomato up
        venv.step(np.array([0, 0, 0, 0, get_tomato, 0]))
    features = venv.features()
    desc = venv.describe(1)["entities"]
    assert features["positions"].shape == (2, 11, 2)
    assert tuple(features["positions"][1, 0]) == desc["tomato"]["pos"] == desc["agent_1"]["pos"] == (1, 5)
    assert features["holding"].tolist() == [[-1, -1, -1], [-1, 0, -1]]
    assert tuple(features["positions"][0, 0]) == (0, 5)
    assert features["chops"].shape == (2, 3) and not features["plate_contents"].any()
    assert len(venv.frames()) == 2 and venv.frames()[0].shape == (560, 560, 3)


@pytest.mark.slow
def test_sb3_ppo_trains_on_the_batched_env() -> None:
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecMonitor

    from envs.overcooked.sb3 import SB3OvercookedVecEnv

    venv = VecMonitor(SB3OvercookedVecEnv(oc.OvercookedVecEnv(4, max_steps=30)))
    model = PPO("MlpPolicy", venv, n_steps=32, batch_size=128, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=768)
    assert model.num_timesteps >= 768
    assert len(model.ep_info_buffer) > 0  # episodes ended and were counted by VecMonitor
    assert venv.get_attr("render_mode") == [None] * 12
    assert len(venv.get_images()) == 12
