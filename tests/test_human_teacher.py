"""HumanTeacher: training waits for people (or not), with a timeout, and resumes after a crash."""

import threading
import time

import imageio.v2 as imageio
import numpy as np
import pytest

from rlkit.errors import InvalidLabelError
from rlkit.human import LabelStore
from rlkit.human.media import HEIGHT, WIDTH, plot_frames
from rlkit.human.teacher import HumanTeacher, HumanTeacherConfig
from rlkit.types import Teacher
from tests.fake_data import make_pairs, make_trajectories


def annotate(location, annotator: str, values: dict[int, float | None], stop: threading.Event) -> None:
    """A person at another screen: labels pairs as they appear, by their left segment's trajectory."""
    store = LabelStore(location)  # own connection pool, like a separate server process
    while not stop.is_set():
        query = store.next_query(annotator)
        if query is None:
            time.sleep(0.02)
            continue
        store.submit(query.id, annotator, values[query.left[0]])
    store.close()


def test_training_waits_until_a_person_has_labelled_the_batch(tmp_path):
    trajectories = make_trajectories()
    pairs = make_pairs(trajectories, 6)
    # The simulated person prefers A when its trajectory id is even and skips trajectory 5.
    values = {t: (None if t == 5 else 1.0 if t % 2 == 0 else 0.0) for t in range(6)}
    stop = threading.Event()
    person = threading.Thread(target=annotate, args=(tmp_path, "ann", values, stop))
    person.start()
    try:
        teacher = HumanTeacher(LabelStore(tmp_path), HumanTeacherConfig(timeout_s=60, poll_s=0.02),
                               media_dir=tmp_path / "media")
        assert isinstance(teacher, Teacher)
        labels = teacher.label(pairs)
    finally:
        stop.set()
        person.join()
    expected = [np.nan if values[t] is None else values[t] for t in pairs.left[:, 0]]
    assert np.allclose(labels, expected, equal_nan=True)
    assert teacher.last_wait.answered == 6 and not teacher.last_wait.timed_out
    videos = sorted(p.name for p in (tmp_path / "media").iterdir())
    query = teacher.store.query(1)
    assert query.left_media in videos and query.right_media in videos
    frames = imageio.mimread(tmp_path / "media" / query.left_media)
    assert len(frames) == 10 and frames[0].shape == (HEIGHT, WIDTH, 3)


def test_a_timeout_or_no_wait_returns_nan_for_unanswered_pairs(tmp_path):
    pairs = make_pairs(make_trajectories(), 3)
    store = LabelStore(tmp_path)
    patient = HumanTeacher(store, HumanTeacherConfig(timeout_s=0.1, poll_s=0.02, render_media=False))
    started = time.monotonic()
    assert np.isnan(patient.label(pairs)).all()
    assert 0.1 <= time.monotonic() - started < 5 and patient.last_wait.timed_out
    store.submit(2, "ann", 0.2)
    eager = HumanTeacher(store, HumanTeacherConfig(wait=False, render_media=False))
    assert np.allclose(eager.label(pairs), [np.nan, 0.2, np.nan], equal_nan=True)
    half = HumanTeacher(store, HumanTeacherConfig(min_fraction=0.3, timeout_s=60, render_media=False))
    assert half.label(pairs)[1] == pytest.approx(0.2) and not half.last_wait.timed_out


def test_a_restarted_trainer_finds_the_labels_given_before_its_crash(tmp_path):
    pairs = make_pairs(make_trajectories(), 4)
    first = HumanTeacher(LabelStore(tmp_path), HumanTeacherConfig(wait=False, render_media=False))
    first.label(pairs)
    for query_id, value in zip(range(1, 5), (1.0, 0.8, 0.5, 0.0), strict=True):
        first.store.submit(query_id, "ann", value)
    first.store.close()  # the trainer dies here
    again = HumanTeacher(LabelStore(tmp_path), HumanTeacherConfig(timeout_s=0, render_media=False))
    assert np.allclose(again.label(pairs), [1.0, 0.8, 0.5, 0.0])
    assert again.store.n_queries() == 4


def test_with_redundancy_each_pair_waits_for_that_many_people_and_keeps_every_label(tmp_path):
    pairs = make_pairs(make_trajectories(), 3)
    store = LabelStore(tmp_path)
    teacher = HumanTeacher(store, HumanTeacherConfig(redundancy=2, timeout_s=0.05, poll_s=0.01,
                                                     render_media=False))
    teacher.label(pairs)  # queued; nobody is there yet
    store.submit(1, "ann", 1.0)
    store.submit(1, "bob", 0.5)
    store.submit(2, "ann", 0.0)
    store.submit(2, "bob", None)  # a skip answers, but carries no label
    store.submit(3, "ann", 0.8)  # one person of two
    labels = teacher.label(pairs)
    assert np.allclose(labels, [0.75, 0.0, 0.8])  # the mean of each pair's labels
    assert teacher.last_wait.answered == 2 and teacher.last_wait.timed_out
    answers = teacher.answers(pairs)
    assert list(zip(answers.pair.tolist(), answers.annotator, answers.value.tolist(), strict=True)) == [
        (0, "ann", 1.0), (0, "bob", 0.5), (1, "ann", 0.0), (1, "bob", pytest.approx(np.nan, nan_ok=True)),
        (2, "ann", pytest.approx(0.8)),
    ]
    store.submit(3, "cid", 0.2)
    teacher = HumanTeacher(store, HumanTeacherConfig(redundancy=2, timeout_s=60, render_media=False))
    assert np.allclose(teacher.label(pairs), [0.75, 0.0, 0.5]) and not teacher.last_wait.timed_out


def test_bad_settings_are_refused():
    with pytest.raises(InvalidLabelError, match="min_fraction"):
        HumanTeacherConfig(min_fraction=0)
    with pytest.raises(InvalidLabelError, match="redundancy must be >= 1, got 0"):
        HumanTeacherConfig(redundancy=0)
    with pytest.raises(InvalidLabelError, match="media_dir"):
        HumanTeacher(None, HumanTeacherConfig())  # type: ignore[arg-type]


def test_segment_plots_reveal_the_segment_step_by_step():
    obs = np.linspace(0, 1, 8)[:, None] * np.ones((1, 2))
    frames = plot_frames(obs, np.zeros(2), np.ones(2))
    assert frames.shape == (8, HEIGHT, WIDTH, 3) and frames.dtype == np.uint8
    grey = (frames == 235).all(axis=-1).mean(axis=(1, 2))
    assert grey[0] > 0.9 and grey[-1] < 0.05 and np.all(np.diff(grey) < 0)
