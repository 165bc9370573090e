"""The web app's gate: wrong access tokens are limited per client, and the Host header is parsed
strictly. Before: 1,051 token guesses a second went through unthrottled, and ``[::1]evil.example``
passed the Host check (everything after the closing bracket was ignored)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from rlkit.human import LabelStore
from rlkit.human.app import create_app
from rlkit.human.security import FailedLoginLimiter, host_name
from rlkit.human.settings import ServeConfig

pytestmark = pytest.mark.server
TOKEN = "correct-horse-battery"


@pytest.fixture
def shared_app(tmp_path):
    return create_app(LabelStore(tmp_path), ServeConfig(run_dir=str(tmp_path), host="0.0.0.0", token=TOKEN))


def test_a_burst_of_guesses_is_refused_with_429_and_other_clients_still_get_in(shared_app) -> None:
    guesser = TestClient(shared_app, client=("203.0.113.7", 50000))
    statuses = [guesser.get("/api/scale", headers={"X-Rlkit-Token": f"guess-{i:012d}"}).status_code
                for i in range(1000)]
    # ten wrong tokens at once, then one each 6 s (a slow machine may take that long for the burst)
    assert statuses[:10] == [401] * 10 and statuses[10] == 429 and statuses.count(429) >= 980
    refused = guesser.get("/api/scale", headers={"X-Rlkit-Token": "guess"})
    assert refused.status_code == 429 and 1 <= int(refused.headers["Retry-After"]) <= 6
    assert "too many wrong tokens from 203.0.113.7" in refused.json()["detail"]
    assert refused.headers["X-Frame-Options"] == "DENY"
    # while refused, even the right token is not compared: a 200 would tell the guesser it won
    assert guesser.get("/api/scale", headers={"X-Rlkit-Token": TOKEN}).status_code == 429
    assert guesser.get("/api/scale", params={"token": "guess"}).status_code == 429
    annotator = TestClient(shared_app, client=("198.51.100.2", 50000))
    assert annotator.get("/api/scale", headers={"X-Rlkit-Token": TOKEN}).status_code == 200
    assert annotator.get("/api/scale").status_code == 401  # no token presented: not counted
    for _ in range(20):
        assert annotator.get("/api/scale", headers={"X-Rlkit-Token": TOKEN}).status_code == 200


def test_the_bucket_refills_one_guess_each_refill_period() -> None:
    now = [0.0]
    limiter = FailedLoginLimiter(burst=3, refill_s=6.0, clock=lambda: now[0])
    for _ in range(3):
        assert limiter.retry_after("a") is None
        limiter.failed("a")
    assert limiter.retry_after("a") == 6 and limiter.retry_after("b") is None
    now[0] = 4.5
    assert limiter.retry_after("a") == 2
    now[0] = 6.0
    assert limiter.retry_after("a") is None
    limiter.failed("a")
    assert limiter.retry_after("a") == 6
    now[0] = 1000.0
    assert limiter.retry_after("a") is None  # full again, never above the burst
    for _ in range(3):
        limiter.failed("a")
    assert limiter.retry_after("a") == 6


@pytest.mark.parametrize("header", [
    "[::1]evil.example", "[::1]:8765evil", "[::1]:", "[::1", "::1", "[evil.example]", "[::1]:99999",
    "127.0.0.1:8765:80", "localhost:abc", "127.0.0.1 evil.example", "localhost@evil.example",
    "localhost:8765/evil", "", " ", "[]", "[::1]:8765:1",
])
def test_a_malformed_host_header_is_refused(tmp_path, header: str) -> None:
    assert host_name(header) is None
    app = create_app(LabelStore(tmp_path), ServeConfig(run_dir=str(tmp_path)))
    response = TestClient(app).get("/api/scale", headers={"Host": header})
    assert response.status_code == 400 and "is not this server" in response.json()["detail"]


@pytest.mark.parametrize(("header", "name"), [
    ("[::1]", "::1"), ("[::1]:8765", "::1"), ("[0:0:0:0:0:0:0:1]:80", "::1"), ("LOCALHOST:8765", "localhost"),
    ("127.0.0.1", "127.0.0.1"), ("labels.internal:80", "labels.internal"),
])
def test_a_well_formed_host_header_names_its_host(header: str, name: str) -> None:
    assert host_name(header) == name


def test_a_bare_ipv6_bind_address_is_its_own_allowed_host(tmp_path) -> None:
    app = create_app(LabelStore(tmp_path), ServeConfig(run_dir=str(tmp_path), host="::1",
                                                       allowed_hosts=("[fd00::5]",)))
    for header in ("[::1]:8765", "[fd00::5]:8765"):
        assert TestClient(app).get("/api/scale", headers={"Host": header}).status_code == 200, header


def test_guessing_an_annotators_token_at_login_is_limited_too(tmp_path) -> None:
    carl = "carl-token-0123456789"
    (tmp_path / "tokens.txt").write_text(f"carl {carl}\n")
    app = create_app(LabelStore(tmp_path), ServeConfig(run_dir=str(tmp_path),
                                                       annotator_tokens=str(tmp_path / "tokens.txt")))

    def login_as_carl(client: TestClient, token: str) -> int:
        csrf = client.get("/api/session").json()["csrf"]
        body = {"annotator": "carl", "token": token}
        return client.post("/api/session", json=body, headers={"X-CSRF-Token": csrf}).status_code

    guesser = TestClient(app, base_url="http://127.0.0.1:8765", client=("127.0.0.1", 50000))
    statuses = [login_as_carl(guesser, f"guess-{i:016d}") for i in range(200)]
    assert statuses[:10] == [403] * 10 and statuses[10] == 429 and statuses.count(429) >= 180
    assert login_as_carl(guesser, carl) == 429  # not compared while refused
    other = TestClient(app, base_url="http://127.0.0.1:8765", client=("::1", 50000))
    assert login_as_carl(other, carl) == 200
