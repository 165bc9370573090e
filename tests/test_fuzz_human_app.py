"""Hostile input at every endpoint of the web app: never an HTTP 500, and a 422 names the field.

Each field of each POST body is replaced in turn by 24 hostile JSON values (NaN, Infinity, 1e400,
booleans for numbers, numbers as strings, lone-surrogate and NUL escapes, 2**64, deep nesting,
objects and arrays); 17 malformed bodies (empty, not JSON, not UTF-8, 5,000-deep brackets, wrong
content types) go to every POST; the GET endpoints get hostile query strings and media names, and
105 Host headers built around the allowed names are each refused (400).
Before the fix, NaN / Infinity / 1e400 and a ``\\ud800`` escape gave HTTP 500 (FastAPI's
validation handler failed echoing them back) and ``"query_id": true`` labelled query 1.
"""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from rlkit.human import LabelStore
from rlkit.human.app import create_app
from rlkit.human.settings import ServeConfig
from tests.fake_data import make_pairs, make_trajectories
from tests.web_client import client_for, login, open_phase

pytestmark = pytest.mark.server

HOSTILE_VALUES = [
    "NaN", "Infinity", "-Infinity", "1e400", "-1e400", "true", "false", "null", '"1"', '"0.5"', '""',
    '"\\ud800"', '"x\\u0000y"', '"\\udfff\\ud800"', str(2**64), "-1", "0", "1.5", "[]", "{}",
    "[" * 100 + "]" * 100, '{"a": {"b": [1, {"c": NaN}]}}', '"' + "x" * 5_000 + '"', "-0",
]
BAD_BODIES = [
    b"", b"null", b"[]", b"1", b'"text"', b"{", b"[" * 5_000, b'{"a": ' * 1_000, b"\xff\xfe\x00",
    b'{"text": "a", "text": NaN}', b"NaN", b"\xef\xbb\xbf{}", b'{"\\ud800": 1}', b"{}" * 10,
    b'{"query_id": 1, "value": 1', b"\x00", b'{"specs": [' + b"[" * 3_000 + b"]",
]
ENDPOINTS = {  # a valid body for each; each field is then made hostile in turn
    "/api/session": {"annotator": "mallory"},
    "/api/labels": {"query_id": 1, "value": 1.0},
    "/api/labels/undo": {},
    "/api/m3hf/preview": {"text": "Agent 0 should pick up the tomato."},
    "/api/m3hf/commit": {"phase": 3, "text": "faster", "specs": [
        {"template": "success", "agents": "all", "params": {"bonus": 10.0}, "reason": "x"}]},
}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> tuple[TestClient, dict[str, str]]:
    run_dir = tmp_path_factory.mktemp("run")
    source, _ = open_phase(run_dir)
    source.store.add_queries(make_pairs(make_trajectories(), 3))
    app = create_app(LabelStore(run_dir), ServeConfig(run_dir=str(run_dir)))
    client = client_for(app, raise_server_exceptions=False)
    return client, login(client, "ann") | {"Content-Type": "application/json"}


def with_field(body: dict[str, object], field: str, value: str) -> bytes:
    """``body`` as JSON text with ``field``'s value replaced by the raw JSON token ``value``."""
    marker = "__HOSTILE__"
    text = json.dumps(body | {field: marker}).replace(json.dumps(marker), value)
    return text.encode()


def test_no_hostile_field_value_gives_a_500_and_every_422_names_its_field(client) -> None:
    client, headers = client
    statuses: dict[int, int] = {}
    for path, body in ENDPOINTS.items():
        for field in body:
            for value in HOSTILE_VALUES:
                response = client.post(path, content=with_field(body, field, value), headers=headers)
                statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
                assert response.status_code != 500, (path, field, value, response.text)
                response.json()  # every answer is JSON, whatever was sent
                if response.status_code == 422:
                    assert field in response.json()["detail"], (path, field, value, response.text)
    assert statuses[422] > 100


