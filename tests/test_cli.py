"""The `rlkit` command end to end on a fast env: collect -> label -> train-reward -> eval-reward."""

import argparse
import io
import json
import os
import re
import sys

import pytest
import torch

from rlkit.cli import RUNNERS, build_parser, command_schema, main
from rlkit.feedback import PreferenceDataset

os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("WANDB_SILENT", "true")
ON_CPU_ONLY = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")


def run(capsys, *argv: str) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def registered_commands() -> dict[str, argparse.ArgumentParser]:
    """The subcommands as the parser registers them (not a hand-kept list)."""
    (subparsers,) = (action for action in build_parser()._actions
                     if isinstance(action, argparse._SubParsersAction))
    return dict(subparsers.choices)


def test_every_command_has_help(capsys):
    commands = registered_commands()
    assert len(commands) >= 10 and set(commands) == set(RUNNERS) | {"sweep"}  # sweep: rlkit.scale
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    listing = capsys.readouterr().out
    for command in commands:
        assert command in listing
        with pytest.raises(SystemExit) as exit_info:
            main([command, "--help"])
        assert exit_info.value.code == 0, command
        out = capsys.readouterr().out
        assert "key=value" in out, command
        if command == "sweep":  # runs the other commands; no config schema of its own
            assert "--grid" in out and "--backend" in out
            continue
        # the help lists the fields of the command's config, each with its default
        for field in command_schema(command).model_fields:
            assert re.search(rf"^  {re.escape(field)}[. ]", out, re.M), (command, field)


def test_collect_label_train_and_evaluate_a_reward(tmp_path, capsys):
    collected = run(capsys, "collect", "env.id=Pendulum-v1", "env.n_envs=2",
                    "policies=[{n_steps: 3000}]", "--run-dir", str(tmp_path / "c"), "--logger", "jsonl")
    assert collected["steps"] == 3000
    assert (tmp_path / "c" / "config.yaml").exists()

    labelled = run(capsys, "label", f"trajectories={collected['path']}", "n_pairs=600",
                   "segment_length=20", "teacher.scale=five", "--run-dir", str(tmp_path / "l"),
                   "--logger", "jsonl")
    assert labelled["pairs"] == 600
    assert set(labelled["labels"]) <= {"0", "0.2", "0.5", "0.8", "1"}
    (record,) = [json.loads(line) for line in (tmp_path / "l" / "metrics.jsonl").read_text().splitlines()]
    assert record["label/pairs"] == 600 and record["label/skipped"] == 0
    assert {k.removeprefix("label/level_"): v for k, v in record.items()
            if k.startswith("label/level_")} == labelled["labels"]
    assert record["label/agreement"] > 0.7  # a 5-level teacher mostly sides with the true return
    assert 0 < record["label/mean_abs_error"] < 0.5

    trained = run(capsys, "train-reward", f"dataset={labelled['path']}", "model.hidden=[64, 64]",
                  "trainer.max_epochs=40", "--run-dir", str(tmp_path / "t"), "--logger", "jsonl")
    # Pendulum's reward is a smooth function of (obs, act): 480 pairs are plenty
    assert trained["held_out"]["accuracy"] > 0.85
    assert trained["held_out"]["return_pearson"] > 0.8
    metrics_lines = (tmp_path / "t" / "metrics.jsonl").read_text().splitlines()
    assert any("reward/val_loss" in line for line in metrics_lines)

    evaluated = run(capsys, "eval-reward", f"model={trained['model']}",
                    f"dataset={tmp_path / 't' / 'held_out'}", "--run-dir", str(tmp_path / "e"),
                    "--logger", "jsonl")
    assert evaluated["accuracy"] == pytest.approx(trained["held_out"]["accuracy"])
    held_out = PreferenceDataset.load(tmp_path / "t" / "held_out")
    assert evaluated["n_pairs"] == len(held_out) == 120


