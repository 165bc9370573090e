"""One config diff for every resume: ``rlkit.persistence.resume_config``, its allow-lists, and a
resume of each command that resumes, which must go through it."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import BaseModel
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env

from rlkit.cli import _resume_check
from rlkit.errors import ConfigError
from rlkit.factories.resumable import KIND as SB3_RESUME_KIND
from rlkit.factories.resumable import ResumableTraining
from rlkit.persistence import resume_config
from rlkit.persistence.resume_config import MAY_CHANGE, changed_paths, refuse_changed_config
from rlkit.persistence.run_state import commit
from rlkit.prefrl import resume as prefrl_resume
from rlkit.runners.commands import COMMANDS, command_schema
from rlkit.scale.sweep import SweepSpec, prepare_sweep_dir, run_sweep


def test_every_changed_setting_is_named_with_both_values_and_the_allowed_ones():
    saved = {"seed": 0, "agent": {"total_timesteps": 10, "device": "cpu", "kwargs": {"lr": 1}}}
    current = {"seed": 1, "agent": {"total_timesteps": 20, "device": "cuda", "kwargs": {"lr": 2}}, "new": 3}
    with pytest.raises(ConfigError) as caught:
        refuse_changed_config("pref-rl", saved, current, where="runs/x")
    message = str(caught.value)
    assert message.startswith("runs/x holds a pref-rl run started with other settings for "
                              "['agent.kwargs.lr', 'new', 'seed'] (agent.kwargs.lr: saved 1, now 2; "
                              "new: saved absent, now 3; seed: saved 0, now 1)")
    assert "'agent.device', 'agent.total_timesteps'" in message  # the allowed ones
    refuse_changed_config("pref-rl", {**saved, "seed": 1, "new": 3}, {**current, "agent": {
        **current["agent"], "kwargs": {"lr": 1}}})  # only allowed ones differ


def test_a_setting_one_config_lacks_equals_null_and_a_path_allows_what_is_under_it():
    assert list(changed_paths({"a": None}, {})) == []
    assert list(changed_paths({"a": {"b": 1}}, {"a": 2})) == [("a", {"b": 1}, 2)]
    assert list(changed_paths([1], [2])) == [("<config>", [1], [2])]
    refuse_changed_config("pref-rl", {"teacher": {"human": {"wait": 1}}}, {"teacher": {"human": {"wait": 2}}})
    with pytest.raises(ConfigError, match=r"\['teacher.human.waiting'\]"):
        refuse_changed_config("pref-rl", {"teacher": {"human": {}}}, {"teacher": {"human": {"waiting": 2}}})
    with pytest.raises(KeyError):
        refuse_changed_config("no-such-command", {}, {})


def _paths(schema: type[BaseModel], prefix: str = "") -> set[str]:
    found = set()
    for name, field in schema.model_fields.items():
        kind = field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            found |= _paths(kind, f"{prefix}{name}.")
        found.add(f"{prefix}{name}")
    return found


@pytest.mark.parametrize("command", sorted(set(MAY_CHANGE) & set(COMMANDS)))
def test_what_may_change_names_settings_of_the_commands_schema_devices_among_them(command):
    fields = _paths(command_schema(command))
    assert MAY_CHANGE[command] <= fields
    devices = {path for path in fields if path.rpartition(".")[2] == "device"}
    assert devices <= MAY_CHANGE[command]


class Recording(dict):
    """``MAY_CHANGE`` that notes each command ``refuse_changed_config`` looked up."""

    def __init__(self, table: dict[str, frozenset[str]]) -> None:
        super().__init__(table)
        self.asked: list[str] = []

    def __getitem__(self, command: str) -> frozenset[str]:
        self.asked.append(command)
        return super().__getitem__(command)


def _seed_changed(config: BaseModel) -> BaseModel:
    return config.model_copy(update={"seed": config.seed + 1})  # type: ignore[attr-defined]


def resume_pref_rl(run_dir: Path) -> None:
    config = command_schema("pref-rl")()
    state = {"timestep": 0, "agent_updates": 0, "agent_episodes": 0, "pending_pairs": 1, "numpy_rng": {},
             "rounds": [], "episodes": {}, "generation": 0, "round": "round-0000000", "store_chunks": [],
             "replay": None, "dataset": {}}
    commit(run_dir / prefrl_resume.RESUME_DIR / prefrl_resume.STATE_FILE, prefrl_resume.KIND, "pref-rl",
           config.model_dump(mode="json"), state)
    other = _seed_changed(config)
    check = _resume_check("pref-rl", other)
    assert check is not None
    check(run_dir)


def resume_m3hf(run_dir: Path) -> None:
    from rlkit.m3hf.loop import STATE_KIND

    config = command_schema("m3hf")()
    commit(run_dir / "state.json", STATE_KIND, "m3hf", config.model_dump(mode="json"), {
        "completed": 0, "history": [{"original_return": 0.0}], "best": None})
    check = _resume_check("m3hf", _seed_changed(config))
    assert check is not None
    check(run_dir)


def test_a_resumed_m3hf_run_trains_on_the_current_marl_device(tmp_path):
    from rlkit.m3hf.run_config import M3HFConfig
    from rlkit.marl.checkpoint import KIND, META_FILE
    from rlkit.persistence import read_header
    from rlkit.runners.m3hf import run_m3hf

    def tiny(phases: int, device: str) -> M3HFConfig:
        return M3HFConfig.model_validate({
            "env": {"recipe": "tomato", "max_steps": 20}, "num_games": 2, "generation_steps": 32,
            "phases": phases, "parser": "rule", "eval_games": 2, "video": "none",
            "marl": {"n_steps": 16, "batch_size": 32, "n_epochs": 1, "device": device},
            "feedback": {"source": "scripted", "texts": {1: ["Be faster!"]}}})

    def saved_device(generation: int) -> str:
        meta = read_header(tmp_path / "checkpoints" / f"gen_{generation:03d}" / META_FILE, KIND)
        return meta["config"].get("device", "cpu")  # "cpu" is left out of the file

    run_m3hf(tiny(0, "cpu"), tmp_path)
    state = run_m3hf(tiny(1, "auto"), tmp_path)
    assert [row["generation"] for row in state["history"]] == [0, 1]
    assert (saved_device(0), saved_device(1)) == ("cpu", "auto")


def resume_from_config_yaml(command: str) -> Callable[[Path], None]:
    def resume(run_dir: Path) -> None:
        config = command_schema(command)()
        (run_dir / "config.yaml").write_text(json.dumps(config.model_dump(mode="json")))
        check = _resume_check(command, _seed_changed(config))
        assert check is not None
        check(run_dir)

    return resume


def resume_resumable_training(run_dir: Path) -> None:
    agent = PPO("MlpPolicy", make_vec_env("CartPole-v1", n_envs=1, seed=0), n_steps=8, batch_size=8,
                device="cpu", seed=0)
    commit(run_dir / "point-000000000008.json", SB3_RESUME_KIND, "resumable", {"seed": 0}, {
        "algo": "PPO", "n_envs": 1, "counters": {}, "rngs": {}, "exact": True, "episode": False,
        "replay": None, "progress": {}})
    ResumableTraining(run_dir, 16, 8, settings={"seed": 1}).resume(agent)


def resume_sweep(sweep_dir: Path) -> None:
    """A tiny sweep's folder resumed with another number of seeds (refused before any trial runs)."""
    spec = SweepSpec("train-reward", {"trainer.max_epochs": ["1", "2"]}, seeds=1, logger="jsonl")
    prepare_sweep_dir(spec, sweep_dir, resume=False)
    run_sweep(dataclasses.replace(spec, seeds=2), sweep_dir, resume=True)


