"""Whether a run may go on under the config it is started with now: one diff of the saved config
against the current one, and per command the settings that may differ on resume (``MAY_CHANGE``).

Everything else must be as saved: a resumed run with another seed, env or network would mix two
experiments. A setting in one config and absent from the other (a file of an rlkit that had not
that setting yet) counts as changed unless its value is null, so such a file is refused naming the
setting.

Devices may change where the saved state loads onto any device and the resumed run is built on
the current one (tensors are read back to the CPU and moved to the networks' device; the RNGs a
run draws from are CPU ones). On another device a run goes on, but not bit-identically (GPU
kernels round differently).
"""

from __future__ import annotations

import enum
import json
import os
from collections.abc import Iterator, Mapping
from typing import Any

from rlkit.errors import ConfigError

__all__ = ["ABSENT", "MAY_CHANGE", "changed_paths", "refuse_changed_config"]


class _Absent(enum.Enum):
    ABSENT = "absent"


ABSENT = _Absent.ABSENT  # the value of a setting one config lacks

#: A human's patience: how long a pref-rl round waits for people (never what is learnt).
_HUMAN_WAIT = ("teacher.human.wait", "teacher.human.min_fraction", "teacher.human.timeout_s",
               "teacher.human.poll_s")

#: command -> the dotted config paths that may differ between a saved run and its resumption
#: (a path allows everything under it). ``resumable`` is the settings a caller of
#: ``rlkit.factories.resumable.ResumableTraining`` saves with its points: the caller leaves out
#: what may change (its device) and everything it holds must match.
MAY_CHANGE: dict[str, frozenset[str]] = {
    "pref-rl": frozenset({"agent.total_timesteps", *_HUMAN_WAIT, "agent.device", "trainer.device"}),
    "apec": frozenset({"demos.device", "ail.device", "drex.device", "reward.trainer.device",
                       "policy.agent.device"}),
    "demos": frozenset({"demos.device"}),
    # more phases may be added to a finished run (rlkit.m3hf.loop), which loads its checkpoints
    # onto the current marl.device (rlkit.marl.checkpoint.load_checkpoint's device)
    "m3hf": frozenset({"phases", "marl.device"}),
    "resumable": frozenset(),
    # rlkit sweep (``sweep.json``, rlkit.scale.sweep.SweepSpec.to_json): the loggers beyond jsonl,
    # which every trial writes and the sweep reads; the backend, its workers and resources and the
    # metrics shown are not saved, so they may change too
    "sweep": frozenset({"logger"}),
}


def changed_paths(saved: Any, current: Any, prefix: str = "") -> Iterator[tuple[str, Any, Any]]:
    """Each setting that differs, as (dotted path, saved value, current value), in path order;
    nested mappings are compared key by key, anything else whole. A setting absent from one side
    (``ABSENT`` there) equals one that is null.

    Args:
        saved: the saved config (JSON data).
        current: the current config (JSON data).
        prefix: the dotted path of ``saved`` and ``current`` (empty at the top).

    Returns:
        An iterator of (path, saved value, current value); the top level is named ``<config>``.
    """
    if isinstance(saved, Mapping) and isinstance(current, Mapping):
        for key in sorted(set(saved) | set(current), key=str):
            yield from changed_paths(saved.get(key, ABSENT), current.get(key, ABSENT), f"{prefix}{key}.")
    elif _null(saved) != _null(current):
        yield prefix.rstrip(".") or "<config>", saved, current


def _null(value: Any) -> Any:
    return None if value is ABSENT else value


def refuse_changed_config(command: str, saved: Mapping[str, Any], current: Mapping[str, Any], *,
                          where: str | os.PathLike[str] | None = None) -> None:
    """Refuse to resume a ``command`` run saved with ``saved`` under ``current`` unless they differ
    only in settings ``MAY_CHANGE[command]`` allows.

    Args:
        command: a key of ``MAY_CHANGE``.
        saved: the config the run was started with (JSON data).
        current: the config it is resumed with (JSON data).
        where: the run (a folder or file) the message names.

    Raises:
        ConfigError: naming every changed setting with its saved and current value, and the
            settings that may change.
        KeyError: ``command`` is not a key of ``MAY_CHANGE``.
    """
    allowed = MAY_CHANGE[command]
    changed = [(path, old, new) for path, old, new in changed_paths(saved, current)
               if not any(path == name or path.startswith(f"{name}.") for name in allowed)]
    if not changed:
        return
    names = [path for path, _, _ in changed]
    values = "; ".join(f"{path}: saved {_shown(old)}, now {_shown(new)}" for path, old, new in changed)
    run = f"{os.fspath(where)} holds a {command} run" if where is not None else f"the saved {command} run was"
    raise ConfigError(
        f"{run} started with other settings for {names} ({values}); on resume only "
        f"{sorted(allowed) or 'nothing'} may change: resume with the same config or use a new run directory")


def _shown(value: Any) -> str:
    """A config value for a message (``absent`` where a config lacks the setting), cut short."""
    if value is ABSENT:
        return "absent"
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 80 else f"{text[:77]}..."
