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
from rlkit.apec.inputs import (
    MANIFEST,
    demonstrator_policies,
    export_heldout,
    export_inputs,
    float16_store,
    load_heldout,
    load_inputs,
    refuse_other_settings,
)
from rlkit.cli import main
from rlkit.data import Trajectory, TrajectoryStore
from rlkit.errors import ConfigError, FileFormatError, InvalidDataError
from rlkit.factories.algorithms import ALGORITHMS
from rlkit.persistence.arrays import save_npz
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
    # the stage draws up to demo_tries episodes of a checkpoint until one lies within the tolerance
    tries = [demos_from_policy(venv_factory(env)(seed + 1), actor, 1, np.random.default_rng(seed),
                               seed=seed + 1000 + attempt)[0] for attempt in range(settings.demo_tries)]
    assert any(np.array_equal(t.obs, demo.obs) and np.array_equal(t.acts, demo.acts) for t in tries)


def test_the_heldout_demonstrators_are_every_checkpoint_but_the_demos_own_in_either_form(stage, tmp_path):
    """A held-out set never holds rollouts of the checkpoint the demo came from; the others keep
    their index among all checkpoints (their seeds), and a stage's SB3 checkpoint and its exported
    actor act alike."""
    import pickle

    export_inputs(POINT_ID, stage, tmp_path, {"algo": "sac"})
    demo_step = load_inputs(tmp_path).manifest["demo_checkpoint_step"]
    others = [k for k, step in enumerate([400, 800, 1200]) if step != demo_step]
    from_stage, from_inputs = demonstrator_policies(stage, "sac"), demonstrator_policies(tmp_path, "sac")
    assert len(others) == 2 and [k for k, _ in from_stage] == others == [k for k, _ in from_inputs]
    for (_, sb3), (_, stored) in zip(from_stage, pickle.loads(pickle.dumps(from_inputs)), strict=True):
        a, b = (demos_from_policy(venv(), load(), 1, np.random.default_rng(0), seed=3)[0]
                for load in (sb3, stored))
        assert np.array_equal(a.obs, b.obs) and np.array_equal(a.acts, b.acts)
    assert demonstrator_policies(tmp_path / "given-demos", "sac") == []


def built_heldout(folder: Path, rounded: bool = True) -> TrajectoryStore:
    """A held-out stage's files (``store.npz``, ``sources.npz``) of two made-up trajectories."""
    rng = np.random.default_rng(0)
    store = TrajectoryStore()
    for n in (5, 7):
        store.append(Trajectory(obs=(10 * rng.normal(size=(n + 1, 3))).astype(np.float32),
                             acts=rng.uniform(-1, 1, size=(n, 2)).astype(np.float32),
                             rews=rng.normal(size=n).astype(np.float32)))
    store = float16_store(store) if rounded else store
    folder.mkdir(parents=True, exist_ok=True)
    store.save(folder / "store.npz")
    save_npz(folder / "sources.npz", {"source": np.array([0, 2])})
    return store


def test_a_heldout_set_is_kept_as_data_at_the_precision_it_is_built_at(stage, tmp_path):
    export_inputs(POINT_ID, stage, tmp_path / "inputs", {"algo": "sac"})
    raw = built_heldout(tmp_path / "raw", rounded=False)
    with pytest.raises(InvalidDataError, match="not at float16 precision"):
        export_heldout(tmp_path / "inputs", tmp_path / "raw", {"ail_seed": 1000})
    rounded = float16_store(raw)
    assert not np.array_equal(rounded[0].obs, raw[0].obs) and rounded[0].obs.dtype == np.float32
    assert np.allclose(rounded[0].obs, raw[0].obs, rtol=1e-3, atol=1e-4)
    assert np.array_equal(rounded[1].rews, raw[1].rews)  # the true rewards stay exact
    store = built_heldout(tmp_path / "built")
    export_heldout(tmp_path / "inputs", tmp_path / "built", {"ail_seed": 1000})
    inputs = load_inputs(tmp_path / "inputs")
    assert inputs.manifest["heldout"] == {"file": "heldout.npz", "settings": {"ail_seed": 1000},
                                          "trajectories": 2, "sources": {"0": 1, "2": 1}}
    back, sources = load_heldout(inputs)
    assert sources.tolist() == [0, 2]
    for name, array in store.arrays().items():
        assert np.array_equal(back.arrays()[name], array), name
    assert differences(tmp_path / "inputs", tmp_path / "inputs") == []
    path = tmp_path / "inputs" / "heldout.npz"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(FileFormatError, match="heldout.npz"):
        load_inputs(tmp_path / "inputs")
    export_inputs(POINT_ID, stage, tmp_path / "bare", {"algo": "sac"})
    with pytest.raises(InvalidDataError, match="no held-out set"):
        load_heldout(load_inputs(tmp_path / "bare"))


