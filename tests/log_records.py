"""Loggers for tests: one that records every call in memory, and a reader of W&B's offline files."""

from __future__ import annotations

import struct
import time
from pathlib import Path
from typing import Any

from google.protobuf.message import DecodeError


class Collect:
    """An in-memory Logger that records every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def log(self, metrics: dict[str, float], step: int) -> None:
        self.calls.append(("log", (dict(metrics), step)))

    def log_config(self, config: dict[str, Any]) -> None:
        self.calls.append(("config", config))

    def log_image(self, name: str, path: Any, step: int) -> None:
        self.calls.append(("image", (name, path, step)))

    def log_video(self, name: str, path_or_frames: Any, step: int, fps: int = 30) -> None:
        self.calls.append(("video", (name, path_or_frames, step, fps)))

    def close(self) -> None:
        self.calls.append(("close", None))


def read_wandb_records(path: Path, timeout_s: float = 20.0) -> list[Any]:
    """Records of a ``.wandb`` file: a LevelDB-style log (32 KiB blocks) of protobuf records.

    ``run.finish()`` only *informs* wandb-core that the run is done; the core closes the file a
    moment later, so this waits until the final ``exit`` record is on disk.

    Args:
        path: the run's ``run-*.wandb`` file.
        timeout_s: how long to wait for the ``exit`` record.

    Returns:
        The records in file order (``wandb_internal_pb2.Record``), the last one ``exit``.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            records = _parse_wandb_log(path.read_bytes())
            if records and records[-1].WhichOneof("record_type") == "exit":
                return records
        except DecodeError:  # a record half-written at the moment of reading
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} has no exit record after {timeout_s} s")
        time.sleep(0.05)


def _parse_wandb_log(data: bytes) -> list[Any]:
    """The whole records in ``data``, the bytes of a ``.wandb`` file."""
    from wandb.proto import wandb_internal_pb2

    block, pos, chunk, records = 32768, 7, b"", []
    while pos + 7 <= len(data):
        if block - pos % block < 7:
            pos += block - pos % block
            continue
        _, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if length == 0 and kind == 0:
            break
        chunk += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # FULL or LAST piece of a record
            record = wandb_internal_pb2.Record()
            record.ParseFromString(chunk)
            records.append(record)
            chunk = b""
    return records
