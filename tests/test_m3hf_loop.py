"""The M3HF phase loop end to end on a tiny budget, and resuming a run that was stopped."""

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from rlkit.cli import main
from rlkit.errors import ConfigError
from rlkit.m3hf import LLMConfig, LLMParser, ScriptedSource, TeamPools
from rlkit.m3hf.loop import M3HFRun, best_generation
from rlkit.marl import load_checkpoint
from rlkit.runners.m3hf import run_m3hf
from tests.tiny_runs import SCRIPT, tiny_config


class RecordingLogger:
    def __init__(self):
        self.metrics, self.videos = [], []

    def log(self, metrics, step):
        self.metrics.append((step, metrics))

    def log_video(self, name, path_or_frames, step, fps=30):
        self.videos.append((name, path_or_frames, step))

    def log_config(self, config):
        pass

    def log_image(self, name, path, step):
        pass

    def close(self):
        pass


def test_phase_loop_end_to_end_with_scripted_feedback(tmp_path):
    logger = RecordingLogger()
    state = run_m3hf(tiny_config(), tmp_path, logger)

    assert state["completed"] == 2
    history = state["history"]
    assert [row["generation"] for row in history] == [0, 1, 2]
    assert [row["env_steps"] for row in history] == [64, 128, 192]
    # each generation's own updates: 2 iterations of 16 steps x 2 games, 1 epoch, per agent's PPO
    # (not the count since the start: a generation may start from the best checkpoint's policies)
    assert [list(row["agent_updates"].values()) for row in history] == [[2, 2, 2]] * 3
    # generation 0 trains on the env reward alone: nothing to shape with
    assert history[0]["shaped_return"] == history[0]["original_return"]
    # phase 2's "be faster" is a time penalty for everyone: shaped falls below the env's return
    assert history[2]["shaped_return"] < history[2]["original_return"]

    pools1 = TeamPools.load(tmp_path / "pools" / "gen_001.json")
    assert [len(pool.entries) for pool in pools1.pools] == [2, 0, 0]  # only agent 0 was addressed
    assert {e.spec.template for e in pools1.pools[0].entries} == {"holding", "status"}
    pools2 = TeamPools.load(tmp_path / "pools" / "gen_002.json")
    assert [len(pool.entries) for pool in pools2.pools] == [3, 1, 1]
    assert all(abs(pool.weights.sum() - 1) < 1e-9 for pool in pools2.pools)
    assert history[2]["pool_sizes"] == [3, 1, 1]

    records = json.loads((tmp_path / "feedback" / "phase_001.json").read_text())
    assert records[0]["text"] == SCRIPT[1][0] and len(records[0]["specs"]) == 2
    videos = sorted(p.name for p in (tmp_path / "videos").iterdir())
    assert videos == ["phase_001.gif", "phase_002.gif"]
    assert [(name, str(path)) for name, path, _ in logger.videos] == [
        ("m3hf/rollout", str(tmp_path / "videos" / v)) for v in videos
    ]
    logged = [m for _, m in logger.metrics if "m3hf/original_return" in m]
    assert [m["m3hf/generation"] for m in logged] == [0.0, 1.0, 2.0]
    # and every PPO iteration's losses, per agent, and the training episodes' returns
    iterations = [m for _, m in logger.metrics if "time/env_steps" in m]
    assert len(iterations) == 3 * 64 // (2 * 16)
    assert all(f"agent_{i}/train/policy_gradient_loss" in iterations[-1] for i in range(3))
    assert "rollout/original_return" in iterations[-1]

    # "performance" (improved / best) is the mean ORIGINAL return of the generation's training episodes
    performance = [row["performance"] for row in history]
    assert performance == [row["train_original_return"] for row in history]
    assert all(row["train_episodes"] > 0 for row in history)
    best = int(np.argmax(performance))
    assert state["best"] == {"generation": best, "measure": "train_original_return",
                             "performance": max(performance)}
    lines = (tmp_path / "generations.jsonl").read_text().splitlines()
    assert [json.loads(line)["generation"] for line in lines] == [0, 1, 2]


