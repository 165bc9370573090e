"""An API key given to rlkit is used, and written nowhere: not in the run directory (config.yaml,
config.json, state.json, metrics), not in W&B's files, not on the console."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rlkit.m3hf.parser_llm import LLMConfig
from rlkit.m3hf.run_config import M3HFConfig

KEY = "sk-SECRET-d1c2b3a4e5f6"
ROOT = Path(__file__).resolve().parents[1]
TINY = {
    "env": {"recipe": "tomato", "max_steps": 20},
    "num_games": 2,
    "generation_steps": 64,
    "phases": 1,
    "marl": {"n_steps": 16, "batch_size": 32, "n_epochs": 1},
    "feedback": {"source": "scripted", "texts": {1: ["Agent 0, go to the tomato."]}},
    "parser": "llm",
    "eval_games": 2,
    "video_cell_px": 8,
}


def rlkit(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    environment |= {"WANDB_MODE": "offline", "PYTHONPATH": str(ROOT)} | (env or {})
    return subprocess.run([sys.executable, "-m", "rlkit.cli", *args], cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=300)


def files_holding(root: Path, secret: str) -> list[str]:
    return [str(path.relative_to(root)) for path in root.rglob("*")
            if path.is_file() and secret.encode() in path.read_bytes()]


@pytest.mark.slow
def test_a_key_from_a_config_file_or_the_environment_is_written_nowhere(tmp_path: Path) -> None:
    llm = {"api_key": KEY, "base_url": "http://127.0.0.1:9/v1", "api_retries": 0, "timeout_s": 0.5}
    (tmp_path / "m3hf.yaml").write_text(yaml.safe_dump(TINY | {"llm": llm}))
    done = rlkit("m3hf", "--config", "m3hf.yaml", "--run-dir", "run", "--logger", "jsonl,console,wandb",
                 cwd=tmp_path, env={"OPENAI_API_KEY": KEY + "-env"})
    assert done.returncode == 0, done.stderr[-2000:]
    run = tmp_path / "run"
    assert (run / "config.yaml").exists() and list((run / "wandb").rglob("*.wandb"))  # W&B wrote its files
    assert "fell back to RuleParser" in done.stderr  # the parser did use the LLM settings
    assert files_holding(run, KEY) == []  # the env's key starts with KEY: both are covered
    assert KEY not in done.stdout and KEY not in done.stderr
    printed = rlkit("m3hf", "--config", "m3hf.yaml", "--print-config", cwd=tmp_path)
    assert printed.returncode == 0 and KEY not in printed.stdout and "api_key" not in printed.stdout


def test_a_key_on_the_command_line_is_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rlkit.cli import main

    assert main(["m3hf", f"llm.api_key={KEY}", "--run-dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "llm.api_key is a secret" in err and "OPENAI_API_KEY" in err and KEY not in err
    assert not (tmp_path / "run").exists()


def test_the_key_is_a_secret_that_no_dump_holds() -> None:
    config = M3HFConfig.model_validate({"llm": {"api_key": KEY}})
    assert config.llm.resolved_api_key() == KEY
    for text in (repr(config), str(config), config.model_dump_json(), str(config.model_dump()),
                 yaml.safe_dump(config.model_dump(mode="json"))):
        assert KEY not in text
    assert "api_key" not in config.model_dump(mode="json")["llm"]
    assert LLMConfig().resolved_api_key() == os.environ.get("OPENAI_API_KEY")
