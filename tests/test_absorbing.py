"""One test of the fixed-horizon absorbing flag, for numpy arrays and torch tensors alike."""

import numpy as np
import torch
from gymnasium.envs.classic_control import CartPoleEnv

from envs.fixed_horizon import FixedHorizon
from rlkit.data.absorbing import is_absorbing


def test_is_absorbing_reads_the_flag_fixed_horizon_writes() -> None:
    env = FixedHorizon(CartPoleEnv(), horizon=60)  # random CartPole falls in ~20 steps
    obs, _ = env.reset(seed=0)
    env.action_space.seed(0)  # unseeded, a lucky random pole can stand all 59 steps
    states, absorbing = [obs], [False]
    for _ in range(59):
        obs, _, _, _, info = env.step(env.action_space.sample())
        states.append(obs)
        absorbing.append(bool(info.get("absorbing", False)))
    stacked = np.stack(states)
    assert any(absorbing) and not all(absorbing)
    np.testing.assert_array_equal(is_absorbing(stacked), absorbing)
    tensor = torch.as_tensor(stacked).reshape(3, 20, -1)  # any leading shape, either kind
    flags = is_absorbing(tensor)
    assert isinstance(flags, torch.Tensor) and flags.shape == (3, 20)
    np.testing.assert_array_equal(flags.numpy().reshape(60), absorbing)
