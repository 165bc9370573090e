"""Test-wide settings (offline W&B; one torch thread: tiny nets, no thrashing on 2 cores) and the
fixtures several test modules share. A module's own fixture of the same name overrides one here.
The fixtures import what they build from when they run, so a session that asks for none of them
does not load it."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import torch

from tests.postgres_server import postgres_cluster  # noqa: F401 (a session fixture, asked for by location)

if TYPE_CHECKING:
    from rlkit.data import TrajectoryStore

os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("WANDB_SILENT", "true")
torch.set_num_threads(1)


@pytest.fixture(scope="module")
def store() -> TrajectoryStore:
    """Random trajectories whose true reward is linear in (obs, act) (``reward_builders.linear_store``)."""
    from tests.reward_builders import linear_store

    return linear_store()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.server)])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where a fresh label store lives: a run directory (SQLite), or a new PostgreSQL database's URL."""
    if request.param == "sqlite":
        yield str(tmp_path)
        return
    cluster = request.getfixturevalue("postgres_cluster")
    name = f"store_{uuid.uuid4().hex[:12]}"
    yield cluster.create_database(name)
    cluster.drop_database(name)


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A private temporary folder for a sweep (``sweeps.scratch_dir``), removed afterwards."""
    from tests.sweeps import scratch_dir

    with scratch_dir() as folder:
        yield folder


@pytest.fixture(scope="module")
def dataset() -> Iterator[str]:
    """A small preference dataset's path prefix, made by ``rlkit collect`` + ``label`` once per module."""
    from tests.sweeps import make_dataset, scratch_dir

    with scratch_dir() as folder:
        yield make_dataset(folder)


@pytest.fixture
def browser() -> Iterator[Any]:
    """Headless Chromium (``browser_pages.CHROMIUM``, driven by Playwright); skips where either is missing."""
    from tests.browser_pages import CHROMIUM, CHROMIUM_ARGS

    sync_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing: `make browser-deps` installs Debian's chromium")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()
