"""What an M3HF run shows in W&B (offline, read back from its files) and on the console: each
phase's feedback table, the checkpoints as artifact versions, the run's name and group, a line per
parsed text, and per-agent PPO metrics summarised on the console but kept whole in the JSONL."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from rlkit.logging import make_logger
from rlkit.m3hf.loop import best_generation
from rlkit.m3hf.parser_llm import LLMConfig, LLMParser
from rlkit.runners.m3hf import run_m3hf
from tests.log_records import read_wandb_records
from tests.openai_server import ScriptedChatServer, reply
from tests.tiny_runs import SCRIPT, tiny_config

LLM_SPECS = {"specs": [{"template": "holding", "agents": [0], "params": {"item": "tomato"},
                        "reason": "pick up the tomato"}]}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One tiny run (2 phases) with an LLM parser on a local server, W&B offline and a console."""
    monkeypatch = pytest.MonkeyPatch()
    root = tmp_path_factory.mktemp("m3hf-logging")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_DATA_DIR", str(root / "wandb-data"))  # artifact staging, not ~/.local
    monkeypatch.delenv("WANDB_RUN_GROUP", raising=False)
    run_dir = root / "m3hf-study-7"
    out = io.StringIO()
    logger = make_logger(run_dir, backends=("console", "wandb"), config={"command": "m3hf"},
                         job_type="m3hf", console=Console(file=out, width=100))
    try:
        with ScriptedChatServer([reply(LLM_SPECS)]) as server:
            parser = LLMParser(LLMConfig(model="test-model", base_url=server.base_url, api_key="test",
                                         timeout_s=5.0, api_retries=0))
            state = run_m3hf(tiny_config(video="none"), run_dir, logger, parser=parser)
    finally:
        logger.close()
        monkeypatch.undo()
    (run_file,) = run_dir.glob("wandb/offline-run-*/run-*.wandb")
    return {"run_dir": run_dir, "state": state, "console": out.getvalue(),
            "run_file": Path(run_file), "records": read_wandb_records(Path(run_file))}


@pytest.mark.server
def test_the_wandb_run_is_named_after_its_directory_and_grouped_by_command(run: dict[str, Any]) -> None:
    (wandb_run,) = [r.run for r in run["records"] if r.WhichOneof("record_type") == "run"]
    assert (wandb_run.display_name, wandb_run.run_group, wandb_run.job_type) == (
        "m3hf-study-7", "m3hf", "m3hf")


@pytest.mark.server
def test_each_phase_is_a_wandb_table_of_texts_specs_and_parse_decisions(run: dict[str, Any]) -> None:
    tables = run["run_file"].parent / "files" / "media" / "table" / "m3hf" / "feedback"
    for phase in (1, 2):
        (path,) = tables.glob(f"phase_{phase:03d}_*.table.json")
        table = json.loads(path.read_text())
        assert table["columns"] == ["text", "quality", "parser", "decision", "specs"]
        assert table["data"] == [[SCRIPT[phase][0], "unknown", "llm", "valid output",
                                  "agent 0: holding(item='tomato', value=1.0)"]]


@pytest.mark.server
def test_every_generation_checkpoint_is_a_version_of_one_artifact(run: dict[str, Any]) -> None:
    artifacts = [r.artifact for r in run["records"] if r.WhichOneof("record_type") == "artifact"
                 and r.artifact.type != "run_table"]  # W&B keeps each table as one as well
    assert {(a.name, a.type) for a in artifacts} == {("checkpoint-m3hf-study-7", "model")}
    aliases = [set(a.aliases) - {"latest"} for a in artifacts]
    history = run["state"]["history"]
    best_then = [best_generation(history[: g + 1], "train")["generation"] for g in (0, 1, 2)]
    assert aliases == [{f"gen_{g:03d}"} | ({"best"} if best_then[g] == g else set()) for g in (0, 1, 2)]
    assert aliases[0] == {"gen_000", "best"}  # the first generation is the best so far
    files = {entry.path for entry in artifacts[1].manifest.contents}
    assert "gen_001/meta.json" in files


@pytest.mark.server
def test_a_successful_llm_parse_is_a_console_line_naming_parser_and_specs(run: dict[str, Any]) -> None:
    (line,) = [line for line in run["console"].splitlines() if "m3hf/feedback/phase_001" in line]
    assert "parser=llm" in line and "decision=valid output" in line
    assert line.endswith("specs=agent 0: holding(item='tomato', value=1.0)")


@pytest.mark.server
def test_console_lines_summarise_per_agent_metrics_the_jsonl_keeps_them(run: dict[str, Any]) -> None:
    lines = [line for line in run["console"].splitlines() if "time/env_steps=" in line]
    assert lines and not any(re.search(r"agent_\d", line) for line in lines)
    assert all("agents/train/value_loss=" in line and "agents/train/entropy_loss=" in line
               for line in lines)
    rows = [json.loads(line) for line in (run["run_dir"] / "metrics.jsonl").read_text().splitlines()]
    iteration = next(row for row in rows if "time/env_steps" in row)
    per_agent = [key for key in iteration if key.startswith("agent_")]
    assert len(per_agent) == 3 * 10  # every PPO metric of every agent
    mean = sum(iteration[f"agent_{a}/train/value_loss"] for a in range(3)) / 3
    first = next(line for line in lines if f"step {iteration['step']:>8}" in line)
    assert f"agents/train/value_loss={mean:.4g}" in first
