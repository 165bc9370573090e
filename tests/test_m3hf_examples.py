"""``feedback.script=example:<name>`` runs a feedback script rlkit ships, from any directory; an
unknown name is refused with the names shipped; a path still works."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rlkit.cli import main
from rlkit.config import load_config
from rlkit.errors import ConfigError
from rlkit.m3hf.examples import example_names, script_file
from rlkit.m3hf.run_config import M3HFConfig
from rlkit.m3hf.sources import ScriptedSource

EXAMPLES = Path(__file__).parents[1] / "rlkit" / "m3hf" / "examples"


def test_example_good_is_the_shipped_script_read_from_any_directory(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # nothing resolves through the working directory
    assert example_names() == sorted(p.stem for p in EXAMPLES.glob("*.yaml"))
    assert "good" in example_names()
    source = ScriptedSource.from_yaml("example:good", quality="correct")
    shipped = yaml.safe_load((EXAMPLES / "good.yaml").read_text())["phases"]
    assert source.phases == {int(phase): texts for phase, texts in shipped.items()}
    assert source.phases[1][0].startswith("Agent 1 should pick up the tomato")


def test_an_unknown_example_is_refused_with_the_names_shipped() -> None:
    with pytest.raises(ConfigError, match=r"feedback\.script: no example script 'nope' in rlkit "
                                          r"\(shipped: example:good\)"):
        load_config(M3HFConfig, None, ["feedback.source=scripted", "feedback.script=example:nope"])
    with pytest.raises(ConfigError, match="shipped: example:good"):
        script_file("example:nope")


def test_rlkit_m3hf_takes_an_example_or_a_path(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["m3hf", "feedback.source=scripted", "feedback.script=example:good", "--print-config"]) == 0
    assert "script: example:good" in capsys.readouterr().out
    (tmp_path / "mine.yaml").write_text("phases:\n  1: ['Agent 0, go to the tomato.']\n")
    assert script_file("mine.yaml") == Path("mine.yaml")
    assert main(["m3hf", "feedback.source=scripted", "feedback.script=mine.yaml", "--print-config"]) == 0
    assert ScriptedSource.from_yaml("mine.yaml").phases == {1: ["Agent 0, go to the tomato."]}
    assert main(["m3hf", "feedback.source=scripted", "feedback.script=example:nope", "--print-config"]) == 2
    assert "no example script 'nope' in rlkit (shipped: example:good)" in capsys.readouterr().err
