"""Building a reward model for stored pixel data: a CNN with the chosen encoder, not an MLP."""

import numpy as np
import pytest
import torch

from rlkit.data import Trajectory, TrajectoryStore
from rlkit.factories.builders import build_reward_model, store_spaces
from rlkit.factories.configs import RewardModelConfig


def pixel_store() -> TrajectoryStore:
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, size=(9, 3, 16, 16), dtype=np.uint8)
    obs = np.stack([frames[t : t + 3].reshape(9, 16, 16) for t in range(7)])
    store = TrajectoryStore(frame_stack=3)
    store.append(Trajectory(obs=obs, acts=rng.normal(size=(6, 2)).astype(np.float32),
                            rews=np.zeros(6, np.float32)))
    return store


@pytest.mark.parametrize("encoder", ["compact", "drq"])
def test_a_pixel_store_gets_a_cnn_with_the_configured_encoder(encoder):
    store = pixel_store()
    obs_space, act_space = store_spaces(store)
    assert obs_space.dtype == np.uint8 and obs_space.shape == (9, 16, 16)
    model = build_reward_model(RewardModelConfig(inputs=("obs",), encoder=encoder), obs_space,
                               act_space, seed=0)
    assert model.spec.kind == "cnn" and model.spec.encoder == encoder
    rewards = model(torch.as_tensor(np.ascontiguousarray(store[0].obs[:-1])), None, None, None)
    assert rewards.shape == (6,)


def test_vector_data_keeps_float_observations():
    store = TrajectoryStore()
    store.append(Trajectory(obs=np.zeros((4, 3), np.float32), acts=np.zeros((3, 1), np.float32),
                            rews=np.zeros(3, np.float32)))
    obs_space, _ = store_spaces(store)
    assert obs_space.dtype == np.float32
    assert build_reward_model(RewardModelConfig(), *store_spaces(store), seed=0).spec.kind == "mlp"