class StopAt:
    """A scripted source that is 'killed' when asked for a given phase."""

    def __init__(self, phase: int) -> None:
        self.phase, self.inner = phase, ScriptedSource(SCRIPT)

    def feedback(self, request):
        if request.generation == self.phase:
            raise KeyboardInterrupt
        return self.inner.feedback(request)


def test_a_stopped_run_resumes_at_its_last_phase_and_ends_as_an_unbroken_run(tmp_path):
    config = tiny_config(video="none")
    unbroken = run_m3hf(config, tmp_path / "unbroken")

    stopped = tmp_path / "stopped"
    with pytest.raises(KeyboardInterrupt):
        run_m3hf(config, stopped, source=StopAt(2))
    state = json.loads((stopped / "state.json").read_text())
    assert state["completed"] == 1
    assert not (stopped / "pools" / "gen_002.json").exists()

    resumed = M3HFRun(config, stopped).run()
    assert resumed["history"] == unbroken["history"]
    assert (stopped / "pools" / "gen_002.json").read_text() == (
        tmp_path / "unbroken" / "pools" / "gen_002.json"
    ).read_text()
    rows = M3HFRun(config, tmp_path / "probe").rows
    a = load_checkpoint(tmp_path / "unbroken" / "checkpoints" / "gen_002", rows)
    b = load_checkpoint(stopped / "checkpoints" / "gen_002", rows)
    for pa, pb in zip(a.policies, b.policies, strict=True):
        assert torch.equal(torch.nn.utils.parameters_to_vector(pa.parameters()),
                           torch.nn.utils.parameters_to_vector(pb.parameters()))


def test_resume_refuses_a_changed_config_but_may_add_phases(tmp_path):
    run_m3hf(tiny_config(video="none", phases=1), tmp_path)
    with pytest.raises(ConfigError, match=r"other settings for \['generation_steps'\] "
                                          r"\(generation_steps: saved 64, now 32\)"):
        run_m3hf(tiny_config(video="none", phases=1, generation_steps=32), tmp_path)
    with pytest.raises(ConfigError, match=r"other settings for \['env.max_steps'\] "
                                          r".*only \['marl.device', 'phases'\] may"):
        run_m3hf(tiny_config(video="none", phases=1, env={"recipe": "tomato", "max_steps": 10}), tmp_path)
    state = run_m3hf(tiny_config(video="none", phases=2), tmp_path)
    assert [row["generation"] for row in state["history"]] == [0, 1, 2]


def test_simulated_teacher_feedback_is_recorded_with_its_quality(tmp_path):
    config = tiny_config(
        video="none", phases=1, feedback={"source": "simulated", "rates": {"wrong": 1.0}, "per_phase": 2}
    )
    state = run_m3hf(config, tmp_path)
    records = json.loads((tmp_path / "feedback" / "phase_001.json").read_text())
    assert [r["quality"] for r in records] == ["wrong", "wrong"]
    assert state["history"][1]["feedback_quality"] == {"wrong": 2}


def test_rlkit_m3hf_killed_mid_run_resumes_at_the_last_completed_phase(tmp_path):
    run_dir = tmp_path / "run"
    command = [
        sys.executable, "-m", "rlkit.cli", "m3hf", "--run-dir", str(run_dir), "--logger", "jsonl",
        "env.recipe=tomato", "env.max_steps=20", "num_games=2", "generation_steps=384", "phases=4",
        "marl.n_steps=16", "marl.batch_size=32", "marl.n_epochs=1", "parser=rule", "video=none",
        "eval_games=2", "feedback.source=simulated", "feedback.per_phase=2",
    ]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WANDB_MODE": "offline"}
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    state_path = run_dir / "state.json"
    deadline = time.monotonic() + 240
    while not (state_path.is_file() and json.loads(state_path.read_text())["completed"] >= 1):
        assert process.poll() is None, process.stderr.read().decode()
        assert time.monotonic() < deadline, "generation 1 never completed"
        time.sleep(0.05)
    process.kill()  # SIGKILL: no cleanup runs
    process.wait()
    killed_at = json.loads(state_path.read_text())["completed"]
    assert killed_at < 4

    finished = subprocess.run(command, env=env, capture_output=True, text=True, timeout=240)
    assert finished.returncode == 0, finished.stderr
    state = json.loads(state_path.read_text())
    assert [row["generation"] for row in state["history"]] == [0, 1, 2, 3, 4]  # each generation once
    pools = TeamPools.load(run_dir / "pools" / "gen_004.json")
    assert pools.generation == 4 and sum(len(pool.entries) for pool in pools.pools) > 0
    last = json.loads(finished.stdout.strip().splitlines()[-1])
    assert last["best"] == state["best"]


