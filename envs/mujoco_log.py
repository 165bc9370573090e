"""MuJoCo's warnings on stderr, without its log file and without a known deprecation notice.

MuJoCo's default warning handler prints each warning and appends it to ``MUJOCO_LOG.TXT`` in the
working directory. Gymnasium's HalfCheetah model (and dm_control's cheetah) set the compiler
attribute ``settotalmass``, which MuJoCo 4 deprecates: every compile of the model (each env made,
each pre-run check, each renderer) warned once and wrote the file. ``route_mujoco_warnings``
installs a handler in its place (MuJoCo's ``mju_user_warning``): that one notice is dropped, every
other warning (an unstable simulation, a full contact buffer) still reaches stderr, and no file is
written.
"""

from __future__ import annotations

import sys

# the start of the notice MuJoCo 4 gives when compiling a model that sets compiler/settotalmass
DROPPED = ("compiler attribute 'settotalmass' is deprecated",)


def mujoco_warning(message: str) -> None:
    """Write ``message`` (one MuJoCo warning) to stderr unless it is one of ``DROPPED``."""
    if not message.startswith(DROPPED):
        print(f"MuJoCo warning: {message}", file=sys.stderr)


def route_mujoco_warnings() -> None:
    """Send this process's MuJoCo warnings through ``mujoco_warning`` (imports ``mujoco``)."""
    import mujoco

    mujoco.set_mju_user_warning(mujoco_warning)