def test_errors_are_reported_without_a_traceback(tmp_path, capsys):
    assert main(["label", "n_pairs=10", "--run-dir", str(tmp_path)]) == 2
    assert "needs trajectories=" in capsys.readouterr().err
    assert main(["train-reward", "dataset=/nonexistent/prefs", "--run-dir", str(tmp_path),
                 "--logger", "jsonl"]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["demo", "query.initial_pairs=-1"]) == 2
    assert "query.initial_pairs" in capsys.readouterr().err


def test_eval_reward_refuses_a_model_for_another_env(tmp_path, capsys):
    pendulum = run(capsys, "collect", "env.id=Pendulum-v1", "env.n_envs=1",
                   "policies=[{n_steps: 300}]", "--run-dir", str(tmp_path / "p"), "--logger", "jsonl")
    cartpole_like = run(capsys, "collect", "env.id=MountainCarContinuous-v0", "env.n_envs=1",
                        "policies=[{n_steps: 300}]", "--run-dir", str(tmp_path / "m"),
                        "--logger", "jsonl")
    for name, collected in (("p", pendulum), ("m", cartpole_like)):
        run(capsys, "label", f"trajectories={collected['path']}", "n_pairs=40",
            "segment_length=10", "--run-dir", str(tmp_path / f"l{name}"), "--logger", "jsonl")
    trained = run(capsys, "train-reward", f"dataset={tmp_path / 'lp' / 'preferences'}",
                  "trainer.max_epochs=2", "trainer.batch_size=8", "--run-dir", str(tmp_path / "t"),
                  "--logger", "jsonl")
    # what the reward model did: a gradient step per batch of 8 training pairs, each epoch
    assert trained["reward_updates"] == trained["epochs"] * -(-trained["train_pairs"] // 8) > 0
    written = json.loads((tmp_path / "t" / "metrics.json").read_text())
    assert written["reward_updates"] == trained["reward_updates"]
    code = main(["eval-reward", f"model={trained['model']}",
                 f"dataset={tmp_path / 'lm' / 'preferences'}", "--run-dir", str(tmp_path / "e"),
                 "--logger", "jsonl"])
    assert code == 2
    assert "obs" in capsys.readouterr().err


def test_an_env_a_users_module_registers_is_found_by_its_module_id(tmp_path, monkeypatch, capsys):
    (tmp_path / "my_envs.py").write_text(
        "import gymnasium\n"
        "gymnasium.register('MyPendulum-v0', entry_point="
        "'gymnasium.envs.classic_control.pendulum:PendulumEnv', max_episode_steps=50)\n")
    monkeypatch.chdir(tmp_path)  # beside the user, as `rlkit` run from that folder finds it
    monkeypatch.setattr("sys.path", list(sys.path))
    summary = run(capsys, "collect", "env.id=my_envs:MyPendulum-v0", "env.n_envs=1",
                  "policies=[{n_steps: 100}]", "--run-dir", str(tmp_path / "run"))
    assert summary["steps"] == 100
    assert main(["collect", "env.id=no_such_module:MyPendulum-v0",
                 "--run-dir", str(tmp_path / "refused")]) == 2
    assert "cannot import 'no_such_module'" in capsys.readouterr().err
    assert not (tmp_path / "refused").exists()


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        (["collect", "env.id=NoSuchEnv-v9"], "env.id=NoSuchEnv-v9: Environment `NoSuchEnv` doesn't exist"),
        (["pref-rl", "env.id=NoSuchEnv-v9"], "env.id=NoSuchEnv-v9"),
        (["collect", "env.id=Pendulum-v1", "env.kwargs={bogus: 1}"], "env.kwargs={'bogus': 1}: Pendulum-v1"),
        (["m3hf", "env.layout=Z"], "unknown layout 'Z'"),
        (["m3hf", "feedback.source=scripted"], "feedback.source=scripted needs feedback.script"),
        (["serve", "host=[::]"], "override 'host=[::]': the value is not valid YAML"),
        (["serve", "port={"], "override 'port={': the value is not valid YAML"),
        (["label", "trajectories=CONFIG_JSON"], "a .json file where a .npz file is expected"),
        (["label", "trajectories=/nonexistent/t.npz"], "no such file"),
        pytest.param(["m3hf", "marl.device=cuda"], "marl.device=cuda: device 'cuda': torch sees no CUDA",
                     marks=ON_CPU_ONLY),
        pytest.param(["apec", "ail.device=cuda:1"], "ail.device=cuda:1", marks=ON_CPU_ONLY),
        pytest.param(["pref-rl", "trainer.device=cuda"], "trainer.device=cuda", marks=ON_CPU_ONLY),
    ],
)
def test_what_the_run_would_refuse_is_refused_before_its_run_directory_exists(
    tmp_path, capsys, overrides, named
):
    (tmp_path / "config.json").write_text("{}")
    argv = [arg.replace("CONFIG_JSON", str(tmp_path / "config.json")) for arg in overrides]
    run_dir = tmp_path / "run"
    assert main([*argv, "--run-dir", str(run_dir), "--logger", "jsonl"]) == 2
    err = capsys.readouterr().err
    assert named in err and "Traceback" not in err
    assert not run_dir.exists()
    assert main([*argv, "--print-config"]) == 2  # --print-config refuses what the run refuses
    assert named in capsys.readouterr().err


