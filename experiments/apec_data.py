"""APEC's expensive deterministic inputs as committed data (``experiments/data/<task>/``).

One command, five verbs:

    python experiments/apec_data.py export TASK --from runs/apec/TASK/seed0/demos
    python experiments/apec_data.py export-heldout TASK --from runs/apec/TASK/heldout
    python experiments/apec_data.py check [TASK ...]
    python experiments/apec_data.py regenerate TASK [--work runs/apec_data]
    python experiments/apec_data.py regenerate-heldout TASK [--work runs/apec_data]

``export`` writes a finished demos stage of ``experiments/apec.py`` (its demonstrator's
checkpoints and the demo picked from them) as ``rlkit.apec.inputs`` data: the demos as the stage
wrote them, each checkpoint's actor as float32 safetensors, a manifest with every file's SHA-256.
``export-heldout`` adds the task's finished shared held-out set (``heldout.npz``: float16
observations and actions, the precision it is built at). ``check`` verifies every committed folder
(checksums, the demos and held-out set load, each actor loads) and prints one JSON line per task.
``regenerate`` trains the task's demonstrator again from the experiment's config (``--config``,
default ``experiments/configs/apec.yaml``; hours of CPU: a resumable run directory under
``--work``), exports it to a scratch folder and compares it with the committed data: every actor
file byte for byte, the demos array by array (an ``.npz`` records the time it was written, so its
bytes differ while its arrays do not), the manifest's fields. ``regenerate-heldout`` builds the
held-out set again from the committed demos and actors (its own AIL run: over an hour of CPU,
resumable under ``--work``) and compares it array by array with the committed one. Both compare
equal on a machine of the kind that made the data (an AVX2-only AMD EPYC): torch's CPU kernels
round differently on other instruction sets, even pinned to their AVX2 paths (an AIL run on an
AVX-512 EPYC parted from the AVX2 one's at its first SAC update, ``docs/results/apec.md``), so
elsewhere they report the arrays that differ.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).resolve().parent / "data"
CONFIG = Path(__file__).resolve().parent / "configs" / "apec.yaml"


def task_folder(task: str) -> Path:
    from experiments.apec import file_name

    return DATA / file_name(task)


def demos_settings(task: str, config_path: Path) -> tuple[Any, Any, int]:
    """The task's env and demos settings and the demo seed, as ``experiments/apec.py`` runs them."""
    from experiments.apec import task_config

    config, task_settings = experiment_task(task, config_path)
    pipeline = task_config(config, task_settings, config.demo_seed)
    return pipeline.env, pipeline.demos, config.demo_seed


def export(task: str, demos_dir: Path, config_path: Path) -> dict[str, Any]:
    from rlkit.apec.inputs import export_inputs

    _, settings, seed = demos_settings(task, config_path)
    recorded = settings.model_dump(mode="json") | {"seed": seed}
    manifest = export_inputs(task, demos_dir, task_folder(task), recorded)
    return {"task": task, "written": str(manifest.parent)}


def experiment_task(task: str, config_path: Path) -> tuple[Any, Any]:
    """The experiment's config and the task's settings in it."""
    from experiments.apec import ApecExperimentConfig
    from rlkit.config import load_config

    config = load_config(ApecExperimentConfig, config_path, [])
    task_settings = next((t for t in config.tasks if t.id == task), None)
    if task_settings is None:
        raise SystemExit(f"{task}: not a task of {config_path} ({[t.id for t in config.tasks]})")
    return config, task_settings


def export_heldout(task: str, heldout_dir: Path, config_path: Path) -> dict[str, Any]:
    from experiments.apec import heldout_settings, task_config
    from rlkit.apec.inputs import export_heldout as add_heldout

    config, task_settings = experiment_task(task, config_path)
    settings = heldout_settings(task_config(config, task_settings, config.demo_seed))
    manifest = add_heldout(task_folder(task), heldout_dir, settings)
    return {"task": task, "written": str(manifest)}


def check(task: str) -> dict[str, Any]:
    from rlkit.apec.inputs import load_heldout, load_inputs

    inputs = load_inputs(task_folder(task))
    demos = inputs.demos()
    for step in inputs.steps:
        inputs.actor(step)
    size = sum(p.stat().st_size for p in inputs.folder.rglob("*") if p.is_file())
    heldout = load_heldout(inputs)[0] if "heldout" in inputs.manifest else None
    return {"task": task, "checkpoints": inputs.steps, "demo_returns": [float(t.ret) for t in demos],
            "demo_checkpoint_step": inputs.manifest["demo_checkpoint_step"],
            "heldout_trajectories": None if heldout is None else len(heldout), "bytes": size}


