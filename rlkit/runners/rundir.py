"""Run directories: one per command invocation, holding config, metrics, models and plots."""

from __future__ import annotations

import time
from pathlib import Path

from pydantic import BaseModel

from rlkit.config import save_config


def make_run_dir(command: str, run_dir: str | None, config: BaseModel) -> Path:
    """``runs/<command>-<time>`` unless given; writes the resolved ``config.yaml`` first."""
    if run_dir is None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = Path("runs") / f"{command}-{stamp}"
        suffix = 1
        while path.exists():
            suffix += 1
            path = Path("runs") / f"{command}-{stamp}-{suffix}"
    else:
        path = Path(run_dir)
    path.mkdir(parents=True, exist_ok=True)
    save_config(config, path / "config.yaml")
    return path