def test_m3hf_checks_its_game_by_its_config_without_building_one(monkeypatch):
    """``M3HFConfig.env`` validates every setting the Overcooked env reads, so the checks before a
    run build no game (a bad one is refused when the config loads: ``env.layout=Z`` above)."""
    from envs.overcooked.parallel import OvercookedParallelEnv
    from rlkit.m3hf.run_config import M3HFConfig
    from rlkit.runners.checks import check_before_run

    def built(*args, **kwargs):
        raise AssertionError("the checks built an Overcooked env")

    monkeypatch.setattr(OvercookedParallelEnv, "__init__", built)
    check_before_run("m3hf", M3HFConfig(env={"layout": "B", "n_agents": 2}))


def test_a_third_party_sb3_zip_is_refused_before_its_run_dir_unless_trusted(tmp_path, capsys):
    """Issue 16, item 11: a zip without rlkit's .json is only unpickled by explicit opt-in."""
    (tmp_path / "foreign.zip").write_bytes(b"PK\x05\x06" + bytes(18))  # never opened
    run_dir = tmp_path / "run"
    policy = f"policies=[{{kind: sb3, path: {tmp_path / 'foreign.zip'}}}]"
    assert main(["collect", "env.id=Pendulum-v1", policy, "--run-dir", str(run_dir)]) == 2
    error = capsys.readouterr().err
    assert "policies[0].path=" in error and "policies[0].trust_pickle=true" in error
    assert "Traceback" not in error and not run_dir.exists()


def test_pref_rl_help_shows_the_defaults_it_uses_and_refuses_a_selector_its_model_cannot_serve(
    capsys, tmp_path
):
    with pytest.raises(SystemExit):
        main(["pref-rl", "--help"])
    out = capsys.readouterr().out
    assert re.search(r"^  model\.ensemble_size = 3$", out, re.M)  # the class default is 1
    assert re.search(r"^  trainer\.max_epochs = 30$", out, re.M)  # the class default is 100
    code = main(["pref-rl", "model.ensemble_size=1", "--run-dir", str(tmp_path / "run")])
    assert code == 2 and not (tmp_path / "run").exists()
    assert "query.selector=disagreement needs model.ensemble_size >= 2 (got 1)" in capsys.readouterr().err


