"""Example feedback scripts shipped with rlkit: YAML files of texts per phase, as
``ScriptedSource`` reads them. ``feedback.script=example:<name>`` runs one from any directory:

- ``good``: one correct text per phase for map A, lettuce-tomato salad, 3 agents (the default
  game), each the next step of the recipe.

Any other ``feedback.script`` value is a path to a YAML file of your own.
"""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from rlkit.errors import ConfigError

#: how ``feedback.script`` names a shipped example (``example:good``)
PREFIX = "example:"


def example_names() -> list[str]:
    """The shipped examples, as ``feedback.script=example:<name>`` names them (sorted)."""
    return sorted(item.name.removesuffix(".yaml") for item in files(__name__).iterdir()
                  if item.name.endswith(".yaml"))


def script_file(script: str) -> Traversable:
    """The file a ``feedback.script`` value names.

    Args:
        script: ``example:<name>`` (a YAML file of this package) or a path.

    Returns:
        The shipped example's file, or ``Path(script)``; either has ``is_file`` and ``read_text``.

    Raises:
        ConfigError: ``example:<name>`` with a name rlkit does not ship (the message lists those
            it does).
    """
    if not script.startswith(PREFIX):
        return Path(script)
    name = script.removeprefix(PREFIX)
    if name not in example_names():
        shipped = ", ".join(PREFIX + known for known in example_names())
        raise ConfigError(f"no example script {name!r} in rlkit (shipped: {shipped}); a path to "
                          "a YAML file of your own works too")
    return files(__name__) / f"{name}.yaml"
