"""One run-state module serves every command that resumes (``rlkit.persistence.run_state``).

The module itself: a point commits its header last (a killed write leaves the previous point), a
damaged payload file is refused by name, a changed config is refused naming the setting. Then each
resumable command: a real point of it (the smallest runs the commands' own tests use) read back
with the shared reader, and no module but ``run_state`` writing or reading a point's header.
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import numpy as np
import pytest
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv

from rlkit.errors import ConfigError, FileFormatError, InvalidDataError
from rlkit.persistence import FORMATS, run_state, write_header
from rlkit.persistence.resume_config import MAY_CHANGE
from rlkit.persistence.run_state import POINT_KINDS, commit, read_point

ROOT = Path(__file__).resolve().parents[1]
KIND = "rlkit.sb3-resume"  # any point kind serves the module's own tests


def point(folder: Path, name: str, payload: bytes, config: dict[str, object]) -> Path:
    """A point of one payload file ``<name>.bin``, committed as ``<name>.json``."""
    (folder / f"{name}.bin").write_bytes(payload)
    commit(folder / f"{name}.json", KIND, "resumable", config, {"steps": len(payload)},
           covers=[folder / f"{name}.bin"])
    return folder / f"{name}.json"


# ------------------------------------------------------------------ the module

def test_a_point_reads_back_its_command_config_state_and_files(tmp_path):
    path = point(tmp_path, "a", b"payload", {"seed": 1})
    read = read_point(path, KIND, "resumable", {"seed": 1}, {"steps": int})
    assert (read.command, read.config, read.state) == ("resumable", {"seed": 1}, {"steps": 7})
    assert set(read.files) == {"a.bin"}


def test_a_damaged_payload_file_is_refused_by_name(tmp_path):
    path = point(tmp_path, "a", b"payload", {"seed": 1})
    (tmp_path / "a.bin").write_bytes(b"paylaod")
    with pytest.raises(FileFormatError, match=rf"^{tmp_path / 'a.bin'}: damaged: its SHA-256 differs"):
        read_point(path, KIND, "resumable", {"seed": 1})
    (tmp_path / "a.bin").unlink()
    with pytest.raises(FileFormatError, match=r"a.bin: missing \(listed in a.json\)"):
        read_point(path, KIND, "resumable", {"seed": 1})
    assert read_point(path, KIND, "resumable", {"seed": 1}, verify=False).state == {"steps": 7}


def test_a_killed_commit_leaves_the_previous_point_whole(tmp_path, monkeypatch):
    path = point(tmp_path, "a", b"first", {"seed": 1})
    before = path.read_bytes()
    (tmp_path / "b.bin").write_bytes(b"second, longer")  # the next point's payload, under its own name

    def killed(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt  # the process dies as the header is renamed into place

    monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        commit(path, KIND, "resumable", {"seed": 1}, {"steps": 14}, covers=[tmp_path / "b.bin"])
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin", "a.json", "b.bin"]  # no temp file
    assert read_point(path, KIND, "resumable", {"seed": 1}).state == {"steps": 5}


def test_a_changed_config_is_refused_naming_the_setting_and_the_run(tmp_path):
    path = point(tmp_path, "a", b"payload", {"seed": 1, "net": {"hidden": [8]}})
    with pytest.raises(ConfigError, match=rf"{path} holds a resumable run .*\['net.hidden'\] "
                                          r"\(net.hidden: saved \[8\], now \[16\]\)"):
        read_point(path, KIND, "resumable", {"seed": 1, "net": {"hidden": [16]}})
    with pytest.raises(ConfigError, match=r"run_dir holds a resumable run .*\['seed'\]"):
        read_point(path, KIND, "resumable", {"seed": 2, "net": {"hidden": [8]}}, where="run_dir")


def test_a_point_of_another_command_another_version_or_written_by_hand_is_refused(tmp_path):
    path = point(tmp_path, "a", b"payload", {"seed": 1})
    with pytest.raises(FileFormatError, match=r"a.json: a point of command 'resumable', expected 'pref-rl'"):
        read_point(path, KIND, "pref-rl", {"seed": 1})
    header = json.loads(path.read_text())
    path.write_text(json.dumps(header | {"format": "rlkit.sb3-resume/1"}))
    with pytest.raises(FileFormatError, match=r"a.json: format is 'rlkit.sb3-resume/1', an old version"):
        read_point(path, KIND, "resumable", {"seed": 1})
    write_header(path, KIND, {"config": {"seed": 1}}, covers=[tmp_path / "a.bin"])  # not through commit
    with pytest.raises(FileFormatError, match=r"a.json: missing field 'command'"):
        read_point(path, KIND, "resumable", {"seed": 1})


def test_commit_refuses_other_kinds_and_the_headers_own_fields(tmp_path):
    with pytest.raises(InvalidDataError, match=r"'rlkit.reward_model' is not a resume point's format"):
        commit(tmp_path / "a.json", "rlkit.reward_model", "resumable", {}, {})
    with pytest.raises(InvalidDataError, match=r"may not be named \['config'\]"):
        commit(tmp_path / "a.json", KIND, "resumable", {}, {"config": 1})
    assert not (tmp_path / "a.json").exists()


# ------------------------------------------------------------------ every command that resumes

def pref_rl_point(root: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[Path, str | None, object]]:
    from rlkit.prefrl import PreferenceRL, resume
    from rlkit.prefrl import loop as prefrl_loop
    from tests.tiny_runs import small_config

    def killed(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    config = small_config("ppo")
    monkeypatch.setattr(prefrl_loop, "evaluate_reward", killed)  # killed in its first round
    with pytest.raises(KeyboardInterrupt):
        PreferenceRL.from_config(config, run_dir=root).learn()
    return [(root / resume.RESUME_DIR / resume.STATE_FILE, "pref-rl", config.model_dump(mode="json"))]


def resumable_point(root: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[Path, str | None, object]]:
    """``ResumableTraining`` (APEC's demonstrator, ``rlkit demos``, APEC's policies, PEBBLE's arm)."""
    from rlkit.factories.resumable import ResumableTraining

    agent = PPO("MlpPolicy", make_vec_env("Pendulum-v1", n_envs=1, seed=3), n_steps=32, batch_size=32,
                n_epochs=1, seed=3, device="cpu")
    settings = {"algo": "ppo", "seed": 3}
    training = ResumableTraining(root, 64, 32, settings=settings)
    training.train(agent)
    return [(root / f"point-{steps:012d}.json", "resumable", settings) for steps in training.points()]


def ail_point(root: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[Path, str | None, object]]:
    """APEC's AIL stage: the round's resume folder."""
    from rlkit.ail import AILConfig, AILTrainer, CheckpointStore, demos_from_policy
    from rlkit.ail.discriminator import DiscriminatorConfig
    from rlkit.ail.resume import POINT_FILE, point_config
    from tests.tiny_envs import Point

    venv = DummyVecEnv([Point])
    demos = demos_from_policy(venv, lambda obs: np.clip(-4.0 * obs, -1.0, 1.0), 2, np.random.default_rng(0))
    config = AILConfig(rounds=1, steps_per_round=32, discriminator=DiscriminatorConfig(hidden=(8,)))
    trainer = AILTrainer(config, venv, demos, "ppo", {"n_steps": 32, "batch_size": 32, "n_epochs": 1},
                         checkpoints=CheckpointStore(root))
    trainer.train()
    return [(root / "resume" / POINT_FILE, "resumable", point_config(config, trainer.generator))]


def m3hf_point(root: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[Path, str | None, object]]:
    """M3HF's generation boundary and the MARL checkpoints it covers (parts: no command)."""
    from rlkit.m3hf.loop import STATE_FILE, M3HFRun
    from tests.tiny_runs import tiny_config

    config = tiny_config(video="none", phases=1)
    M3HFRun(config, root).run()
    parts = sorted((root / "checkpoints").glob("*/meta.json"))
    assert len(parts) >= 2
    return [(root / STATE_FILE, "m3hf", config.model_dump(mode="json")), *((p, None, None) for p in parts)]


#: command -> how a real resume point of it is made (the points it writes, their command and the
#: config it goes on under). ``apec`` resumes its AIL rounds and its demonstrator and policies;
#: ``demos`` its demonstrator.
POINTS = {"pref-rl": [pref_rl_point], "apec": [ail_point, resumable_point], "demos": [resumable_point],
          "m3hf": [m3hf_point]}
#: commands whose resume is a config check only (no state of their own to go on from): a sweep
#: skips its finished trials, each a run of a command above.
CONFIG_ONLY = {"sweep"}


def test_every_command_that_resumes_is_listed():
    """A command given a ``MAY_CHANGE`` entry (``resumable``: ``ResumableTraining``'s callers)
    resumes; each must be here, with a point or as a config check."""
    assert set(MAY_CHANGE) - {"resumable"} == set(POINTS) | CONFIG_ONLY
    assert POINT_KINDS <= set(FORMATS)


MAKERS = sorted({make for makers in POINTS.values() for make in makers}, key=lambda make: make.__name__)


@pytest.mark.parametrize("make", MAKERS)
def test_each_commands_point_is_committed_and_read_through_the_one_module(make, tmp_path, monkeypatch):
    """The point is read back whole by ``read_point`` (its command, its config diffed, every file
    checked), and a changed setting is refused by that one config diff."""
    points = make(tmp_path, monkeypatch)
    assert points
    for path, command, config in points:
        kind = json.loads(path.read_text())["format"].rpartition("/")[0]
        assert kind in POINT_KINDS, path
        read = read_point(path, kind, command, config)
        assert read.command == command and read.files
        if command is not None:
            assert isinstance(config, dict)
            changed = {**config, "not_a_setting": 1}
            with pytest.raises(ConfigError, match=r"other settings for \['not_a_setting'\]"):
                read_point(path, kind, command, changed)


def test_the_sweep_resumes_through_the_one_config_diff(tmp_path):
    from rlkit.scale.sweep import prepare_sweep_dir

    class Spec:
        def __init__(self, seeds: list[int]) -> None:
            self.seeds = seeds

        def to_json(self) -> dict[str, object]:
            return {"command": "demo", "seeds": self.seeds, "logger": ["jsonl"]}

    prepare_sweep_dir(Spec([0, 1]), tmp_path, resume=False)  # type: ignore[arg-type]
    prepare_sweep_dir(Spec([0, 1]), tmp_path, resume=True)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"holds a sweep run .*\['seeds'\]"):
        prepare_sweep_dir(Spec([0, 2]), tmp_path, resume=True)  # type: ignore[arg-type]


READERS = {"write_header", "read_header", "read_format_json"}


def header_calls_of_point_kinds(path: Path) -> list[str]:
    """Calls in ``path`` of the header functions of ``rlkit.persistence.formats`` with a point's
    kind (a string, or a module constant holding one)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    constants = {target.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
                 for target in node.targets if isinstance(target, ast.Name)
                 and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or len(node.args) < 2:
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        kind = node.args[1]
        value = kind.value if isinstance(kind, ast.Constant) else constants.get(getattr(kind, "id", ""))
        if name in READERS and value in POINT_KINDS:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}({value!r})")
    return found


def test_no_module_but_run_state_writes_or_reads_a_points_header():
    modules = sorted(p for folder in ("rlkit", "experiments") for p in (ROOT / folder).rglob("*.py"))
    bypasses = [call for path in modules if path != Path(run_state.__file__)
                for call in header_calls_of_point_kinds(path)]
    assert bypasses == []
    for user in ("rlkit/apec/demonstrator.py", "rlkit/runners/apec_policy.py"):  # POINTS' resumable_point
        assert "ResumableTraining(" in (ROOT / user).read_text(encoding="utf-8"), user
