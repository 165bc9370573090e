"""Run the labelling app under uvicorn (``rlkit serve``), refusing unsafe binds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlkit.human.security import check_bind
from rlkit.human.settings import ServeConfig
from rlkit.human.store import LabelStore


def open_store(config: ServeConfig) -> LabelStore:
    if config.database is None and config.run_dir is None:
        from rlkit.config import ConfigError

        raise ConfigError("`rlkit serve` needs run_dir=... (the run to label) or database=<URL>")
    return LabelStore(config.database or Path(config.run_dir or "."))


def serve(config: ServeConfig, parser: Any | None = None) -> None:
    """Serve until interrupted; every acknowledged label is already committed to the store."""
    import uvicorn

    from rlkit.human.app import create_app

    check_bind(config.host, config.token)
    store = open_store(config)
    app = create_app(store, config, parser=parser)
    print(f"rlkit serve: http://{config.host}:{config.port}/  (store: {store.url})", flush=True)
    try:
        uvicorn.run(app, host=config.host, port=config.port, log_level="warning", access_log=False)
    finally:
        store.close()
