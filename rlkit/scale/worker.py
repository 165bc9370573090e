"""``python -m rlkit.scale.worker JOB.json RESULT.json``: run one unit (the local backend's
process). JOB names the unit function (module or file, and name) and the unit; the result (status,
result, error, seconds) is written to RESULT atomically."""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from typing import Any

from rlkit.scale.unit_graph import Unit
from rlkit.scale.units import execute


def load_function(ref: dict[str, str]) -> Any:
    if "module" in ref:
        target: Any = importlib.import_module(ref["module"])
    else:  # the driver's script: imported from its file under another name (no main block)
        spec = importlib.util.spec_from_file_location("__rlkit_unit_main__", ref["path"])
        assert spec is not None and spec.loader is not None
        target = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = target
        spec.loader.exec_module(target)
    for part in ref["name"].split("."):
        target = getattr(target, part)
    return target


def main(argv: list[str]) -> int:
    from rlkit.persistence import atomic_write_json

    job_path, result_path = argv
    job = json.loads(open(job_path, encoding="utf-8").read())
    fn = load_function(job["fn"])
    unit = Unit(job["unit"]["id"], job["unit"]["payload"], tuple(job["unit"]["after"]))
    result = execute(fn, unit, lambda _metrics: None)
    atomic_write_json(result_path, result.to_json())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