@pytest.mark.parametrize("path", list(ENDPOINTS))
def test_no_malformed_body_gives_a_500(client, path: str) -> None:
    client, headers = client
    for body in BAD_BODIES:
        for content_type in ("application/json", "text/plain", "application/x-www-form-urlencoded"):
            response = client.post(path, content=body, headers=headers | {"Content-Type": content_type})
            assert response.status_code != 500, (path, body[:40], content_type, response.text)
            assert response.status_code < 500


@pytest.mark.parametrize(
    ("path", "body", "named"),
    [
        ("/api/labels", b'{"query_id": 1, "value": NaN}', "value: Input should be a finite number"),
        ("/api/labels", b'{"query_id": 1, "value": Infinity}', "value: Input should be a finite number"),
        ("/api/labels", b'{"query_id": 1, "value": 1e400}', "value: Input should be a finite number"),
        ("/api/labels", b'{"query_id": NaN, "value": 1.0}', "query_id: Input should be a valid integer"),
        ("/api/labels", b'{"query_id": 1e400, "value": 1.0}', "query_id: Input should be a valid integer"),
        ("/api/labels", b'{"query_id": true, "value": 1.0}', "query_id: Input should be a valid integer"),
        ("/api/labels", b'{"query_id": 1, "value": "1"}', "value: Input should be a valid number"),
        ("/api/m3hf/preview", b'{"text": "hurry \\ud800"}', "text: Input should be a valid string"),
        ("/api/m3hf/commit", b'{"phase": 3, "text": "hurry \\ud800", "specs": []}', "text: Input should be"),
        ("/api/m3hf/commit", b'{"phase": true, "text": "x", "specs": []}', "phase: Input should be a valid"),
        ("/api/m3hf/commit", b'{"phase": 3, "text": "x\\u0000", "specs": []}', "text: Value error, a NUL"),
        ("/api/m3hf/commit", b'{"phase": 3, "text": "x", "specs": [{"\\ud800": 1}]}', "specs: "),
        ("/api/session", b'{"annotator": "\\ud800"}', "annotator: Input should be a valid string"),
    ],
)
def test_the_reported_500s_are_422s_naming_the_field(client, path: str, body: bytes, named: str) -> None:
    client, headers = client
    response = client.post(path, content=body, headers=headers)
    assert response.status_code == 422, response.text
    assert named in response.json()["detail"]


def test_true_is_not_query_1(client) -> None:
    client, headers = client
    response = client.post("/api/labels", content=b'{"query_id": true, "value": 1.0}', headers=headers)
    assert response.status_code == 422
    assert client.get("/api/queue/next").json()["progress"]["done"] == 0  # nothing was stored


def test_no_hostile_query_string_or_media_name_gives_a_500(client) -> None:
    client, _ = client
    paths = ["/", "/m3hf", "/dashboard", "/api/session", "/api/scale", "/api/queue/next", "/api/dashboard"]
    suffixes = ["?x=%ud800", "?token=%00", "?a=" + "b" * 5_000, "?%ff=%fe", "?query_id=NaN"]
    names = ["%00", "%ff%fe", "..%2F..%2Fetc%2Fpasswd", "a" * 5_000, "%ED%A0%80", "x/../../y", "%2e%2e"]
    for path in paths:
        for suffix in suffixes:
            assert client.get(path + suffix).status_code < 500, (path + suffix)[:60]
    for name in names:
        assert client.get(f"/media/{name}").status_code == 404, name[:40]


def test_no_host_header_built_around_an_allowed_name_gets_in(client) -> None:
    """Each allowed name with hostile text before or after it: every one a 400, none a 500
    (``[::1]evil.example`` passed as ``::1`` before)."""
    client, _ = client
    names = ["127.0.0.1", "localhost", "[::1]", "127.0.0.1:8765", "[::1]:8765"]
    suffixes = ["evil.example", ".evil.example", "@evil.example", ":8765evil", ":1:2", ":", ":99999",
                " evil", "/evil", "]", "[", "%00", "\\\\evil", "#", "?x"]
    prefixes = ["evil.", "evil@", "[", "]", "x", ":"]
    hosts = [name + suffix for name in names for suffix in suffixes]
    hosts += [prefix + name for name in names for prefix in prefixes]
    for host in hosts:
        response = client.get("/api/scale", headers={"Host": host})
        assert response.status_code == 400, (host, response.status_code)
