"""Run the labelling app under uvicorn (``rlkit serve``), refusing unsafe binds."""

from __future__ import annotations

from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import TYPE_CHECKING

from rlkit.errors import StateError
from rlkit.extras import extra
from rlkit.human.security import check_bind
from rlkit.human.settings import ServeConfig
from rlkit.human.store import DB_NAME, LabelStore

if TYPE_CHECKING:
    from rlkit.m3hf.specs import FeedbackParser


def open_store(config: ServeConfig) -> LabelStore:
    if config.database is None and config.run_dir is None:
        from rlkit.errors import ConfigError

        raise ConfigError("`rlkit serve` needs run_dir=... (the run to label) or database=<URL>")
    # The run directory may not exist yet: name the file, so it is not taken for a database file.
    return LabelStore(config.database or Path(config.run_dir or ".") / DB_NAME)


def serve(config: ServeConfig, parser: FeedbackParser | None = None) -> None:
    """Serve until interrupted; every acknowledged label is already committed to the store."""
    with extra("human"):
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


def start_server_process(config: ServeConfig, timeout_s: float = 60.0) -> BaseProcess:
    """``serve(config)`` in a forked child process, returned once it answers (benchmarks, crash tests).

    Forking reuses this process's imports, so a restart costs milliseconds, not a fresh
    interpreter's import of the whole stack. The child opens its own database connections.
    """
    import multiprocessing
    import time

    with extra("human"):
        import httpx

    process = multiprocessing.get_context("fork").Process(target=serve, args=(config,), daemon=True)
    process.start()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not process.is_alive():
            raise StateError(f"the server exited with code {process.exitcode}")
        try:
            httpx.get(f"http://{config.host}:{config.port}/api/scale", timeout=1.0)
            return process
        except httpx.TransportError:
            time.sleep(0.02)
    process.kill()
    raise TimeoutError(f"the server on port {config.port} did not answer within {timeout_s} s")


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
