"""One ``Logger`` interface over W&B (offline by default), TensorBoard, the console and JSONL,
plus the bridge that brings Stable-Baselines3's own metrics into the same run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlkit._lazy import lazy_exports

if TYPE_CHECKING:
    from rlkit.logging.base import (
        ArtifactLogger,
        Logger,
        MultiLogger,
        TableLogger,
        log_artifacts,
        log_table,
        scalar_metrics,
        video_file,
    )
    from rlkit.logging.factory import BACKENDS, make_logger, wandb_labels
    from rlkit.logging.local import (
        METRICS_FILE,
        ConsoleLogger,
        JsonlLogger,
        TensorBoardLogger,
        console_view,
        metrics_size,
        rewind_metrics,
    )
    from rlkit.logging.progress import (
        ProgressDisplay,
        ProgressLogger,
        ProgressTask,
        Track,
        progress_of,
    )
    from rlkit.logging.sb3 import Sb3LogBridge, attach_to_sb3
    from rlkit.logging.segments import log_segment_pair
    from rlkit.logging.wandb_logger import WandbLogger, resolve_wandb_mode

__all__ = [
    "BACKENDS",
    "ArtifactLogger",
    "METRICS_FILE",
    "ConsoleLogger",
    "JsonlLogger",
    "Logger",
    "MultiLogger",
    "ProgressDisplay",
    "ProgressLogger",
    "ProgressTask",
    "Sb3LogBridge",
    "TableLogger",
    "TensorBoardLogger",
    "Track",
    "WandbLogger",
    "attach_to_sb3",
    "console_view",
    "log_artifacts",
    "log_segment_pair",
    "log_table",
    "make_logger",
    "metrics_size",
    "progress_of",
    "resolve_wandb_mode",
    "rewind_metrics",
    "scalar_metrics",
    "video_file",
    "wandb_labels",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "rlkit.logging.base": ["ArtifactLogger", "Logger", "MultiLogger", "TableLogger", "log_artifacts",
                           "log_table", "scalar_metrics", "video_file"],
    "rlkit.logging.factory": ["BACKENDS", "make_logger", "wandb_labels"],
    "rlkit.logging.local": ["METRICS_FILE", "ConsoleLogger", "JsonlLogger", "TensorBoardLogger",
                            "console_view", "metrics_size", "rewind_metrics"],
    "rlkit.logging.progress": ["ProgressDisplay", "ProgressLogger", "ProgressTask", "Track",
                               "progress_of"],
    "rlkit.logging.sb3": ["Sb3LogBridge", "attach_to_sb3"],
    "rlkit.logging.segments": ["log_segment_pair"],
    "rlkit.logging.wandb_logger": ["WandbLogger", "resolve_wandb_mode"],
})
