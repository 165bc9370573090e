"""What a failed unit's status says of its error (``rlkit.scale.units.execute``)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from rlkit.config import StrictModel
from rlkit.scale.unit_graph import Unit
from rlkit.scale.units import UnitError, execute


class Inner(StrictModel):
    lr: float = Field(1e-3, gt=0)


class Settings(StrictModel):
    rounds: int = Field(1, ge=1)
    inner: Inner = Inner()


def validate_old_layout(unit: Unit, report: Any) -> dict[str, Any]:
    return {"settings": Settings.model_validate(unit.payload).rounds}


def raise_unit_error(unit: Unit, report: Any) -> dict[str, Any]:
    raise UnitError("the demos are missing")


def divide_by_zero(unit: Unit, report: Any) -> dict[str, Any]:
    return {"ratio": 1 / len(unit.payload)}


def no_report(metrics: dict[str, float]) -> None:
    return None


def test_a_config_that_does_not_validate_is_a_config_error_naming_each_field() -> None:
    payload = {"rounds": 0, "old_name": 1, "inner": {"lr": -1.0}}
    result = execute(validate_old_layout, Unit("u", payload), no_report)
    assert result.status == "failed" and result.error is not None
    assert result.error == ("ConfigError: Settings.rounds is out of range: 0 (must be >= 1); "
                            "Settings.inner.lr is out of range: -1.0 (must be > 0.0); "
                            "Settings.old_name is not a field of Settings")


def test_another_error_keeps_the_traceback_s_last_frames() -> None:
    result = execute(divide_by_zero, Unit("u"), no_report)
    assert result.error is not None
    first, *frames = result.error.splitlines()
    assert first == "ZeroDivisionError: division by zero"
    assert "in divide_by_zero" in "\n".join(frames)


def test_a_unit_error_is_its_line_alone() -> None:
    result = execute(raise_unit_error, Unit("u"), no_report)
    assert result.error == "UnitError: the demos are missing"
