"""Package names imported on first use (PEP 562), so ``import rlkit.<package>`` stays cheap.

A package's ``__init__`` lists where each public name lives; the module that holds it is imported
the first time the name is read (``from rlkit.reward import RewardNet`` imports
``rlkit.reward.nets`` then, and no other module of the package). Type checkers read the same names
from the package's ``if TYPE_CHECKING:`` imports; ``tests/test_packaging.py`` checks the two lists
and ``__all__`` agree.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any


class _LazyPackage(types.ModuleType):
    """A package whose public name may equal one of its modules' (``rlkit.apec.drex`` the
    function in ``rlkit/apec/drex.py``): importing that module must not replace the name."""

    def __setattr__(self, name: str, value: Any) -> None:
        homes: Mapping[str, str] = self.__dict__.get("_lazy_homes", {})
        if (isinstance(value, types.ModuleType) and homes.get(name) == value.__name__
                and value.__name__ == f"{self.__name__}.{name}"):
            value = getattr(value, name)  # the import system binding the submodule: keep the name
        super().__setattr__(name, value)


def lazy_exports(
    package: str, homes: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``, whose names live in ``homes``
    (module -> names). Use: ``__getattr__, __dir__ = lazy_exports(__name__, {...})``."""
    where = {name: module for module, names in homes.items() for name in names}
    module = sys.modules[package]
    module.__dict__["_lazy_homes"] = where
    module.__class__ = _LazyPackage

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where[name]), name)
        module.__dict__[name] = value  # later reads skip this function
        return value

    def __dir__() -> list[str]:
        return sorted(set(module.__dict__) | set(where))

    return __getattr__, __dir__
