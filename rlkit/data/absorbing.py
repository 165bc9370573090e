"""The absorbing-state flag of fixed-horizon observations (``envs.fixed_horizon.FixedHorizon``):
the last entry of a flat observation is 1 on an absorbing state and 0 on a real one.

Here, not in ``envs``: every reader (reward nets, APEC's pairs, transport and evaluation) sits at
or above ``rlkit.data``, and importing ``envs`` registers every environment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

import numpy as np

if TYPE_CHECKING:
    import torch

Observations = TypeVar("Observations", np.ndarray, "torch.Tensor")


def is_absorbing(obs: Observations) -> Observations:
    """Per observation: is it an absorbing state (its flag, the last entry, above 0.5)?

    Args:
        obs: flagged observations, a numpy array or a torch tensor of shape ``(..., d + 1)``.

    Returns:
        Booleans of shape ``obs.shape[:-1]``, of the input's kind.
    """
    return obs[..., -1] > 0.5
