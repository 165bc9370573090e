"""The M3HF loop with ``feedback.source=web``: people confirm specs on the page of ``rlkit serve``
(the same run directory), and the pools train on exactly what they confirmed."""

import json
import logging
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from rlkit.errors import InvalidDataError
from rlkit.human import LabelStore, m3hf_source
from rlkit.human.app import create_app
from rlkit.human.settings import ServeConfig
from rlkit.m3hf import TeamPools
from rlkit.m3hf.loop import make_source
from rlkit.m3hf.run_config import M3HFConfig
from rlkit.marl import MultiAgentPPO
from rlkit.runners.m3hf import run_m3hf
from tests.tiny_runs import tiny_config
from tests.web_client import client_for, login

pytestmark = pytest.mark.server
TEXTS = {1: "Agent 0 should pick up the tomato and chop it.", 2: "Be faster!"}


def web_config(timeout_s: float, **changes: object) -> M3HFConfig:
    return tiny_config(feedback={"source": "web", "poll_s": 0.02, "timeout_s": timeout_s}, **changes)


def person_at_the_page(run_dir: Path, confirmed: dict[int, list[dict]], stop: threading.Event,
                       errors: list[BaseException]) -> None:
    """Someone with `rlkit serve --run-dir run_dir` open: for each phase shown, types its text,
    reads the preview, and confirms it; in phase 1 they correct it (onion, and only that spec)."""
    try:
        client = client_for(create_app(LabelStore(run_dir), ServeConfig(run_dir=str(run_dir))))
        headers = login(client, "ann")
        while not stop.is_set() and len(confirmed) < len(TEXTS):
            page = client.post("/api/m3hf/preview", json={"text": "hello"}, headers=headers)
            phase = page.json()["phase"] if page.status_code == 200 else None
            if phase is None or phase in confirmed:
                time.sleep(0.02)
                continue
            preview = client.post("/api/m3hf/preview", json={"text": TEXTS[phase]}, headers=headers).json()
            specs = [item["spec"] for item in preview["specs"]]
            if phase == 1:
                specs = [specs[0] | {"params": specs[0]["params"] | {"item": "onion"}}]
            committed = client.post("/api/m3hf/commit", json={"phase": phase, "text": TEXTS[phase],
                                                              "specs": specs}, headers=headers)
            assert committed.status_code == 200, committed.text
            confirmed[phase] = [item["spec"] for item in committed.json()["specs"]]
    except BaseException as error:  # reported by the test, not lost in the thread
        errors.append(error)


def pool_specs(run_dir: Path, generation: int) -> list[list[dict]]:
    pools = TeamPools.load(run_dir / "pools" / f"gen_{generation:03d}.json")
    return [[entry.spec.model_dump(mode="json") for entry in pool.entries] for pool in pools.pools]


def test_the_pools_hold_exactly_the_specs_a_person_confirmed_on_the_page(tmp_path):
    confirmed: dict[int, list[dict]] = {}
    stop, errors = threading.Event(), []
    person = threading.Thread(target=person_at_the_page, args=(tmp_path, confirmed, stop, errors))
    person.start()
    try:
        state = run_m3hf(web_config(60), tmp_path)
    finally:
        stop.set()
        person.join()
    assert not errors, errors
    assert state["completed"] == 2 and [row["feedback"] for row in state["history"]] == [0, 1, 1]

    onion, = confirmed[1]
    assert onion["template"] == "holding" and onion["params"]["item"] == "onion"
    # the rule parser alone would have given agent 0 two specs (holding + status) about the tomato
    assert pool_specs(tmp_path, 1) == [[onion], [], []]
    faster, = confirmed[2]
    assert faster["agents"] == "all"
    assert pool_specs(tmp_path, 2) == [[onion, faster], [faster], [faster]]
    record, = json.loads((tmp_path / "feedback" / "phase_001.json").read_text())
    assert record["text"] == TEXTS[1] and record["specs"] == [onion]
    # the page showed each phase's rollout from the run's media folder, where `rlkit serve` looks
    assert sorted(p.name for p in (tmp_path / "media").iterdir()) == ["m3hf_phase_001.gif",
                                                                      "m3hf_phase_002.gif"]
    # and its dashboard drew the training curve: the team's original return, generation by generation
    curve = LabelStore(tmp_path).metric_series()["m3hf/original_return"]
    expected = [row["original_return"] for row in state["history"]]
    assert [value for _, value in curve] == pytest.approx(expected)


def test_a_run_killed_after_taking_feedback_resumes_with_that_feedback_without_waiting(tmp_path, monkeypatch):
    """Killed between reading phase 1's confirmed feedback and writing its generation's state: the
    resumed phase trains on exactly that feedback at once, though nobody is at the page any more."""
    confirmed: dict[int, list[dict]] = {}
    stop, errors = threading.Event(), []
    learn = MultiAgentPPO.learn

    def killed_in_generation_1(trainer: MultiAgentPPO, total_steps: int) -> dict[str, float]:
        if trainer.num_timesteps > 0:  # generation 0 is trained; phase 1 took its feedback
            raise KeyboardInterrupt
        return learn(trainer, total_steps)

    monkeypatch.setattr(MultiAgentPPO, "learn", killed_in_generation_1)
    person = threading.Thread(target=person_at_the_page, args=(tmp_path, confirmed, stop, errors))
    person.start()
    config = web_config(60, phases=1, video="none")
    try:
        with pytest.raises(KeyboardInterrupt):
            run_m3hf(config, tmp_path)
    finally:
        stop.set()
        person.join()
    assert not errors, errors
    assert list(confirmed) == [1] and json.loads((tmp_path / "state.json").read_text())["completed"] == 0

    monkeypatch.setattr(MultiAgentPPO, "learn", learn)
    waits: list[float] = []  # every poll the resumed phase would sleep through
    monkeypatch.setattr(m3hf_source, "time", SimpleNamespace(monotonic=time.monotonic, sleep=waits.append))
    state = run_m3hf(config, tmp_path)
    assert waits == []
    assert state["completed"] == 1 and state["history"][1]["feedback"] == 1
    onion, = confirmed[1]
    assert pool_specs(tmp_path, 1) == [[onion], [], []]  # the person's correction, not a re-parse
    assert [item["text"] for item in LabelStore(tmp_path).phase_feedback(1)] == [TEXTS[1]]


def test_a_phase_nobody_answers_times_out_and_training_goes_on(tmp_path, caplog):
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="rlkit.m3hf.loop"):
        state = run_m3hf(web_config(0.2, phases=1, video="none"), tmp_path)
    assert time.monotonic() - started < 60
    assert state["completed"] == 1 and state["history"][1]["feedback"] == 0
    assert "phase 1: no feedback came" in caplog.text
    assert pool_specs(tmp_path, 1) == [[], [], []]
    assert LabelStore(tmp_path).latest_phase()["phase"] == 1  # the phase was open on the page
    assert json.loads((tmp_path / "feedback" / "phase_001.json").read_text()) == []


def test_a_new_run_refuses_a_run_directory_with_an_earlier_runs_phases(tmp_path):
    store = LabelStore(tmp_path)
    store.add_phase(1)
    store.add_feedback(1, "ann", "Be faster!", [])  # an earlier run's, whose state.json is gone
    with pytest.raises(InvalidDataError, match="holds M3HF phases of an earlier run .up to phase 1."):
        run_m3hf(web_config(0.2, phases=1, video="none"), tmp_path)


def test_the_web_source_is_built_by_the_run_not_by_make_source():
    with pytest.raises(ValueError, match="label store"):
        make_source(web_config(60), 1)
