"""The experiments' and sweeps' units as one progress bar with an ETA (rlkit.scale.run_units)."""

from __future__ import annotations

import io
import re
from pathlib import Path

from rich.console import Console

from rlkit.logging import ProgressDisplay
from rlkit.scale.unit_graph import Unit
from rlkit.scale.units import Backend, run_units
from tests.sweeps import toy_unit

LINE = r"toy units  {}  elapsed \d:\d\d:\d\d  eta (\d:\d\d:\d\d|\?)"


def test_units_move_one_bar_and_a_resumed_run_starts_it_at_the_units_done(tmp_path: Path) -> None:
    units = [Unit("a", {"dir": str(tmp_path), "value": 1}),
             Unit("b", {"dir": str(tmp_path), "value": 2, "fail": True}),
             Unit("c", {"dir": str(tmp_path), "value": 3}, after=("b",))]  # failed unrun: counted
    out = io.StringIO()
    display = ProgressDisplay(Console(file=out, width=200), every_s=0.0)
    run_units(units, toy_unit, tmp_path / "root", Backend("local", workers=1), name="toy",
              progress=display)
    lines = out.getvalue().splitlines()
    assert [re.fullmatch(LINE.format(f"{n}/3  {p}%"), line) is not None
            for line, (n, p) in zip(lines, [(1, 33), (2, 67)], strict=False)] == [True, True]
    assert re.fullmatch(r"toy units  3/3  100%  done in \d:\d\d:\d\d", lines[-1]) and len(lines) == 3

    out.truncate(0), out.seek(0)
    run_units(units, toy_unit, tmp_path / "root", Backend("local", workers=1), name="toy",
              resume=True, progress=ProgressDisplay(Console(file=out, width=200), every_s=0.0))
    lines = out.getvalue().splitlines()  # a is done: the bar starts at 1/3; b and c run again
    assert re.fullmatch(LINE.format("2/3  67%"), lines[0]) and lines[-1].startswith("toy units  3/3  100%")
    assert run_units([], toy_unit, tmp_path / "empty") == {}
