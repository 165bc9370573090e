"""`rlkit pref-rl` with people as the teacher: queries go to the run's label store (what
`rlkit serve --run-dir` shows), the reward model trains on their labels, and a batch nobody answers
times out into skipped (NaN) labels."""

import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from rlkit.cli import main
from rlkit.errors import InvalidDataError
from rlkit.factories.builders import build_reward_model
from rlkit.factories.configs import PrefRLConfig
from rlkit.feedback import PreferenceDataset
from rlkit.human import LabelStore
from rlkit.prefrl import PreferenceRL
from rlkit.prefrl import loop as prefrl_loop
from rlkit.runners.prefrl import build_preference_rl
from tests.fake_data import make_pairs, make_trajectories
from tests.tiny_runs import KilledInRound, small_config

FIVE = (0.0, 0.2, 0.5, 0.8, 1.0)


def human_config(**extra: str) -> PrefRLConfig:
    return small_config("ppo", **{
        "agent.total_timesteps": "400", "query.initial_pairs": "3", "query.pairs_per_round": "2",
        "query.candidates_per_query": "2", "teacher.kind": "human", "teacher.human.poll_s": "0.02", **extra,
    })


def annotator(run_dir: Path, name: str, given: dict[int, list[tuple[str, float | None]]],
              stop: threading.Event, errors: list[BaseException]) -> None:
    """A person at the web page (own connection, like the server): answers by query id and by
    their own taste (alice and bob give different levels), and skips every 4th pair."""
    try:
        store = LabelStore(run_dir)
        while not stop.is_set():
            query = store.next_query(name, lease_s=60)
            if query is None:
                time.sleep(0.01)
                continue
            value = None if query.id % 4 == 0 else FIVE[(query.id + (name == "bob")) % 5]
            store.submit(query.id, name, value)
            given.setdefault(query.id, []).append((name, value))
        store.close()
    except BaseException as error:  # reported by the test, not lost in the thread
        errors.append(error)


def rows(dataset: PreferenceDataset) -> list[tuple]:
    """Each row's pair with its annotator and label (None = skipped), in a fixed order."""
    columns = (dataset.pairs.left.tolist(), dataset.pairs.right.tolist(), dataset.annotators.tolist(),
               dataset.labels.tolist())
    return sorted((tuple(left), tuple(right), who, None if np.isnan(z) else z)
                  for left, right, who, z in zip(*columns, strict=True))


def initial_parameters(loop: PreferenceRL) -> torch.Tensor:
    fresh = build_reward_model(loop.config.model, loop.venv.observation_space, loop.venv.action_space,
                               loop.config.seed)
    return torch.nn.utils.parameters_to_vector(fresh.parameters())


def test_the_reward_model_trains_on_every_label_people_give_through_the_store(tmp_path):
    given: dict[int, list[tuple[str, float | None]]] = {}
    stop, errors = threading.Event(), []
    people = [threading.Thread(target=annotator, args=(tmp_path, name, given, stop, errors))
              for name in ("alice", "bob")]
    for person in people:
        person.start()
    try:
        config = human_config(**{"teacher.human.timeout_s": "60", "teacher.human.redundancy": "2"})
        loop = build_preference_rl(config, run_dir=tmp_path)
        result = loop.learn()
    finally:
        stop.set()
        for person in people:
            person.join()
    assert not errors, errors
    dataset = result.dataset
    assert len(result.rounds) == 2

    store = LabelStore(tmp_path)
    query_ids = store.add_queries(dataset.pairs)  # looks the pairs up: each keeps its id
    assert sorted(set(query_ids.tolist())) == sorted(given) and len(given) == 3 + 2
    # training waited for both people on every pair, and each answer is a row of its own
    pair_of = {int(q): (tuple(left), tuple(right)) for q, left, right in
               zip(query_ids, dataset.pairs.left.tolist(), dataset.pairs.right.tolist(), strict=True)}
    expected = sorted((*pair_of[q], name, None if value is None else float(np.float32(value)))
                      for q, answers in given.items() for name, value in answers)
    assert rows(dataset) == expected and len(expected) == 2 * 5
    assert 0 < np.isnan(dataset.labels).sum() < len(dataset)
    assert set(dataset.sources.tolist()) == {"human/web"}
    # the same labels rlkit serve's store exports, row for row
    assert rows(store.export(loop.store)) == rows(dataset)
    # the model was fit on them, and annotators saw each pair's videos in the served media folder
    now = torch.nn.utils.parameters_to_vector(loop.model.parameters())
    assert not torch.allclose(now, initial_parameters(loop))
    query = store.query(int(query_ids[0]))
    assert loop.teacher.renders.wait(60) and not loop.teacher.renders.failed  # Pendulum's frames
    assert query.left_media.endswith(".webm") and ".plot." not in query.left_media
    assert (tmp_path / "media" / query.left_media).stat().st_size > 0
    assert store.scale.levels == FIVE
    # the dashboard of `rlkit serve` draws the reward model's accuracy round by round
    # (accuracy on each round's new labels before the refit; with 5 pairs there is no validation split)
    series = store.metric_series()
    assert series["prefrl/fresh_accuracy"] == [(r.timestep, r.fresh_accuracy) for r in result.rounds]
    assert "prefrl/val_accuracy" not in series


