"""Reward modules over numpy batches: ``TorchRewardFn`` (the ``RewardFn`` env wrappers call on
every step, with a numpy fast path for MLPs), arrays to tensors on a module's device, and
forwards over large inputs in chunks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import overload

import numpy as np
import torch
from torch import nn

from rlkit.data.absorbing import is_absorbing
from rlkit.reward.nets import RewardNet
from rlkit.reward.spec import INPUT_NAMES

INFERENCE_ROWS = 1024  # rows per no-grad forward of TorchRewardFn and discriminator rewards


class TorchRewardFn:
    """A ``RewardFn`` over numpy batches for any reward module (net or ensemble): one
    inference-mode forward, float32 out, so env wrappers never touch torch.

    It runs on every environment step, where a handful of rows meets per-op dispatch costs of
    ~10 us each. For MLPs on continuous actions (on the CPU) it therefore builds the feature row in
    numpy (``RewardNet.numpy_features``) and runs the MLP heads directly (``RewardNet.run_head``),
    masking absorbing states as the net does; anything else, or input that
    does not fit, goes through the module's own ``forward`` (which names what is wrong),
    ``INFERENCE_ROWS`` rows (first-axis entries) at a time, so relabelling a replay buffer of
    images stays within memory.

    Args:
        module: a ``RewardNet``, a ``RewardEnsemble`` (its reward is the members' mean) or any
            module called as ``module(obs, acts, next_obs, dones)`` with parameters; without a
            ``spec`` it is passed every input.
    """

    def __init__(self, module: nn.Module) -> None:
        self.module = module
        spec = getattr(module, "spec", None)
        self.reads = frozenset(spec.inputs if spec is not None else INPUT_NAMES)
        members = list(getattr(module, "members", [module]))
        fast = all(isinstance(m, RewardNet) and m.spec.flat_features for m in members)
        self._nets: list[RewardNet] | None = members if fast else None
        self._flag = spec.flag_input if spec is not None and spec.absorbing_flag else None
        # .to() moves parameters in place, so this one parameter always knows the device
        self._probe = next(module.parameters())

    def __call__(
        self, obs: np.ndarray, acts: np.ndarray, next_obs: np.ndarray, dones: np.ndarray
    ) -> np.ndarray:
        given = dict(zip(INPUT_NAMES, (obs, acts, next_obs, dones), strict=True))
        device = self._probe.device
        if self._nets is not None and device.type == "cpu":
            rewards = self._mlp_rewards(given)
            if rewards is not None:
                return rewards
        def forward(*arrays: np.ndarray | None) -> torch.Tensor:
            return self.module(*numpy_to_tensors(self.module, *arrays))

        with torch.inference_mode():
            return forward_in_chunks(forward, [given[n] if n in self.reads else None
                                               for n in INPUT_NAMES])

    def _mlp_rewards(self, given: dict[str, np.ndarray]) -> np.ndarray | None:
        nets = self._nets or []
        features = nets[0].numpy_features(given)
        if features is None:
            return None  # let the module's forward report the shape problem
        n = len(features)
        x = torch.from_numpy(features)
        with torch.inference_mode():
            total = nets[0].run_head(x)
            for net in nets[1:]:
                total = total + net.run_head(x)
        rewards = (total.reshape(n) / len(nets)).numpy()
        if self._flag is not None:
            rewards = rewards * ~is_absorbing(np.asarray(given[self._flag]).reshape(n, -1))
        return rewards


@overload
def numpy_to_tensors(module: nn.Module, *arrays: np.ndarray) -> Sequence[torch.Tensor]: ...
@overload
def numpy_to_tensors(module: nn.Module, *arrays: np.ndarray | None) -> Sequence[torch.Tensor | None]: ...
def numpy_to_tensors(module: nn.Module, *arrays: np.ndarray | None) -> Sequence[torch.Tensor | None]:
    """Arrays as tensors on the module's device. Float64 and bool become float32 (the net's
    dtype); integer and uint8 arrays keep their dtype (indices, images)."""
    device = next(module.parameters()).device
    return [None if array is None else torch.as_tensor(_net_dtype(array), device=device)
            for array in arrays]


def forward_in_chunks(
    forward: Callable[..., torch.Tensor], arrays: Sequence[np.ndarray | None],
    rows: int = INFERENCE_ROWS,
) -> np.ndarray:
    """``forward`` over numpy inputs ``rows`` first-axis entries at a time, as float32 numpy.

    Args:
        forward: takes the arrays' chunks (None stays None) and returns one tensor per entry.
        arrays: inputs sharing their first axis; None for those the forward does not read.
        rows: the most entries per call, >= 1.

    Returns:
        The concatenated outputs, float32.
    """
    n = min((len(array) for array in arrays if array is not None), default=0)
    outputs = [forward(*(None if array is None else array[start:start + rows]
                         for array in arrays)).detach().to(torch.float32).cpu().numpy()
               for start in range(0, max(n, 1), rows)]
    return outputs[0] if len(outputs) == 1 else np.concatenate(outputs)


def _net_dtype(array: np.ndarray) -> np.ndarray:
    array = np.asarray(array)
    if array.dtype in (np.float64, np.bool_):
        return array.astype(np.float32)
    # torch cannot share a read-only array (a pixel store's frame views): copy it
    return array if array.flags.writeable else array.copy()
