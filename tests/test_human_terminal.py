"""The terminal session, driven through its input stream and through `rlkit label --human` on stdin."""

import io
import json

import numpy as np
from rich.console import Console

from rlkit.cli import main
from rlkit.feedback import PreferenceDataset
from rlkit.human import LabelStore
from rlkit.human.terminal import SPARKS, TerminalSession, sparkline
from tests.fake_data import make_pairs, make_trajectories


def test_keys_skip_undo_and_quit_in_the_terminal(tmp_path):
    trajectories = make_trajectories()
    store = LabelStore(tmp_path)
    ids = store.add_queries(make_pairs(trajectories, 5))
    screen = io.StringIO()
    # 1 = A much better; 9 is not a key (asked again); 5; undo; 3 on the undone pair; skip; quit.
    session = TerminalSession(store, "ann", trajectories, console=Console(file=screen, width=120),
                              stream=io.StringIO("1\n9\n5\nu\n3\ns\nq\n"))
    assert session.run() == 4
    text = screen.getvalue()
    assert "1 A much better" in text and "5 B much better" in text
    assert "Please select one of the available options" in text
    assert f"undid pair {ids[1]}" in text and "obs[0]" in text and any(c in text for c in SPARKS)
    assert "3 labelled · 2 to go" in text
    labels = store.live_labels()
    assert [(r.query_id, r.interface) for r in labels] == [(ids[0], "terminal"), (ids[1], "terminal"),
                                                           (ids[2], "terminal")]
    assert np.allclose([r.value for r in labels], [1.0, 0.5, np.nan], equal_nan=True)


def test_sparklines_span_the_blocks():
    assert sparkline(np.array([0.0, 0.5, 1.0]), 0.0, 1.0) == "▁▅█"
    assert sparkline(np.array([2.0, 2.0]), 2.0, 2.0) == "▁▁"


def test_rlkit_label_human_reads_keys_from_stdin_and_exports_a_dataset(tmp_path, monkeypatch, capsys):
    trajectories_path = make_trajectories().save(tmp_path / "trajectories")
    run_dir = tmp_path / "run"
    monkeypatch.setattr("sys.stdin", io.StringIO("1\n2\n3\n"))  # then end of input: the session ends
    code = main(["label", "--human", "--run-dir", str(run_dir), "--logger", "jsonl",
                 f"trajectories={trajectories_path}", "n_pairs=4", "segment_length=10", "annotator=ann",
                 "teacher.scale=five"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["answered"] == 3 and summary["labels_in_store"] == 3
    dataset = PreferenceDataset.load(summary["path"])
    assert list(dataset.labels) == [1.0, 0.8, 0.5] and set(dataset.annotators) == {"ann"}
    assert set(dataset.sources) == {"human/terminal"}
    assert LabelStore(run_dir).progress("ann").remaining == 1  # resumable: the fourth pair waits
