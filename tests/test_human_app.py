"""The web app over HTTP (in process): the label queue API, its pages, and its defences."""

import hashlib

import itsdangerous
import numpy as np
import pytest
from fastapi.testclient import TestClient

from rlkit.errors import InvalidLabelError
from rlkit.feedback import FIVE, TERNARY
from rlkit.human import LabelStore
from rlkit.human.app import create_app
from rlkit.human.security import Signer, UnsafeBindError, check_bind
from rlkit.human.settings import ServeConfig
from tests.fake_data import make_pairs, make_trajectories
from tests.web_client import client_for, login

pytestmark = pytest.mark.server


@pytest.fixture
def run(tmp_path):
    store = LabelStore(tmp_path)
    ids = store.add_queries(make_pairs(make_trajectories(), 4), redundancy=2,
                            media=([f"l{i}.gif" for i in range(4)], [f"r{i}.gif" for i in range(4)]))
    media = tmp_path / "media"
    media.mkdir()
    (media / "l0.gif").write_bytes(b"GIF89a")
    (tmp_path / "secret.txt").write_text("not for annotators")
    return store, ids, create_app(store, ServeConfig(run_dir=str(tmp_path)))


def test_label_submit_skip_undo_and_progress(run):
    store, ids, app = run
    client = client_for(app)
    headers = login(client, "ann")
    first = client.get("/api/queue/next").json()
    assert first["query"]["id"] == ids[0] and first["query"]["left_media"] == "l0.gif"
    assert first["progress"] == {"done": 0, "remaining": 4, "total": 4}
    done = client.post("/api/labels", json={"query_id": int(ids[0]), "value": 1.0}, headers=headers)
    assert done.status_code == 200 and done.json()["annotator"] == "ann"
    skip = client.post("/api/labels", json={"query_id": int(ids[1]), "value": None}, headers=headers)
    assert skip.json()["value"] is None
    assert client.get("/api/queue/next").json()["progress"] == {"done": 2, "remaining": 2, "total": 4}
    again = client.post("/api/labels", json={"query_id": int(ids[0]), "value": 0.0}, headers=headers)
    assert again.status_code == 409 and "undo it" in again.json()["detail"]
    off_scale = client.post("/api/labels", json={"query_id": int(ids[2]), "value": 0.3}, headers=headers)
    assert off_scale.status_code == 422 and "not on the 'five' scale" in off_scale.json()["detail"]
    missing = client.post("/api/labels", json={"query_id": 999, "value": 1.0}, headers=headers)
    assert missing.status_code == 404
    undo = client.post("/api/labels/undo", json={}, headers=headers).json()
    assert undo["undone"]["query_id"] == ids[1] and undo["query"]["id"] == ids[1]
    assert [(r.annotator, r.value) for r in store.live_labels()] == [("ann", 1.0)]


def test_pages_render_the_scale_as_named_buttons_with_keys(run):
    _, _, app = run
    client = client_for(app)
    assert 'id="login"' in client.get("/").text  # no annotator yet: the login form
    login(client, "ann")
    html = client.get("/").text
    assert '<kbd>1</kbd> A much better' in html and '<kbd>5</kbd> B much better' in html
    assert 'data-key="1" data-value="1.0"' in html and 'data-key="5" data-value="0.0"' in html
    assert "labelling as <b id=\"annotator-name\">ann</b>" in html
    scale = client.get("/api/scale").json()
    assert scale["name"] == "five" and scale["levels"] == [0.0, 0.2, 0.5, 0.8, 1.0]
    assert "no labels yet" in client.get("/dashboard").text


def test_the_server_follows_a_scale_a_trainer_sets_after_it_started(run, tmp_path):
    """`rlkit serve` started first (five levels); then pref-rl sets ternary on the same store."""
    store, ids, app = run
    client = client_for(app)
    headers = login(client, "ann")
    LabelStore(tmp_path).set_scale(TERNARY)  # the trainer's own connection to the run's database
    html = client.get("/").text
    assert '<kbd>1</kbd> A better' in html and '<kbd>2</kbd> tie' in html and '<kbd>3</kbd> B better' in html
    assert "<kbd>4</kbd>" not in html and "much better" not in html
    assert client.get("/api/scale").json() == {"name": "ternary", "levels": [0.0, 0.5, 1.0],
                                               "names": ["B better", "tie", "A better"]}
    # a page still showing five levels sends 0.2: refused, naming the value and the scale
    stale = client.post("/api/labels", json={"query_id": int(ids[0]), "value": 0.2}, headers=headers)
    assert stale.status_code == 422
    assert "0.2 is not on the 'ternary' scale (0.0, 0.5, 1.0)" in stale.json()["detail"]
    assert store.live_labels() == [] and store.progress("ann").done == 0
    tie = client.post("/api/labels", json={"query_id": int(ids[0]), "value": 0.5}, headers=headers)
    assert tie.status_code == 200 and [r.value for r in store.live_labels()] == [0.5]
    with pytest.raises(InvalidLabelError, match="labels on the 'ternary' scale; it cannot switch to 'five'"):
        LabelStore(tmp_path).set_scale(FIVE)  # from now on the labels fix the scale