def differences(committed: Path, fresh: Path) -> list[str]:
    """What differs between two inputs folders (empty: the same data)."""
    from rlkit.apec.inputs import HELDOUT_FILE, load_inputs
    from rlkit.persistence.arrays import load_npz

    old, new = load_inputs(committed).manifest, load_inputs(fresh).manifest
    found = [f"manifest field {key!r}" for key in sorted(set(old) | set(new))
             if key not in ("sha256", "header_sha256", "heldout") and old.get(key) != new.get(key)]
    for name, digest in old["sha256"].items():
        if name == HELDOUT_FILE:
            continue
        if name.endswith(".npz"):
            a, b = load_npz(committed / name), load_npz(fresh / name)
            if a.keys() != b.keys() or any(not np.array_equal(a[k], b[k]) for k in a):
                found.append(name)
        elif new["sha256"].get(name) != digest:
            found.append(name)
    return found


def regenerate(task: str, work: Path, config_path: Path) -> dict[str, Any]:
    from rlkit.apec.inputs import export_inputs
    from rlkit.runners.apec import run_demos

    env, settings, seed = demos_settings(task, config_path)
    demos_dir = work / task_folder(task).name / "demos"
    run_demos(env, settings, seed, demos_dir)  # resumable: rerun to go on
    with tempfile.TemporaryDirectory() as scratch:
        export_inputs(task, demos_dir, scratch, settings.model_dump(mode="json") | {"seed": seed})
        found = differences(task_folder(task), Path(scratch))
    return {"task": task, "identical": not found, "differences": found}


def regenerate_heldout(task: str, work: Path, config_path: Path) -> dict[str, Any]:
    from experiments.apec import heldout_settings, task_config
    from rlkit.apec.inputs import install_demos, load_heldout, load_inputs
    from rlkit.runners.apec import run_heldout, venv_factory

    config, task_settings = experiment_task(task, config_path)
    pipeline = task_config(config, task_settings, config.demo_seed)
    committed = load_inputs(task_folder(task))
    folder = work / task_folder(task).name
    demos = install_demos(committed, folder / "demos")
    store, _, sources = run_heldout(pipeline, venv_factory(pipeline.env), demos, folder / "demos",
                                    folder / "heldout")  # resumable: rerun to go on
    old_store, old_sources = load_heldout(committed)
    found = [] if committed.manifest["heldout"]["settings"] == heldout_settings(pipeline) else ["settings"]
    old_arrays, new_arrays = old_store.arrays(), store.arrays()
    found += [name for name in sorted(set(old_arrays) | set(new_arrays))
              if name not in old_arrays or name not in new_arrays
              or not np.array_equal(old_arrays[name], new_arrays[name])]
    if not np.array_equal(old_sources, sources):
        found.append("source")
    return {"task": task, "identical": not found, "differences": found}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(dest="verb", required=True)
    made = verbs.add_parser("export", help="write a finished demos stage as committed data")
    made.add_argument("task")
    made.add_argument("--from", dest="source", type=Path, required=True)
    added = verbs.add_parser("export-heldout", help="add a finished held-out set to the data")
    added.add_argument("task")
    added.add_argument("--from", dest="source", type=Path, required=True)
    checked = verbs.add_parser("check", help="verify the committed data")
    checked.add_argument("tasks", nargs="*")
    again = verbs.add_parser("regenerate", help="train again and compare with the committed data")
    again.add_argument("task")
    again.add_argument("--work", type=Path, default=Path("runs/apec_data"))
    rebuilt = verbs.add_parser("regenerate-heldout", help="build the held-out set again and compare")
    rebuilt.add_argument("task")
    rebuilt.add_argument("--work", type=Path, default=Path("runs/apec_data"))
    for sub in (made, added, again, rebuilt):
        sub.add_argument("--config", type=Path, default=CONFIG)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    if args.verb == "export":
        print(json.dumps(export(args.task, args.source, args.config)))
        return 0
    if args.verb == "check":
        tasks = args.tasks or [json.loads((f / "inputs.json").read_text())["task"]
                               for f in sorted(DATA.iterdir()) if (f / "inputs.json").is_file()]
        for task in tasks:
            print(json.dumps(check(task)))
        return 0
    if args.verb == "export-heldout":
        print(json.dumps(export_heldout(args.task, args.source, args.config)))
        return 0
    regenerated = regenerate if args.verb == "regenerate" else regenerate_heldout
    result = regenerated(args.task, args.work, args.config)
    print(json.dumps(result))
    return 0 if result["identical"] else 1


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `experiments` by name
    from rlkit.scale.command import exit_status

    sys.exit(exit_status(main, Path(__file__).name))