def test_inputs_made_with_other_settings_are_refused_naming_each():
    recorded = {"total_timesteps": 400, "kwargs": {"batch_size": 256}, "device": "cpu"}
    refuse_other_settings(recorded, recorded | {"device": "cuda"}, "demos", Path("inputs.json"))
    with pytest.raises(ConfigError, match=r"inputs.json: its demos were made with other settings than this "
                                          r"run's \(kwargs.batch_size: 256 there, 64 here; seed: None "
                                          r"there, 1 here\)"):
        refuse_other_settings(recorded, recorded | {"kwargs": {"batch_size": 64}, "seed": 1}, "demos",
                              Path("inputs.json"))


def test_the_experiment_starts_from_committed_inputs_and_trains_no_demonstrator_again(stage, tmp_path):
    """With a task's inputs (and held-out set) under ``inputs``, its demos unit copies them and its
    held-out unit reads the committed set: no demonstrator or held-out AIL run; inputs made with
    other settings are refused."""
    from experiments.apec import (
        ApecExperimentConfig,
        TaskSettings,
        file_name,
        heldout_settings,
        run_task_demos,
        run_task_heldout,
        task_config,
    )

    config = ApecExperimentConfig(inputs=str(tmp_path / "data"), seeds=[0], shared_heldout=True,
                                  tasks=[TaskSettings(id=POINT_ID, overrides=["env.horizon=20"])])
    task = config.tasks[0]
    pipeline = task_config(config, task, 0)
    folder = tmp_path / "data" / file_name(POINT_ID)
    export_inputs(POINT_ID, stage, folder, pipeline.demos.model_dump(mode="json") | {"seed": 1})
    with pytest.raises(ConfigError, match=r"seed: 1 there, 0 here"):
        run_task_demos(config, task, tmp_path / "runs")
    export_inputs(POINT_ID, stage, folder, pipeline.demos.model_dump(mode="json") | {"seed": 0})
    done = run_task_demos(config, task, tmp_path / "runs")
    demos_dir = tmp_path / "runs" / POINT_ID / "seed0" / "demos"
    assert done["from"] == str(folder) and not (demos_dir / "demonstrator" / "resume").exists()
    assert [t.ret for t in load_inputs(demos_dir).demos()] == done["returns"]
    store = built_heldout(tmp_path / "built")
    export_heldout(folder, tmp_path / "built", heldout_settings(pipeline))
    held = run_task_heldout(config, task, tmp_path / "runs")
    heldout = tmp_path / "runs" / POINT_ID / "heldout"
    assert held["trajectories"] == 2 and not (heldout / "ail").exists()
    assert np.array_equal(TrajectoryStore.load(heldout / "store.npz").arrays()["obs"], store.arrays()["obs"])
    other = config.model_copy(update={"tasks": [TaskSettings(id=POINT_ID, overrides=[
        "env.horizon=20", "heldout.episodes_per_policy=9"])]})
    with pytest.raises(ConfigError, match=r"held-out set were made with other settings.*"
                                          r"heldout.episodes_per_policy: \d+ there, 9 here"):
        run_task_heldout(other, other.tasks[0], tmp_path / "other")
