"""A real server process: two annotators labelling at once, and a SIGKILL in the middle of a session."""

import os
import signal
import threading
from collections import Counter

import numpy as np
import pytest

from rlkit.human import LabelStore
from rlkit.human.client import AnnotatorClient
from rlkit.human.server import free_port, start_server_process
from rlkit.human.settings import ServeConfig
from tests.fake_data import make_pairs, make_trajectories

pytestmark = pytest.mark.server


def label_all(url: str, annotator: str, value: float, sent: list, errors: list) -> None:
    """Fetch the next pair and label it until the queue is empty, as a person at the page would."""
    client = AnnotatorClient(url, annotator)
    try:
        while (query := client.next()["query"]) is not None:
            response = client.submit(query["id"], value)
            if response.status_code != 200:
                errors.append((annotator, query["id"], response.status_code, response.text))
                return
            sent.append(query["id"])
    finally:
        client.close()


def test_two_annotators_label_500_pairs_each_at_once_and_nothing_is_lost_or_doubled(tmp_path):
    store = LabelStore(tmp_path)
    trajectories = make_trajectories(n=20, length=60)
    pairs = make_pairs(trajectories, 540)
    _, first = np.unique(np.hstack([pairs.left, pairs.right]), axis=0, return_index=True)
    store.add_queries(pairs.subset(np.sort(first)[:500]), redundancy=2)
    assert store.n_queries() == 500
    port = free_port()
    server = start_server_process(ServeConfig(run_dir=str(tmp_path), port=port))
    try:
        sent = {"ann": [], "bob": []}
        errors: list = []
        threads = [threading.Thread(target=label_all, args=(f"http://127.0.0.1:{port}", name, value,
                                                            sent[name], errors))
                   for name, value in (("ann", 1.0), ("bob", 0.0))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        server.kill()
        server.join()
    assert errors == []
    assert len(sent["ann"]) == len(sent["bob"]) == 500
    labels = store.live_labels()
    per_key = Counter((r.query_id, r.annotator) for r in labels)
    assert len(labels) == 1000 and max(per_key.values()) == 1
    assert {r.query_id for r in labels if r.annotator == "ann"} == set(range(1, 501))
    assert all(r.value == (1.0 if r.annotator == "ann" else 0.0) for r in labels)


def test_a_server_killed_with_sigkill_loses_no_acknowledged_label(tmp_path):
    store = LabelStore(tmp_path)
    store.add_queries(make_pairs(make_trajectories(), 30))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = start_server_process(ServeConfig(run_dir=str(tmp_path), port=port))
    client = AnnotatorClient(url, "ann")
    acknowledged = []
    for value in (1.0, 0.8, 0.5, 0.2, 0.0, None, 1.0):
        query_id = client.next()["query"]["id"]
        assert client.submit(query_id, value).status_code == 200
        acknowledged.append((query_id, value))
    undone = client.undo()["undone"]  # the last one, retracted before the crash
    assert undone["query_id"] == acknowledged.pop()[0]
    os.kill(server.pid, signal.SIGKILL)
    server.join()
    assert server.exitcode == -signal.SIGKILL
    server = start_server_process(ServeConfig(run_dir=str(tmp_path), port=port))
    try:
        resumed = client.next()  # the same browser session, cookies and all
        assert resumed["progress"] == {"done": 6, "remaining": 24, "total": 30}
        assert resumed["query"]["id"] == 7
    finally:
        client.close()
        server.kill()
        server.join()
    given = [(r.query_id, None if r.value != r.value else r.value) for r in store.live_labels()]
    assert given == acknowledged
