"""``rlkit demo``: pref-rl beside the same agent on the true reward and a random policy."""

import json
import os

import numpy as np
import pytest

from rlkit.cli import main
from rlkit.config import load_config
from rlkit.factories.configs import DemoConfig, PrefRLConfig
from rlkit.runners.demo import LEARNED, RANDOM, TRUE, evaluation_note, summary_rows

os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("WANDB_SILENT", "true")

TINY = ["agent.total_timesteps=4000", "query.every_steps=1000", "query.initial_pairs=30",
        "query.pairs_per_round=10", "query.segment_length=20", "trainer.max_epochs=3",
        "agent.kwargs={n_steps: 128, batch_size: 64}", "eval_episodes=2"]


def demo(capsys, run_dir, *extra: str) -> dict:
    assert main(["demo", *TINY, *extra, "--run-dir", str(run_dir), "--logger", "jsonl,wandb"]) == 0
    capsys.readouterr()
    return json.loads((run_dir / "summary.json").read_text())


def test_the_demo_defaults_are_a_pref_rl_run_the_loop_learns_in_minutes():
    config = DemoConfig()
    assert isinstance(config, PrefRLConfig)  # every pref-rl option works on the demo
    assert config.env.id == "Pendulum-v1" and config.agent.total_timesteps == 100_000
    assert config.query.max_pairs == 500 and config.teacher.scale == "five"
    assert config.true_reward_arm and config.eval_episodes == 10
    # the agent settings resolve for the demo's own env, as pref-rl's do
    assert load_config(DemoConfig, None, []).agent.hyperparams["gamma"] == 0.9


@pytest.mark.slow
def test_demo_reports_every_arm_the_same_way_and_repeats_itself(tmp_path, capsys):
    summary = demo(capsys, tmp_path / "a")
    assert set(summary["arms"]) == {LEARNED, TRUE, RANDOM}
    for stats in summary["arms"].values():
        assert stats["n"] == 2 and len(stats["returns"]) == 2
        assert stats["sd"] == pytest.approx(np.std(stats["returns"], ddof=1))
    assert summary["evaluation"] == {"episodes": 2, "actions": "deterministic actions", "env_seed": 10_000}
    reward = summary["reward_model"]
    assert reward["labels"] == 30 + 10 * (reward["query_rounds"] - 1) and reward["query_rounds"] >= 3
    # the two agents learned on different rewards: their training episodes differ
    episodes = summary["training_episodes"]
    assert episodes[LEARNED]["true_returns"] != episodes[TRUE]["true_returns"]
    assert (tmp_path / "a" / "demo.png").stat().st_size > 10_000
    for output in ("agent_learned_reward.zip", "agent_true_reward.zip", "reward_model/model.safetensors",
                   "preferences.npz"):
        assert (tmp_path / "a" / output).is_file(), output
    assert list((tmp_path / "a" / "wandb").glob("offline-run-*/run-*.wandb"))
    again = demo(capsys, tmp_path / "b")
    assert again["arms"] == summary["arms"]  # same seed, same numbers
    other = demo(capsys, tmp_path / "c", "seed=1", "env.seed=1")
    assert other["arms"][LEARNED]["returns"] != summary["arms"][LEARNED]["returns"]


@pytest.mark.slow
def test_without_the_true_reward_arm_only_pref_rl_and_random_are_scored(tmp_path, capsys):
    summary = demo(capsys, tmp_path, "true_reward_arm=false")
    assert set(summary["arms"]) == {LEARNED, RANDOM}
    rows = dict(summary_rows(summary))
    assert f"{LEARNED}: true return" in rows and f"{TRUE}: true return" not in rows
    assert "over 2 fresh episodes per arm, the agents' deterministic actions" in evaluation_note(summary)


def test_a_bad_demo_setting_is_named(capsys):
    assert main(["demo", "eval_episodes=1"]) == 2
    assert "eval_episodes" in capsys.readouterr().err


def test_the_demo_refuses_to_train_its_pref_rl_arm_on_the_env_reward(capsys):
    assert main(["demo", "reward=env"]) == 2
    assert "true_reward_arm" in capsys.readouterr().err


def test_cpu_kernels_are_pinned_only_where_torch_has_not_loaded(monkeypatch):
    """In a process that has computed with torch already (this one), pinning would only give its
    children other kernels than its own: nothing is set. A fresh process gets the pins."""
    import subprocess
    import sys

    from rlkit.devices import PINNED_CPU_KERNELS, pin_cpu_kernels

    for name in PINNED_CPU_KERNELS:
        monkeypatch.delenv(name, raising=False)
    import torch  # noqa: F401  (loaded: the case of a test calling rlkit.cli.main)

    assert pin_cpu_kernels() == {} and not any(name in os.environ for name in PINNED_CPU_KERNELS)
    names = sorted(PINNED_CPU_KERNELS)
    code = ("import json, os; from rlkit.devices import pin_cpu_kernels; pin_cpu_kernels(); import torch; "
            f"print(json.dumps({{k: os.environ.get(k) for k in {names!r}}}))")
    env = {k: v for k, v in os.environ.items() if k not in PINNED_CPU_KERNELS}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert json.loads(out.stdout) == PINNED_CPU_KERNELS
