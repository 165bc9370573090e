"""D-REX baseline: BC reproduces the demos at noise 0; pairs respect min_gap and prefer less noise."""

import numpy as np
import pytest
from stable_baselines3.common.env_util import make_vec_env

from rlkit.apec import NOISE_GRID, DrexConfig, drex, drex_pairs, noisy_rollouts, train_bc
from rlkit.data import Trajectory, TrajectoryStore
from rlkit.errors import InvalidDataError


def _demos(venv, n: int = 2, length: int = 50):
    """A linear demonstrator on Pendulum, easy for BC to fit."""
    rng = np.random.default_rng(0)
    demos = []
    for _ in range(n):
        obs = rng.uniform(-1, 1, (length + 1, 3)).astype(np.float32)
        acts = np.clip(obs[:-1, :1] - obs[:-1, 2:], -2, 2).astype(np.float32)
        demos.append(Trajectory(obs, acts, np.zeros(length, np.float32)))
    return demos


def test_noise_grid_is_the_papers():
    assert len(NOISE_GRID) == 20 and NOISE_GRID[0] == 0.0 and NOISE_GRID[-1] == 0.95


def test_noise_zero_reproduces_bc_actions_and_pairs_prefer_less_noise():
    venv = make_vec_env("Pendulum-v1", n_envs=2)
    config = DrexConfig(noise_levels=(0.0, 0.5, 1.0), rollouts_per_level=2, min_gap=0.5,
                        n_pairs=100, bc_epochs=30, segment_length=25)
    policy = train_bc(_demos(venv), venv.action_space, config)
    store, noise = noisy_rollouts(policy, venv, np.random.default_rng(0), config)
    assert noise.tolist() == [0.0, 0.0, 0.5, 0.5, 1.0, 1.0]
    for k in np.flatnonzero(noise == 0.0):
        assert np.allclose(store[k].acts, policy.act(store[k].obs[:-1]))
    assert not np.allclose(store[5].acts, policy.act(store[5].obs[:-1]))

    data = drex_pairs(store, noise, np.random.default_rng(1), config)
    left, right = data.meta["noise_left"], data.meta["noise_right"]
    assert len(data) == 100 and set(np.unique(data.labels)) == {0.0, 1.0}
    assert np.all(np.abs(left - right) >= 0.5)
    assert np.all(np.where(data.labels == 1.0, left < right, right < left))
    assert (data.pairs.left[:, 2] == 25).all()
    assert np.array_equal(data.meta["return_left"], data.pairs.gather()[0].returns())


def test_end_to_end_and_bad_inputs_name_the_field():
    venv = make_vec_env("Pendulum-v1", n_envs=2)
    config = DrexConfig(noise_levels=(0.0, 0.6), rollouts_per_level=2, n_pairs=10, bc_epochs=2)
    data = drex(_demos(venv), venv, np.random.default_rng(0), config)
    assert len(data) == 10 and data.sources.tolist() == ["drex"] * 10
    with pytest.raises(InvalidDataError, match="demos"):
        train_bc([], venv.action_space, config)
    store = TrajectoryStore()
    store.extend(_demos(venv))
    with pytest.raises(InvalidDataError, match="min_gap"):
        drex_pairs(store, np.array([0.0, 0.2]), np.random.default_rng(0), config)
    with pytest.raises(InvalidDataError, match="min_gap"):
        DrexConfig(min_gap=0.0)
