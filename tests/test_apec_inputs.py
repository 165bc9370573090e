"""APEC's inputs as data: a demos stage exported, loaded back, its actors acting as the checkpoints
did; damage refused by name; and the inputs committed under ``experiments/data/`` load and
reproduce their own demo."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from experiments.apec_data import DATA, differences
from rlkit.ail.demos import demos_from_policy
from rlkit.apec.demonstrator import demonstrator_checkpoints, load_demonstrator
from rlkit.apec.inputs import MANIFEST, export_inputs, load_inputs
from rlkit.cli import main
from rlkit.errors import FileFormatError
from rlkit.factories.algorithms import ALGORITHMS
from tests.tiny_envs import POINT_ID

STAGE = ["env.horizon=20", "env.n_envs=1", "demos.algo=sac", "demos.total_timesteps=1200",
         "demos.checkpoint_every=400", "demos.baseline=random", "demos.eval_episodes=2",
         "demos.kwargs={learning_starts: 100, batch_size: 64, learning_rate: 0.003, "
         "policy_kwargs: {net_arch: [16, 16]}}"]


@pytest.fixture(scope="module")
def stage(tmp_path_factory) -> Path:
    """A finished `rlkit demos` stage of a SAC demonstrator on the tiny point env."""
    run_dir = tmp_path_factory.mktemp("demos")
    assert main(["demos", f"env.id={POINT_ID}", *STAGE, "--run-dir", str(run_dir), "--logger", "jsonl",
                 "--overwrite"]) == 0
    return run_dir


def venv():
    from rlkit.apec.config import ApecEnvConfig
    from rlkit.runners.apec import venv_factory

    return venv_factory(ApecEnvConfig(id=POINT_ID, horizon=20, n_envs=1))(7)


def test_an_exported_actor_acts_exactly_as_its_checkpoint(stage, tmp_path):
    export_inputs(POINT_ID, stage, tmp_path, {"algo": "sac"})
    inputs = load_inputs(tmp_path)
    checkpoints = demonstrator_checkpoints(stage / "demonstrator")
    assert inputs.steps == [400, 800, 1200] == [int(p.stem[5:]) for p in checkpoints]
    for step, path in zip(inputs.steps, checkpoints, strict=True):
        full = demos_from_policy(venv(), load_demonstrator(ALGORITHMS["sac"], path), 2,
                                 np.random.default_rng(0), seed=3)
        kept = demos_from_policy(venv(), inputs.actor(step), 2, np.random.default_rng(0), seed=3)
        for a, b in zip(full, kept, strict=True):
            assert np.array_equal(a.obs, b.obs) and np.array_equal(a.acts, b.acts)
    (demo,) = inputs.demos()
    assert inputs.manifest["demo_returns"] == [pytest.approx(float(demo.ret))]
    assert differences(tmp_path, tmp_path) == []


def test_a_damaged_or_missing_file_is_refused_by_name(stage, tmp_path):
    export_inputs(POINT_ID, stage, tmp_path, {"algo": "sac"})
    for path in [tmp_path / MANIFEST, tmp_path / "demos.npz", tmp_path / "demos.json",
                 *sorted((tmp_path / "demonstrator").glob("*.safetensors"))]:
        good = path.read_bytes()
        data = bytearray(good)
        data[len(data) // 2] ^= 0x01
        path.write_bytes(bytes(data))
        with pytest.raises(FileFormatError, match=path.name):
            load_inputs(tmp_path)
        path.unlink()
        with pytest.raises(FileFormatError, match=path.name):
            load_inputs(tmp_path)
        path.write_bytes(good)
    load_inputs(tmp_path)
    with pytest.raises(Exception, match="no demonstrator checkpoint at step 5"):
        load_inputs(tmp_path).actor(5)


def test_a_regenerated_folder_that_differs_says_what(stage, tmp_path):
    export_inputs(POINT_ID, stage, tmp_path / "a", {"algo": "sac"})
    export_inputs(POINT_ID, stage, tmp_path / "b", {"algo": "sac", "seed": 1})
    later = demonstrator_checkpoints(stage / "demonstrator")[-1]
    actor = tmp_path / "b" / "demonstrator" / f"{later.stem}.safetensors"
    first = tmp_path / "b" / "demonstrator" / "step_000000400.safetensors"
    actor.write_bytes(first.read_bytes())  # another checkpoint's weights under this name
    manifest = json.loads((tmp_path / "b" / MANIFEST).read_text())
    checksums = manifest["sha256"]
    checksums[f"demonstrator/{actor.name}"] = checksums["demonstrator/step_000000400.safetensors"]
    from rlkit.persistence.formats import write_header

    write_header(tmp_path / "b" / MANIFEST, "rlkit.apec-inputs",
                 {k: v for k, v in manifest.items() if k not in ("sha256", "format", "header_sha256")},
                 covers=sorted(p for p in (tmp_path / "b").rglob("*") if p.is_file() and p.name != MANIFEST))
    assert differences(tmp_path / "a", tmp_path / "b") == ["manifest field 'settings'",
                                                           f"demonstrator/{actor.name}"]


COMMITTED = sorted(f for f in DATA.iterdir() if (f / MANIFEST).is_file()) if DATA.is_dir() else []


@pytest.mark.parametrize("folder", COMMITTED, ids=[f.name for f in COMMITTED])
def test_the_committed_inputs_load_and_their_demo_checkpoint_replays_the_demo(folder):
    """Every checksum holds, every actor loads, and the demo checkpoint's actor, rolled out as the
    demos stage rolled it out, gives the committed demo step for step."""
    from experiments.apec_data import demos_settings
    from rlkit.runners.apec import venv_factory

    inputs = load_inputs(folder)
    for step in inputs.steps:
        inputs.actor(step)
    env, settings, seed = demos_settings(inputs.manifest["task"], Path("experiments/configs/apec.yaml"))
    assert inputs.manifest["settings"] == settings.model_dump(mode="json") | {"seed": seed}
    (demo,) = inputs.demos()
    actor = inputs.actor(inputs.manifest["demo_checkpoint_step"])
    tries = [demos_from_policy(venv_factory(env)(seed + 1), actor, 1, np.random.default_rng(seed),
                               seed=seed + 1000 + attempt)[0] for attempt in range(2)]
    assert any(np.array_equal(t.obs, demo.obs) and np.array_equal(t.acts, demo.acts) for t in tries)