def test_an_unreachable_llm_falls_back_to_the_rule_parser_and_the_run_goes_on(tmp_path):
    config = tiny_config(video="none", phases=1)
    unreachable = LLMParser(LLMConfig(base_url="http://127.0.0.1:9/v1", api_retries=0, timeout_s=2.0))
    state = run_m3hf(config, tmp_path, parser=unreachable)
    assert state["completed"] == 1
    record = json.loads((tmp_path / "feedback" / "phase_001.json").read_text())[0]
    assert record["parser"] == "fallback" and "API failed" in record["reason"]
    assert record["attempts"][0]["outcome"] == "api_error"
    # the fallback's specs are the rule parser's, and they reached agent 0's pool
    assert [s["template"] for s in record["specs"]] == ["holding", "status"]
    assert TeamPools.load(tmp_path / "pools" / "gen_001.json").pools[0].entries


def test_best_is_the_highest_original_return_of_the_configured_measure_earliest_on_ties():
    rows = [{"generation": 0, "train_original_return": -4.5, "original_return": -2.0},
            {"generation": 1, "train_original_return": -2.0, "original_return": -4.5},
            {"generation": 2, "train_original_return": -2.0, "original_return": -9.0}]
    assert best_generation(rows, "train") == {"generation": 1, "measure": "train_original_return",
                                              "performance": -2.0}
    assert best_generation(rows, "eval") == {"generation": 0, "measure": "original_return",
                                             "performance": -2.0}
    # a generation in which no training episode ended has no value: it is not best over one that has
    unfinished = [{**rows[0], "train_original_return": float("nan")}, rows[1]]
    assert best_generation(unfinished, "train")["generation"] == 1
    assert best_generation(unfinished[:1], "train")["generation"] == 0


def test_rlkit_m3hf_prints_the_best_generation_with_the_measure_that_chose_it(tmp_path, capsys):
    argv = ["m3hf", "--run-dir", str(tmp_path), "--logger", "jsonl", "env.recipe=tomato",
            "env.max_steps=20", "num_games=2", "generation_steps=64", "phases=1", "marl.n_steps=16",
            "marl.batch_size=32", "marl.n_epochs=1", "parser=rule", "video=none", "eval_games=2",
            "feedback.source=scripted", "feedback.texts={1: [Be faster!]}"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    state = json.loads((tmp_path / "state.json").read_text())
    best = state["best"]
    value = state["history"][best["generation"]]["train_original_return"]
    assert best == {"generation": best["generation"], "measure": "train_original_return",
                    "performance": value}
    assert lines[-2] == (f"best: generation {best['generation']} by train_original_return (the mean "
                         f"original return of the generation's training episodes) = {value:.2f}")
    assert json.loads(lines[-1])["best"] == best
    generations = [json.loads(line) for line in lines[:-2] if line.startswith("{")]
    assert [row["train_original_return"] for row in generations] == [
        row["train_original_return"] for row in state["history"]]
    assert [row["agent_updates"] for row in generations] == [{"agent_0": 2, "agent_1": 2, "agent_2": 2}] * 2


def test_feedback_with_a_lone_surrogate_is_recorded_as_valid_unicode(tmp_path):
    """A text holding a lone surrogate (a JSON escape such as "\\ud800" read back) is written
    to feedback/phase_NNN.json with '?' in its place, so the record reads back as valid UTF-8."""
    config = tiny_config(phases=1, video="none", feedback={"source": "scripted",
                                                          "texts": {1: ["Agent 0 hurry \ud800 up"]}})
    M3HFRun(config, tmp_path).run()
    (record,) = json.loads((tmp_path / "feedback" / "phase_001.json").read_text())
    assert record["text"] == "Agent 0 hurry ? up"
    record["text"].encode("utf-8")  # a lone surrogate would raise here
