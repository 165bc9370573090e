"""The small protocols the rest of rlkit is written against."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from rlkit.data.segments import SegmentPairs


@runtime_checkable
class RewardFn(Protocol):
    """A reward over a batch of transitions: a reward net, an ensemble mean, a shaped sum, the truth.

    Shapes: ``obs``/``next_obs`` ``(B, *obs_shape)``, ``acts`` ``(B, *act_shape)``, ``dones`` ``(B,)``;
    returns float rewards of shape ``(B,)``.
    """

    def __call__(
        self, obs: np.ndarray, acts: np.ndarray, next_obs: np.ndarray, dones: np.ndarray
    ) -> np.ndarray: ...


@runtime_checkable
class Teacher(Protocol):
    """Anything that labels pairs of segments: z in [0, 1] (1 = left better), NaN = skipped."""

    def label(self, pairs: SegmentPairs) -> np.ndarray: ...


@runtime_checkable
class TeamRewardShaper(Protocol):
    """Per-agent reward terms added to a multi-agent env's own reward (M3HF's reward pools).

    ``state`` is the env's self-description as arrays with a leading game axis (Overcooked's
    ``features()``), taken after the step and before any auto-reset; ``actions`` is ``(G, n_agents)``.
    Returns ``(G, n_agents)`` float terms; the trainer adds them to the env reward exactly once.
    """

    def __call__(self, state: Mapping[str, np.ndarray], actions: np.ndarray) -> np.ndarray: ...


@runtime_checkable
class TaskMap(Protocol):
    """Runs ``fn`` on every item and returns the results in the items' order: one process (the
    default, ``rlkit.apec.rollouts.sequential_map``), a process pool, or Ray tasks
    (``rlkit.scale.tasks``). ``fn`` is a top-level function and the items pickle, so that any of
    them may run it elsewhere; the code that passes a map in decides where its tasks run.
    """

    def __call__(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]: ...