def test_with_nobody_answering_the_run_times_out_into_skipped_labels(tmp_path, capsys):
    overrides = [f"{k}={v}" for k, v in {
        "env.id": "Pendulum-v1", "env.n_envs": 2,
        "agent.kwargs": "{n_steps: 64, batch_size: 64, n_epochs: 1}",
        "agent.total_timesteps": 400, "agent.eval_episodes": 1, "query.every_steps": 200,
        "query.initial_pairs": 3, "query.pairs_per_round": 2, "query.segment_length": 10,
        "model.hidden": "[8]", "teacher.kind": "human", "teacher.human.timeout_s": 0.1,
        "teacher.human.poll_s": 0.02, "teacher.human.render_media": "false",
    }.items()]
    started = time.monotonic()
    assert main(["pref-rl", "--run-dir", str(tmp_path), "--logger", "jsonl", *overrides]) == 0
    assert time.monotonic() - started < 60
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["labels"] == 5 and all(np.isnan(r["val_accuracy"]) for r in summary["rounds"])
    dataset = PreferenceDataset.load(tmp_path / "preferences")
    assert np.isnan(dataset.labels).all() and set(dataset.sources.tolist()) == {"human/unanswered"}
    # the queries wait in the run's store for whoever opens `rlkit serve --run-dir` later
    assert LabelStore(tmp_path).n_queries() == 5
    assert "prefrl/val_accuracy" not in LabelStore(tmp_path).metric_series()  # NaN: nothing drawn


def test_people_need_the_run_directory_their_server_serves_and_a_fresh_one(tmp_path):
    with pytest.raises(InvalidDataError, match="teacher.kind=human needs a run directory"):
        build_preference_rl(human_config())
    # another run's queries index trajectories this run does not have: their labels would be wrong
    LabelStore(tmp_path).add_queries(make_pairs(make_trajectories(), 2))
    with pytest.raises(InvalidDataError, match="already holds 2 queries of an earlier run"):
        build_preference_rl(human_config(), run_dir=tmp_path)


def test_a_trainer_killed_after_people_answered_resumes_with_their_labels(tmp_path, monkeypatch):
    given: dict[int, list[tuple[str, float | None]]] = {}
    stop, errors = threading.Event(), []
    person = threading.Thread(target=annotator, args=(tmp_path, "alice", given, stop, errors))
    person.start()
    config = human_config(**{"teacher.human.timeout_s": "5"})
    killed = KilledInRound(kill_at=2)  # the trainer dies after round 2's answers came in
    monkeypatch.setattr(prefrl_loop, "evaluate_reward", killed)
    killed_loop = build_preference_rl(config, run_dir=tmp_path)
    try:
        with pytest.raises(KeyboardInterrupt):
            killed_loop.learn()
    finally:
        stop.set()
        person.join()
        killed_loop.teacher.renders.close()  # its render worker dies with it
    assert not errors, errors

    # nobody is at the page any more: the resumed round must find alice's answers in the store
    monkeypatch.setattr(prefrl_loop, "evaluate_reward", again := KilledInRound(kill_at=0))
    resumed = build_preference_rl(config, run_dir=tmp_path)
    result = resumed.learn()
    assert not resumed.teacher.last_wait.timed_out and resumed.teacher.last_wait.answered == 2
    np.testing.assert_array_equal(again.rounds[0][0], killed.rounds[1][0])  # the same pairs
    np.testing.assert_array_equal(again.rounds[0][1], killed.rounds[1][1])  # with alice's labels
    assert len(result.dataset) == 3 + 2 and LabelStore(tmp_path).n_queries() == 3 + 2
    assert rows(LabelStore(tmp_path).export(resumed.store)) == rows(result.dataset)
    assert resumed.teacher.renders.wait(60)
