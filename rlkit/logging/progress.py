"""A progress bar for long work that stays out of logs: silent off a terminal and in CI."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sized
from typing import TypeVar, overload

from rich.console import Console
from rich.progress import track

T = TypeVar("T")


@overload
def progress(
    iterable_or_total: int, description: str = ..., console: Console | None = ...
) -> Iterator[int]: ...
@overload
def progress(
    iterable_or_total: Iterable[T], description: str = ..., console: Console | None = ...
) -> Iterator[T]: ...
def progress(
    iterable_or_total: Iterable[T] | int,
    description: str = "working",
    console: Console | None = None,
) -> Iterator[T | int]:
    """Iterate ``iterable_or_total`` (an int means ``range(n)``) with a rich progress bar.

    Bars redrawn into a file or a CI log only add noise, so there it yields the items silently.
    """
    items: Iterable[T] | range = (
        range(iterable_or_total) if isinstance(iterable_or_total, int) else iterable_or_total
    )
    console = console or Console()
    if os.environ.get("CI", "").lower() in ("true", "1") or not console.is_terminal:
        return iter(items)
    total = len(items) if isinstance(items, Sized) else None
    return iter(track(items, description=description, total=total, console=console))