def test_a_command_starts_with_a_one_line_summary_and_plain_progress_off_a_terminal(tmp_path, capsys):
    assert main(["collect", "env.id=Pendulum-v1", "env.n_envs=1", "policies=[{n_steps: 200}]",
                 "--run-dir", str(tmp_path / "c"), "--logger", "jsonl,console"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (f"rlkit collect  env.id=Pendulum-v1  seed=0  "
                        f"(full config: {tmp_path / 'c' / 'config.yaml'})")
    assert not any('"policies"' in line for line in lines)  # no JSON blob of the whole config

    run_dir = tmp_path / "p"
    assert main(["pref-rl", "env.id=Pendulum-v1", "env.n_envs=2", "agent.algo=ppo",
                 "agent.kwargs={n_steps: 64, batch_size: 64, n_epochs: 1}", "agent.total_timesteps=1024",
                 "agent.eval_episodes=1", "query.every_steps=256", "query.initial_pairs=10",
                 "query.pairs_per_round=5", "query.segment_length=10", "model.hidden=[16]",
                 "trainer.max_epochs=2", "--run-dir", str(run_dir), "--logger", "jsonl,tensorboard,wandb",
                 "--group", "study-3"]) == 0
    out = capsys.readouterr().out.splitlines()
    progress = [line for line in out if line.startswith("pref-rl env steps")]
    assert re.fullmatch(r"pref-rl env steps  \d+/1024  \d+%  elapsed \d:\d\d:\d\d  eta (\d:\d\d:\d\d|\?)",
                        progress[0])
    assert re.fullmatch(r"pref-rl env steps  1024/1024  100%  done in \d:\d\d:\d\d", progress[-1])

    # SB3's own metrics reach the run's JSONL, TensorBoard and W&B at SB3's step
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert any("train/value_loss" in row for row in rows)
    (episode,) = [row for row in rows if "rollout/ep_rew_mean" in row][-1:]
    assert episode["step"] % 128 == 0 and episode["rollout/ep_rew_mean"] < 0  # Pendulum's true return
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_dir / "tensorboard"))
    events.Reload()
    assert {"train/value_loss", "rollout/ep_rew_mean", "prefrl/n_labels"} <= set(events.Tags()["scalars"])

    from tests.log_records import read_wandb_records

    (run_file,) = run_dir.glob("wandb/offline-run-*/run-*.wandb")
    records = read_wandb_records(run_file)
    (wandb_run,) = [r.run for r in records if r.WhichOneof("record_type") == "run"]
    assert (wandb_run.run_group, wandb_run.job_type) == ("study-3", "pref-rl")
    artifacts = {r.artifact.name: r.artifact for r in records if r.WhichOneof("record_type") == "artifact"}
    assert set(artifacts) == {"reward_model-p", "preferences-p", "agent-p"}
    assert {e.path for e in artifacts["preferences-p"].manifest.contents} == {
        "preferences.npz", "preferences.json"}
    assert {e.path for e in artifacts["agent-p"].manifest.contents} == {"agent.zip", "agent.json"}
    assert "reward_model/model.safetensors" in {e.path for e in artifacts["reward_model-p"].manifest.contents}


def test_label_by_hand_logs_what_was_answered(tmp_path, monkeypatch, capsys):
    from tests.fake_data import make_trajectories

    trajectories_path = make_trajectories().save(tmp_path / "trajectories")
    monkeypatch.setattr("sys.stdin", io.StringIO("1\n2\n"))  # two answers, then end of input
    assert main(["label", "--human", "--run-dir", str(tmp_path / "run"), "--logger", "jsonl",
                 f"trajectories={trajectories_path}", "n_pairs=3", "segment_length=10", "annotator=ann"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    (record,) = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert (record["label/answered"], record["label/labels_in_store"]) == (2, 2) == (
        summary["answered"], summary["labels_in_store"])


def test_labelling_without_trajectories_is_refused_by_the_runner_too(tmp_path):
    from rlkit.errors import ConfigError
    from rlkit.factories.configs import LabelConfig
    from rlkit.logging import make_logger
    from rlkit.runners.label import label_simulated

    logger = make_logger(tmp_path, backends=("jsonl",))
    with pytest.raises(ConfigError, match="needs trajectories="):
        label_simulated(LabelConfig(), tmp_path, logger)
    logger.close()
    assert (tmp_path / "metrics.jsonl").read_text() == ""
