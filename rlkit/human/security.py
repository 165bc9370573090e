"""The web app's defences: bind policy, access token, CSRF tokens, signed sessions, body limits.

- Binding anything but loopback without a token is refused before the server starts.
- With a token, every request must carry it (``X-Rlkit-Token`` header or ``rlkit_token`` cookie;
  ``?token=`` once sets the cookie).
- State-changing requests are JSON POSTs carrying ``X-CSRF-Token``: a signature of the visitor's
  SameSite=Strict session cookie that only a same-origin page can read.
- The annotator id lives in a signed cookie, so one person cannot act under another's id by
  editing it; the store never lets one annotator change another's labels. Signatures are
  itsdangerous's (HMAC-SHA256, constant-time checks), not hand-rolled.
- Media is served only from the run's media folder (see ``safe_media_path``).
- Wrong tokens (the access token, an annotator's at login) are limited per client address
  (``FailedLoginLimiter``: 10 at once, then one each 6 s; then 429 with ``Retry-After``, the
  token not even compared).
- Without a token, the ``Host`` header must be exactly ``host`` or ``host:port`` and name this
  server (127.0.0.1, localhost, [::1], the bound host or ``allowed_hosts``): a page on another
  origin whose name an attacker re-pointed at 127.0.0.1 (DNS rebinding) is refused, since the
  browser sends that origin's name.
- Every response the app sends, its own errors (401, 400, 413, 429) included, carries the security
  headers below.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import math
import re
import secrets
import time
from collections.abc import Callable
from pathlib import Path

from rlkit.extras import extra

with extra("human"):
    import itsdangerous
    from starlette.exceptions import HTTPException
    from starlette.requests import Request
    from starlette.responses import JSONResponse, RedirectResponse
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rlkit.errors import RlkitError

TOKEN_HEADER = "x-rlkit-token"
TOKEN_COOKIE = "rlkit_token"
CSRF_HEADER = "x-csrf-token"
VISITOR_COOKIE = "rlkit_visitor"
ANNOTATOR_COOKIE = "rlkit_annotator"
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; media-src 'self'; "
                               "style-src 'self'; script-src 'self'; frame-ancestors 'none'",
}

_HEADER_BYTES = [(k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]


class UnsafeBindError(RlkitError):
    """A non-loopback bind without an access token."""


LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
LOGIN_BURST = 10  # wrong access tokens a client may send at once ...
LOGIN_REFILL_S = 6.0  # ... and then one more each this many seconds
MAX_TRACKED_CLIENTS = 10_000  # clients whose wrong tokens are remembered (refilled ones go first)


# A Host header is a name or IPv4 address, or an IPv6 address in brackets, then at most ":port".
_HOST_HEADER = re.compile(r"(?:\[(?P<ipv6>[0-9a-f:.]+)\]|(?P<name>[a-z0-9._-]+))(?::(?P<port>[0-9]{1,5}))?")


def host_name(header: str) -> str | None:
    """The name in a ``Host`` header (port and IPv6 brackets dropped, lower case, an IPv6 address
    in its short form), or None for a header that is not exactly ``host`` or ``host:port``."""
    match = _HOST_HEADER.fullmatch(header.lower())
    if match is None or (match["port"] is not None and int(match["port"]) > 65535):
        return None
    if match["ipv6"] is None:
        return match["name"]
    try:
        return str(ipaddress.IPv6Address(match["ipv6"]))
    except ValueError:
        return None


def _configured_name(name: str) -> str:
    """A bind address or ``allowed_hosts`` entry as ``host_name`` gives it (``::1`` may come bare)."""
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return host_name(name) or name.lower()


def allowed_hosts(host: str, token: str | None, extra_names: tuple[str, ...] = ()) -> frozenset[str] | None:
    """The names a ``Host`` header may carry, or None (any) when a token guards the app: a
    rebinding page cannot present the token, and annotators reach a shared server by names the
    server cannot know."""
    if token:
        return None
    return frozenset({*LOOPBACK_NAMES, _configured_name(host), *map(_configured_name, extra_names)})


class FailedLoginLimiter:
    """A token bucket of wrong access tokens per client address: ``burst`` wrong tokens at once,
    then one more each ``refill_s``. A client whose bucket is empty is answered 429 without its
    token being compared, so guessing on gains nothing; other clients are untouched."""

    def __init__(self, burst: int = LOGIN_BURST, refill_s: float = LOGIN_REFILL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.burst, self.refill_s, self.clock = burst, refill_s, clock
        self._buckets: dict[str, tuple[float, float]] = {}  # client -> (tokens left, when counted)

    def retry_after(self, client: str) -> int | None:
        """Seconds until ``client`` may try a token again, or None if it may now."""
        left = self._left(client)
        return None if left >= 1 else math.ceil((1 - left) * self.refill_s)

    def failed(self, client: str) -> None:
        """Count a wrong token from ``client``."""
        if len(self._buckets) >= MAX_TRACKED_CLIENTS:
            self._forget_refilled()
        self._buckets[client] = (self._left(client) - 1, self.clock())

    def _left(self, client: str) -> float:
        left, counted = self._buckets.get(client, (self.burst, self.clock()))
        return min(self.burst, left + (self.clock() - counted) / self.refill_s)

    def _forget_refilled(self) -> None:
        for client in [c for c in self._buckets if self._left(c) >= self.burst]:
            del self._buckets[client]


def check_bind(host: str, token: str | None) -> None:
    """Refuse to expose the app beyond this machine without a token."""
    if token:
        return
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        raise UnsafeBindError(
            f"host={host!r} exposes the labelling app beyond this machine; set token=<16+ chars> "
            "(annotators then open http://HOST:PORT/?token=...), or bind 127.0.0.1 and tunnel over SSH"
        )


class Signer:
    """Signatures with the run's secret (kept in the store, so restarts keep sessions), made by
    itsdangerous: HMAC-SHA256 under a key derived from the secret and the signature's purpose, so
    a CSRF token can never pass as a session cookie or the other way round."""

    def __init__(self, secret: str) -> None:
        self._secret = secret

    def _signer(self, purpose: str) -> itsdangerous.Signer:
        return itsdangerous.Signer(self._secret, salt=f"rlkit.{purpose}", digest_method=hashlib.sha256)

    def sign(self, purpose: str, value: str) -> str:
        return self._signer(purpose).get_signature(value).decode()

    def verify(self, purpose: str, value: str, signature: str) -> bool:
        return self._signer(purpose).verify_signature(value, signature)

    def annotator_cookie(self, annotator: str, key: str = "") -> str:
        """The signed session cookie of ``annotator`` (``annotator.signature``), bound to ``key``
        (their token's digest when the server has per-annotator tokens)."""
        return self._signer(_session_purpose(key)).sign(annotator).decode()

    def annotator_from_cookie(self, cookie: str | None,
                              key_of: Callable[[str], str | None] | None = None) -> str | None:
        """The annotator a cookie was signed for (and, with ``key_of``, bound to their key now)."""
        annotator = (cookie or "").rpartition(".")[0]
        if not annotator:
            return None
        key = "" if key_of is None else key_of(annotator)
        if key is None:
            return None
        try:
            self._signer(_session_purpose(key)).unsign(cookie or "")
        except itsdangerous.BadSignature:
            return None
        return annotator

    def csrf_token(self, visitor: str) -> str:
        return self.sign("csrf", visitor)


def _session_purpose(key: str) -> str:
    return f"annotator\x00{key}" if key else "annotator"


def new_secret() -> str:
    return secrets.token_hex(32)


def token_matches(expected: str, given: str | None) -> bool:
    return given is not None and hmac.compare_digest(expected.encode(), given.encode())


def safe_media_path(root: Path, name: str) -> Path | None:
    """The file ``name`` inside ``root``, or None if it is missing or would leave the folder."""
    if not name or "\x00" in name:
        return None
    try:  # a name past the file system's limits (ENAMETOOLONG), or one it cannot encode
        root = root.resolve()
        candidate = (root / name).resolve()
        if not candidate.is_relative_to(root) or not candidate.is_file():
            return None
    except (OSError, ValueError):
        return None
    return candidate


def limited_login(request: Request, check: Callable[[], bool]) -> bool:
    """``check()`` of a login (an annotator's token), counted against the client's wrong tokens:
    refused with 429 unchecked while the client's bucket is empty, as the access token is."""
    limiter: FailedLoginLimiter = request.state.login_limiter
    client = request.client.host if request.client else ""
    wait = limiter.retry_after(client)
    if wait is not None:
        raise HTTPException(429, f"too many wrong tokens from {client}; try again in {wait} s",
                            headers={"Retry-After": str(wait)})
    if check():
        return True
    limiter.failed(client)
    return False


class GuardMiddleware:
    """Token check, the visitor cookie behind CSRF tokens, and security headers on every response.

    Plain ASGI (not ``BaseHTTPMiddleware``): it adds no task hop to each request.
    """

    def __init__(self, app: ASGIApp, token: str | None, hosts: frozenset[str] | None = None,
                 limiter: FailedLoginLimiter | None = None) -> None:
        self.app = app
        self.token = token
        self.hosts = hosts
        self.limiter = limiter or FailedLoginLimiter()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": list(message.get("headers", [])) + _HEADER_BYTES}
            await send(message)

        request = Request(scope)
        if self.hosts is not None:
            given = request.headers.get("host", "")
            if host_name(given) not in self.hosts:
                detail = (f"Host {given[:100]!r} is not this server (allowed: {sorted(self.hosts)}); "
                          "open it as http://127.0.0.1:PORT/, or add the name to allowed_hosts")
                await JSONResponse({"detail": detail}, status_code=400)(scope, receive, send_secured)
                return
        scope.setdefault("state", {})["login_limiter"] = self.limiter
        if self.token is not None:
            client = request.client.host if request.client else ""
            in_query = request.query_params.get("token")
            presented = request.headers.get(TOKEN_HEADER) or request.cookies.get(TOKEN_COOKIE)
            wait = self.limiter.retry_after(client)
            if wait is not None and (in_query is not None or presented is not None):
                detail = f"too many wrong tokens from {client}; try again in {wait} s"
                throttled = JSONResponse({"detail": detail}, status_code=429,
                                         headers={"Retry-After": str(wait)})
                await throttled(scope, receive, send_secured)
                return
            if token_matches(self.token, in_query):
                redirect = RedirectResponse(request.url.remove_query_params("token"), status_code=303)
                redirect.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="strict")
                await redirect(scope, receive, send_secured)
                return
            if not token_matches(self.token, presented):
                if in_query is not None or presented is not None:  # a guess, not a first visit
                    self.limiter.failed(client)
                unauthorised = JSONResponse({"detail": "access token required"}, status_code=401)
                await unauthorised(scope, receive, send_secured)
                return
        visitor = request.cookies.get(VISITOR_COOKIE)
        new_visitor = visitor is None or len(visitor) != 32
        if new_visitor:
            visitor = secrets.token_hex(16)
        scope.setdefault("state", {})["visitor"] = visitor
        cookie = f"{VISITOR_COOKIE}={visitor}; HttpOnly; Path=/; SameSite=strict".encode()

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start" and new_visitor:
                message = {**message, "headers": [*message.get("headers", []), (b"set-cookie", cookie)]}
            await send_secured(message)

        await self.app(scope, receive, send_with_cookie)


class BodyLimitMiddleware:
    """Refuse request bodies above ``max_bytes`` (declared or streamed) with 413, before parsing."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await _send_413(send, self.max_bytes)
            return
        seen = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.max_bytes:  # a chunked body has no length to check up front
                raise BodyTooLargeError(self.max_bytes)
            return message

        async def watched_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, watched_send)
        except BodyTooLargeError:
            if not started:
                await _send_413(send, self.max_bytes)


class BodyTooLargeError(HTTPException):
    """A streamed body that passed its limit: an HTTP 413 wherever it is raised. (FastAPI turns
    any other exception raised while it reads a body into a 400.)"""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(413, f"request body over the {max_bytes}-byte limit")


async def _send_413(send: Send, max_bytes: int) -> None:
    body = f'{{"detail": "request body over the {max_bytes}-byte limit"}}'.encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