def test_a_sweep_resumes_with_other_loggers_backend_and_metrics_shown(tmp_path):
    spec = SweepSpec("train-reward", {"trainer.max_epochs": ["1", "2"]}, logger="jsonl")
    assert MAY_CHANGE["sweep"] <= set(spec.to_json())
    prepare_sweep_dir(spec, tmp_path, resume=False)
    shown_elsewhere = dataclasses.replace(spec, logger="jsonl,wandb", metrics=("loss",))
    prepare_sweep_dir(shown_elsewhere, tmp_path, resume=True)
    for changed in ({"grid": {"trainer.max_epochs": ["1", "3"]}}, {"overrides": ("model.hidden=[8]",)},
                    {"command": "pref-rl"}, {"seed_key": "trainer.seed"}):
        with pytest.raises(ConfigError, match=rf"{tmp_path} holds a sweep run started with other settings"):
            prepare_sweep_dir(dataclasses.replace(spec, **changed), tmp_path, resume=True)


#: every config check a resume makes: the commands (``rlkit.cli._resume_check``),
#: ``ResumableTraining`` (APEC's demonstrator and policies, experiments/prefrl_pebble.py) and
#: ``rlkit sweep --resume``
RESUMES: dict[str, Callable[[Path], None]] = {
    "pref-rl": resume_pref_rl,
    "m3hf": resume_m3hf,
    "apec": resume_from_config_yaml("apec"),
    "demos": resume_from_config_yaml("demos"),
    "resumable": resume_resumable_training,
    "sweep": resume_sweep,
}

#: the setting each resume above changes: the seed, or a sweep's number of seeds
CHANGED_SETTING = {"sweep": "seeds"}


def test_the_commands_that_resume_are_those_listed_and_every_allow_list_is_used():
    resuming = {command for command in COMMANDS
                if _resume_check(command, command_schema(command)()) is not None}
    assert resuming == set(RESUMES) & set(COMMANDS)
    assert set(MAY_CHANGE) == set(RESUMES)


@pytest.mark.parametrize("command", RESUMES)
def test_every_resume_refuses_a_changed_seed_through_refuse_changed_config(command, tmp_path, monkeypatch):
    recording = Recording(MAY_CHANGE)
    monkeypatch.setattr(resume_config, "MAY_CHANGE", recording)
    seed = CHANGED_SETTING.get(command, "seed")
    with pytest.raises(ConfigError, match=rf"other settings for \['{seed}'\] \({seed}: saved \d+, now \d+\)"):
        RESUMES[command](tmp_path)
    assert recording.asked == [command]

