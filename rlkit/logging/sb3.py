"""Forward what Stable-Baselines3 records (rollout/ep_rew_mean, train/loss) to an rlkit Logger."""

from __future__ import annotations

from typing import Any

import numpy as np
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.logger import KVWriter
from stable_baselines3.common.logger import Logger as Sb3Logger
from stable_baselines3.common.utils import configure_logger

from rlkit.logging.base import Logger

# Keep a key out of the bridge with `logger.record(key, value, exclude="rlkit")`.
BRIDGE_FORMAT = "rlkit"


class Sb3LogBridge(KVWriter):
    """An SB3 output format that passes each dump's numeric values to ``logger`` at SB3's step.

    Strings, figures, videos and hyper-parameter objects are SB3-specific and are not forwarded,
    and neither is a key recorded with ``exclude="rlkit"``.

    Args:
        logger: the rlkit logger the values go to; the caller closes it.
    """

    def __init__(self, logger: Logger) -> None:
        self.logger = logger

    def write(
        self,
        key_values: dict[str, Any],
        key_excluded: dict[str, tuple[str, ...]],
        step: int = 0,
    ) -> None:
        metrics: dict[str, float | int] = {}
        for key, value in key_values.items():
            if BRIDGE_FORMAT in (key_excluded.get(key) or ()):
                continue
            number = _scalar(value)
            if number is not None:
                metrics[key] = number
        if metrics:
            self.logger.log(metrics, step)

    def close(self) -> None:
        """The rlkit logger belongs to the caller, who closes it when the whole run ends."""


def _scalar(value: Any) -> float | int | None:
    if isinstance(value, bool | str):
        return None
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value)
    if hasattr(value, "numel") and value.numel() == 1:  # a torch scalar
        return float(value.item())
    return None


def attach_to_sb3(model: BaseAlgorithm, logger: Logger, tb_log_name: str = "") -> Sb3Logger:
    """Give ``model`` the outputs SB3 would have chosen (stdout if verbose, TensorBoard if
    ``tensorboard_log``) plus the bridge, so SB3's metrics also land in the rlkit run.

    Args:
        model: the SB3 algorithm; its logger is replaced.
        logger: the rlkit logger that also receives SB3's records.
        tb_log_name: the TensorBoard run name; empty means the algorithm's class name.

    Returns:
        The SB3 logger now set on ``model``.
    """
    if model.verbose >= 1 or model.tensorboard_log is not None:
        sb3_logger = configure_logger(
            model.verbose, model.tensorboard_log, tb_log_name or type(model).__name__
        )
    else:  # SB3 would make an empty temporary folder here; nothing is written there anyway
        sb3_logger = Sb3Logger(folder=None, output_formats=[])
    sb3_logger.output_formats.append(Sb3LogBridge(logger))
    model.set_logger(sb3_logger)
    return sb3_logger