def test_posts_need_the_csrf_token_and_a_signed_annotator(run):
    store, ids, app = run
    client = client_for(app)
    refused = client.post("/api/session", json={"annotator": "ann"})
    assert refused.status_code == 403 and "X-CSRF-Token" in refused.json()["detail"]
    headers = login(client, "ann")
    wrong = client.post("/api/labels", json={"query_id": int(ids[0]), "value": 1.0},
                        headers={"X-CSRF-Token": "0" * 64})
    assert wrong.status_code == 403
    # An edited annotator cookie (ann's signature under bob's name) is not a session.
    cookie = client.cookies.get("rlkit_annotator")
    name, signature = cookie.rsplit(".", 1)
    assert name == "ann"
    client.cookies.delete("rlkit_annotator")
    client.cookies.set("rlkit_annotator", f"bob.{signature}")
    forged = client.post("/api/labels", json={"query_id": int(ids[0]), "value": 1.0}, headers=headers)
    assert forged.status_code == 401
    # Another browser's CSRF token does not work with this browser's cookies.
    other = client_for(app)
    other_headers = login(other, "bob")
    visitor = client.cookies.get("rlkit_visitor")
    other.cookies.delete("rlkit_visitor")
    other.cookies.set("rlkit_visitor", visitor)
    assert other.post("/api/labels/undo", json={}, headers=other_headers).status_code == 403
    assert store.live_labels() == []


def test_signatures_are_itsdangerous_bound_to_secret_purpose_and_key():
    signer = Signer("s" * 64)
    cookie = signer.annotator_cookie("ann.x@y", key="k1")  # ids may hold the separator
    assert signer.annotator_from_cookie(cookie, lambda annotator: "k1") == "ann.x@y"
    assert signer.annotator_from_cookie(cookie, lambda annotator: "k2") is None  # token changed
    assert signer.annotator_from_cookie(cookie, lambda annotator: None) is None  # unknown annotator
    assert Signer("t" * 64).annotator_from_cookie(cookie, lambda annotator: "k1") is None
    visitor = "v" * 32
    token = signer.csrf_token(visitor)
    assert signer.verify("csrf", visitor, token) and not signer.verify("csrf", "w" * 32, token)
    assert not signer.verify("csrf", visitor, "not base64 !")
    assert signer.annotator_from_cookie(f"{visitor}.{token}") is None  # a CSRF token is no session
    plain = itsdangerous.Signer("s" * 64, salt="rlkit.csrf", digest_method=hashlib.sha256)
    assert plain.verify_signature(visitor, token)


def test_annotators_cannot_touch_each_others_labels(run):
    store, ids, app = run
    ann, bob = client_for(app), client_for(app)
    ann_headers, bob_headers = login(ann, "ann"), login(bob, "bob")
    ann.post("/api/labels", json={"query_id": int(ids[0]), "value": 1.0}, headers=ann_headers)
    bob.post("/api/labels", json={"query_id": int(ids[0]), "value": 0.0}, headers=bob_headers)
    assert bob.post("/api/labels/undo", json={}, headers=bob_headers).json()["undone"]["value"] == 0.0
    assert bob.post("/api/labels/undo", json={}, headers=bob_headers).json()["undone"] is None
    assert [(r.annotator, r.value) for r in store.live_labels()] == [("ann", 1.0)]


def test_media_is_served_only_from_the_media_folder(run):
    _, _, app = run
    client = client_for(app)
    assert client.get("/media/l0.gif").content == b"GIF89a"
    for name in ("../secret.txt", "..%2Fsecret.txt", "%2e%2e/secret.txt", "/etc/passwd", "nope.gif"):
        response = client.get(f"/media/{name}")
        assert response.status_code == 404, name
        assert b"not for annotators" not in response.content


def test_limits_on_bodies_and_ids_and_security_headers(run):
    _, _, app = run
    client = client_for(app)
    headers = login(client, "ann")
    huge = client.post("/api/labels", content=b"x" * 70_000,
                       headers=headers | {"Content-Type": "application/json"})
    assert huge.status_code == 413 and "byte limit" in huge.json()["detail"]
    long_name = client.post("/api/session", json={"annotator": "a" * 65}, headers=headers)
    assert long_name.status_code == 422
    response = client.get("/api/scale")
    assert response.headers["X-Frame-Options"] == "DENY"
    assert "script-src 'self'" in response.headers["Content-Security-Policy"]


