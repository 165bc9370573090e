"""The connection to Ray that the ray backend's units (``rlkit.scale.tune_executor``) and tasks
(``rlkit.scale.tasks``) share.

Ray comes with the ``ray`` extra and is imported only when that backend is used. Without an
address a local Ray starts (``num_cpus`` of them), its workers at the caller's priority (Ray's
default niceness, 15, let any other work on the machine starve the trials); with one (``auto``,
``ray://head:10001``) the work goes to that cluster, and the status root must be a path every
node sees: that is checked at start by a task on every alive node, and the run refused by name
when a node cannot see it.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from rlkit.errors import ConfigError
from rlkit.scale.units import Backend


def import_ray() -> Any:
    """``ray`` with Tune, or ``MissingExtraError`` naming the extra (pip install 'rlkit[ray]').

    Returns:
        The ``ray`` module.

    Raises:
        MissingExtraError: when Ray or Ray Tune is not installed.
    """
    from rlkit.extras import extra

    with extra("ray", "--backend ray (Ray Tune)"):
        import ray
        import ray.tune  # noqa: F401 - ray without [tune] lacks it
    return ray


def in_tune_trial() -> bool:
    """True inside a Ray Tune trial (where ``ray.tune.report`` reaches the scheduler).

    Returns:
        Whether this process runs a Tune trial; False also when Ray is not installed.
    """
    try:
        import warnings

        from ray.tune import get_context

        with warnings.catch_warnings():  # outside a trial Ray warns before it answers None
            warnings.simplefilter("ignore")
            return get_context().get_trial_id() is not None
    except Exception:  # noqa: BLE001 - no ray, or no session
        return False


def init_ray(ray: Any, backend: Backend) -> bool:
    """Connect to ``backend``'s Ray unless this process already is (a driver that started it, or a
    Tune trial): the cluster at ``backend.address``, else a local Ray of ``backend.num_cpus``.

    Args:
        ray: the ``ray`` module (``import_ray()``).
        backend: the ray backend's settings.

    Returns:
        True when this call started the connection (the caller shuts it down), else False.
    """
    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                              "configure_logging": False}
    if backend.address is None and backend.num_cpus is not None:
        kwargs["num_cpus"] = backend.num_cpus
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    # a local Ray's raylet reads it at start: its workers (and the trials' commands) keep the
    # caller's priority instead of Ray's niceness 15; a cluster keeps what its nodes were started with
    with scoped_env({} if backend.address is not None else WORKER_PRIORITY):
        ray.init(address=backend.address, **kwargs)
    return True


WORKER_PRIORITY = {"RAY_worker_niceness": "0"}


@contextlib.contextmanager
def scoped_env(values: Mapping[str, str]) -> Iterator[None]:
    """Environment variables set for the block (unless the caller set them), then restored.

    Args:
        values: the variables and their values.

    Yields:
        Nothing; the variables are set inside the block.
    """
    added = {key: value for key, value in values.items() if key not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for key in added:
            os.environ.pop(key, None)


def _look(path: str, token: str) -> tuple[str, bool]:
    import socket

    try:
        return socket.gethostname(), Path(path).read_text() == token
    except OSError:
        return socket.gethostname(), False


def check_shared_storage(ray: Any, root: Path) -> list[str]:
    """A task on every alive node reads a token written under ``root``; a node that cannot is
    named in a ``ConfigError``. Returns the nodes' addresses."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    nodes = [n for n in ray.nodes() if n.get("Alive")]
    token_path = root / f".storage-check-{uuid.uuid4().hex}"
    token = uuid.uuid4().hex
    token_path.write_text(token)
    try:
        look = ray.remote(num_cpus=0)(_look)
        refs = [look.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
            n["NodeID"], soft=False)).remote(str(token_path), token) for n in nodes]
        seen = ray.get(refs, timeout=120)
    finally:
        token_path.unlink(missing_ok=True)
    blind = [n.get("NodeManagerAddress", n["NodeID"]) for n, (_, ok) in zip(nodes, seen, strict=True)
             if not ok]
    if blind:
        raise ConfigError(
            f"{root} is not visible on node(s) {blind}: on a cluster the sweep directory "
            "(--run-dir, or --storage DIR) must be a path every node sees (NFS, a shared disk)")
    return [n.get("NodeManagerAddress", "?") for n in nodes]
