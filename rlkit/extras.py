"""Optional stacks (pip extras) and the error that names the extra to install when one is missing.

``rlkit`` needs only its core to train and learn rewards; the labelling web app, APEC's optimal
transport and TensorBoard come with extras. A module that imports such a stack does it inside
``with extra("human"):`` and a missing package then raises ``MissingExtraError`` ("pip install
'rlkit[human]'"), which the ``rlkit`` command prints as one line instead of a traceback.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

from rlkit.errors import RlkitError, UnknownKeyError

#: extra -> the top-level modules it brings (its packages' import names, not their pip names).
EXTRAS: dict[str, tuple[str, ...]] = {
    "human": ("fastapi", "starlette", "uvicorn", "sqlalchemy", "jinja2", "httpx", "itsdangerous"),
    "apec": ("ot",),
    "tensorboard": ("tensorboard",),
    "postgresql": ("psycopg",),
    "ray": ("ray",),
    "zoo": ("rl_zoo3",),
    "dmc": ("dm_control", "dm_env", "shimmy"),
    "docs": ("mkdocs", "material", "mkdocstrings"),
}


class MissingExtraError(RlkitError, ModuleNotFoundError):
    """An optional package is not installed; the message says which extra brings it. A
    ``ModuleNotFoundError`` too, so code that catches that keeps working."""

    def __init__(self, module: str, extra: str, what: str | None = None) -> None:
        self.module = module
        self.extra = extra
        needed = f" (needed for {what})" if what else ""
        super().__init__(
            f"the Python package {module!r} is not installed{needed}; it comes with rlkit's "
            f"{extra!r} extra: pip install 'rlkit[{extra}]'",
            name=module,
        )


def _check(extra: str) -> tuple[str, ...]:
    if extra not in EXTRAS:
        raise UnknownKeyError(f"unknown rlkit extra {extra!r}; known: {sorted(EXTRAS)}")
    return EXTRAS[extra]


@contextmanager
def extra(name: str, what: str | None = None) -> Iterator[None]:
    """Imports in this block belong to the extra ``name``: a missing one raises
    ``MissingExtraError``. Other import errors (a missing core package, a bug) pass unchanged."""
    modules = _check(name)
    try:
        yield
    except MissingExtraError:
        raise
    except ModuleNotFoundError as error:
        missing = (error.name or "").partition(".")[0]
        if missing not in modules:
            raise
        raise MissingExtraError(missing, name, what) from error


def require(module: str, extra_name: str, what: str | None = None) -> ModuleType:
    """Import ``module`` (one of ``extra_name``'s) and return it, or raise ``MissingExtraError``."""
    with extra(extra_name, what):
        return importlib.import_module(module)
