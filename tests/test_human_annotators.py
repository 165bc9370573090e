"""Per-annotator tokens on a shared `rlkit serve` (issue 16, item 10): with them, a session as
"carl" needs carl's token, so another token holder cannot label or undo as carl; without them,
annotators are self-asserted as before."""

import stat

import pytest

from rlkit.errors import ConfigError
from rlkit.human.annotators import read_tokens
from rlkit.human.app import create_app
from rlkit.human.settings import ServeConfig
from rlkit.human.store import LabelStore
from tests.fake_data import make_pairs, make_trajectories
from tests.web_client import client_for

CARL, ANNA = "carl-token-0123456789", "anna-token-0123456789"


def app_with(tmp_path, **settings):
    store = LabelStore(tmp_path)
    ids = store.add_queries(make_pairs(make_trajectories(), 2), redundancy=2)
    return create_app(store, ServeConfig(run_dir=str(tmp_path), **settings)), ids


def session(client, annotator, token=None):
    csrf = client.get("/api/session").json()["csrf"]
    body = {"annotator": annotator} | ({} if token is None else {"token": token})
    return client.post("/api/session", json=body, headers={"X-CSRF-Token": csrf}), {"X-CSRF-Token": csrf}


def test_a_session_as_carl_needs_carls_token(tmp_path):
    tokens = tmp_path / "tokens.txt"
    tokens.write_text(f"# who labels\ncarl {CARL}\nanna {ANNA}\n")
    app, ids = app_with(tmp_path, annotator_tokens=str(tokens))

    carl = client_for(app)
    response, headers = session(carl, "carl", CARL)
    assert response.status_code == 200 and response.json()["annotator"] == "carl"
    label = carl.post("/api/labels", json={"query_id": int(ids[0]), "value": 1.0}, headers=headers)
    assert label.status_code == 200

    anna = client_for(app)
    for token in (None, ANNA, CARL[:-1] + "x", ""):  # none, her own, a near miss, empty
        response, _ = session(anna, "carl", token)
        assert response.status_code == 403 and "carl's own token" in response.json()["detail"]
        assert anna.get("/api/session").json()["annotator"] is None  # no cookie was set
    response, _ = session(anna, "mallory", ANNA)  # an id without a token
    assert response.status_code == 403
    assert anna.post("/api/labels/undo", headers=headers).status_code == 403  # carl's CSRF is not hers
    response, anna_headers = session(anna, "anna", ANNA)
    assert response.status_code == 200
    assert anna.get("/api/session").json()["annotator"] == "anna"
    undo = anna.post("/api/labels/undo", headers=anna_headers)
    assert undo.status_code == 200 and undo.json()["undone"] is None  # only her own labels
    assert carl.get("/api/queue/next").json()["progress"]["done"] == 1  # carl's label stands

    # a cookie signed for carl under his old token is worthless once his token changes
    tokens.write_text(f"carl {'new-' + CARL}\nanna {ANNA}\n")
    renewed, _ = app_with(tmp_path / "renewed", annotator_tokens=str(tokens))
    replay = client_for(renewed)
    replay.cookies = carl.cookies
    assert replay.get("/api/session").json()["annotator"] is None


def test_without_tokens_annotators_are_self_asserted_as_before(tmp_path):
    app, _ = app_with(tmp_path)
    response, _ = session(client_for(app), "carl")
    assert response.status_code == 200 and response.json()["annotator"] == "carl"


def test_serve_issues_tokens_into_a_private_file_and_keeps_them(tmp_path):
    app, _ = app_with(tmp_path, issue_tokens=("carl", "anna"))
    path = tmp_path / "annotator_tokens.txt"
    issued = read_tokens(path)
    assert sorted(issued) == ["anna", "carl"] and all(len(t) >= 16 for t in issued.values())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    response, _ = session(client_for(app), "carl", issued["carl"])
    assert response.status_code == 200
    app_with(tmp_path / "again", annotator_tokens=str(path), issue_tokens=("carl", "bo"))
    again = read_tokens(path)
    assert again["carl"] == issued["carl"] and again["anna"] == issued["anna"] and "bo" in again


@pytest.mark.parametrize(("text", "message"), [
    ("carl short\n", "line 1: carl's token is shorter than 16"),
    (f"carl {CARL}\ncarl {ANNA}\n", "line 2: carl has a token already"),
    (f"c/arl {CARL}\n", "line 1: 'c/arl' is not an annotator id"),
    (f"carl {CARL} extra\n", "expected 'annotator token', got 3 fields"),
    ("# nobody\n", "no annotators in it"),
])
def test_a_bad_token_file_is_refused_naming_its_line(tmp_path, text, message):
    (tmp_path / "tokens.txt").write_text(text)
    with pytest.raises(ConfigError, match=message):
        app_with(tmp_path, annotator_tokens=str(tmp_path / "tokens.txt"))