def test_a_token_guards_every_request_and_non_loopback_binds_need_one(tmp_path):
    with pytest.raises(UnsafeBindError, match="host='0.0.0.0'"):
        check_bind("0.0.0.0", None)
    check_bind("127.0.0.1", None)
    check_bind("::1", None)
    check_bind("0.0.0.0", "t" * 16)
    token = "correct-horse-battery"
    app = create_app(LabelStore(tmp_path), ServeConfig(run_dir=str(tmp_path), token=token))
    client = client_for(app)
    assert client.get("/api/scale").status_code == 401
    assert client.get("/api/scale", headers={"X-Rlkit-Token": "wrong-token-123456"}).status_code == 401
    assert client.get("/api/scale", headers={"X-Rlkit-Token": token}).status_code == 200
    entry = client.get(f"/?token={token}", follow_redirects=False)
    assert entry.status_code == 303 and "token" not in entry.headers["location"]
    assert client.get("/api/scale").status_code == 200  # the cookie now carries it


def test_sessions_survive_a_server_restart(tmp_path):
    """The signing secret is kept in the store, so a restarted server knows its annotators."""
    store = LabelStore(tmp_path)
    (query_id,) = store.add_queries(make_pairs(make_trajectories(), 1))
    client = client_for(create_app(store))
    headers = login(client, "ann")
    store.close()
    restarted = LabelStore(tmp_path)
    client.app = create_app(restarted)
    assert client.post("/api/labels", json={"query_id": int(query_id), "value": 0.8},
                       headers=headers).status_code == 200
    assert np.isclose(restarted.live_labels()[0].value, 0.8)


def test_rlkit_serve_refuses_to_expose_the_app_without_a_token(tmp_path, capsys):
    from rlkit.cli import main

    assert main(["serve", "host=0.0.0.0", "--run-dir", str(tmp_path)]) == 2
    assert "host='0.0.0.0' exposes the labelling app" in capsys.readouterr().err


def test_a_tokenless_server_answers_only_to_its_own_host_names(tmp_path):
    """DNS rebinding: a page on evil.example whose name now resolves to 127.0.0.1 sends its own
    name as Host; the app refuses it, with the security headers, before touching the store."""
    store = LabelStore(tmp_path)
    app = create_app(store, ServeConfig(run_dir=str(tmp_path), allowed_hosts=("labels.internal",)))
    for host in ("evil.example", "evil.example:8765", "127.0.0.1.evil.example", "", "[::2]:8765"):
        response = TestClient(app, base_url="http://127.0.0.1:8765").get("/api/scale", headers={"Host": host})
        assert response.status_code == 400, host
        assert "is not this server" in response.json()["detail"]
        assert response.headers["X-Frame-Options"] == "DENY" and "script-src" in response.headers[
            "Content-Security-Policy"]
    for host in ("127.0.0.1:8765", "localhost:8765", "LOCALHOST", "[::1]:8765", "labels.internal:80"):
        assert TestClient(app).get("/api/scale", headers={"Host": host}).status_code == 200, host
    # with a token, the token guards (a rebinding page cannot present it): any name may be used
    token = "correct-horse-battery"
    shared = create_app(store, ServeConfig(run_dir=str(tmp_path), host="0.0.0.0", token=token))
    client = TestClient(shared, base_url="http://labels.example.org")
    assert client.get("/api/scale").status_code == 401
    assert client.get("/api/scale", headers={"X-Rlkit-Token": token}).status_code == 200


def test_every_error_carries_the_security_headers_and_a_chunked_body_over_the_limit_is_413(run):
    _, _, app = run
    client = client_for(app)
    headers = login(client, "ann") | {"Content-Type": "application/json"}

    def chunks():
        for _ in range(20):
            yield b" " * 8_192

    declared = client.post("/api/labels", content=b"x" * 70_000, headers=headers)
    chunked = client.post("/api/labels", content=chunks(), headers=headers)
    for response in (declared, chunked):
        assert response.status_code == 413, response.text
        assert response.json()["detail"] == "request body over the 65536-byte limit"
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
    for response in (client.get("/media/nope.gif"), client.post("/api/labels", json={}, headers=headers),
                     client.post("/api/labels", json={"query_id": 1, "value": 1.0})):
        assert response.status_code in (403, 404, 422)
        assert response.headers["X-Frame-Options"] == "DENY"
    token_app = create_app(LabelStore(app.state.store.url), ServeConfig(token="t" * 16))
    unauthorised = client_for(token_app).get("/api/scale")
    assert unauthorised.status_code == 401 and unauthorised.headers["X-Frame-Options"] == "DENY"


def test_no_docs_page_loads_scripts_from_a_cdn_but_the_schema_is_served(run):
    _, _, app = run
    client = client_for(app)
    assert client.get("/docs").status_code == 404 and client.get("/redoc").status_code == 404
    assert client.get("/openapi.json").json()["info"]["title"] == "rlkit labelling"
