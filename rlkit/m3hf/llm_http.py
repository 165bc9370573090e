"""The HTTP client under ``LLMParser``: a wall-clock limit per request, a byte cap per response, one origin.

The ``openai`` SDK's own client limits each socket read, not a request: a server that trickles a
byte at a time, or a chunked body that never ends, holds a parse for as long as it likes, and a
body (or a gzip body, once decoded) has no size limit. ``guarded_client`` gives the SDK an
``httpx2.Client`` whose transport (``GuardedTransport``) enforces, on every request:

- a deadline (``request_deadline``, set around each SDK call): each phase's timeouts shrink to
  the time left, and a watchdog shuts the request's socket down when the deadline passes, whether
  the request is connecting, waiting for headers or reading the body; ``DeadlineExceeded``;
- a byte cap on the body as sent and as decoded: a ``Content-Length`` past the cap is refused
  before reading, a body is cut off as it passes the cap, gzip / deflate are decoded here in
  bounded steps (never more than the cap in memory); ``ResponseTooLarge``; any other encoding, or
  a body that does not decode, is ``UnreadableResponse``;
- the configured origin (scheme, host, port): a request anywhere else, a redirect to another port
  or host, is refused before anything is sent; ``OffOriginRequest``. Redirects within the origin
  are followed.

Connections are not kept alive (each request opens its own, so the watchdog knows its socket), and
proxies from the environment are not used (``trust_env=False``): only the transport sends.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import socket
import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx2

from rlkit.errors import InvalidDataError, StateError

#: The most bytes a response body may have, as sent and as decoded.
MAX_RESPONSE_BYTES = 1_000_000
_DECODED = {"gzip", "x-gzip", "deflate"}  # zlib decodes each (wbits 47: a zlib or gzip header)


class DeadlineExceeded(StateError):
    """A request cut off at its wall-clock deadline."""


class ResponseTooLarge(InvalidDataError):
    """A response body past the byte cap, as sent or as decoded."""


class UnreadableResponse(InvalidDataError):
    """A response body in an encoding that is not decoded here, or that does not decode."""


class OffOriginRequest(InvalidDataError):
    """A request (a redirect's) to another scheme, host or port than the configured one."""


@dataclass(frozen=True)
class _Deadline:
    at: float  # time.monotonic()
    limit: str  # what set it, for the error: "timeout_s=2" or "deadline_s=60 of the parse"


_DEADLINE: contextvars.ContextVar[_Deadline | None] = contextvars.ContextVar("llm_deadline", default=None)


@contextlib.contextmanager
def request_deadline(at: float, limit: str) -> Iterator[None]:
    """Every request the guarded client sends in this block ends by ``at`` (``time.monotonic()``).

    Args:
        at: the monotonic time by which each request must be complete, body included.
        limit: what set the deadline, named in the ``DeadlineExceeded`` error.
    """
    token = _DEADLINE.set(_Deadline(at, limit))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def guarded_client(base_url: str, timeout_s: float, max_bytes: int = MAX_RESPONSE_BYTES) -> httpx2.Client:
    """An ``httpx2.Client`` for the ``openai`` SDK's ``http_client`` (see the module docstring).

    Args:
        base_url: the API's URL; its origin is the only one requests may go to.
        timeout_s: the per-phase timeout (connect, each read, each write) when no deadline is set.
        max_bytes: the byte cap on each response body, as sent and as decoded.

    Returns:
        The client; redirects within the origin are followed.
    """
    return httpx2.Client(
        transport=GuardedTransport(httpx2.URL(base_url), max_bytes),
        timeout=timeout_s,
        follow_redirects=True,
        trust_env=False,
        headers={"Accept-Encoding": ", ".join(sorted(_DECODED - {"x-gzip"}))},
    )


def _origin(url: httpx2.URL) -> tuple[str, str, int | None]:
    default = {"http": 80, "https": 443}.get(url.scheme)
    return url.scheme, url.host, url.port or default


class GuardedTransport(httpx2.BaseTransport):
    """An ``HTTPTransport`` held to one origin, the current ``request_deadline`` and a byte cap."""

    def __init__(self, origin: httpx2.URL, max_bytes: int) -> None:
        self._inner = httpx2.HTTPTransport(limits=httpx2.Limits(max_keepalive_connections=0))
        self._origin = _origin(origin)
        self._max_bytes = max_bytes

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        if _origin(request.url) != self._origin:
            scheme, host, port = self._origin
            raise OffOriginRequest(
                f"refused a request to {request.url.scheme}://{request.url.host}:{request.url.port} "
                f"(a redirect?): only {scheme}://{host}:{port}, the configured base_url, is asked"
            )
        watchdog = _Watchdog(_DEADLINE.get())
        watchdog.shrink_timeouts(request)
        request.extensions["trace"] = watchdog.trace
        watchdog.start()
        try:
            response = self._inner.handle_request(request)
            return self._capped(response, watchdog)
        except Exception as error:
            watchdog.cancel()
            watchdog.raise_if_fired(error)
            raise

    def _capped(self, response: httpx2.Response, watchdog: _Watchdog) -> httpx2.Response:
        encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
        size = response.headers.get("Content-Length", "")
        problem: InvalidDataError | None = None
        if encoding not in _DECODED | {"identity"}:
            problem = UnreadableResponse(f"the response is in Content-Encoding {encoding!r}; "
                                         f"only {sorted(_DECODED)} are decoded")
        elif size.isdigit() and int(size) > self._max_bytes:
            problem = ResponseTooLarge(
                f"the response's Content-Length is {size} bytes; at most {self._max_bytes}"
            )
        if problem is not None:
            response.close()
            raise problem
        headers = [(key, value) for key, value in response.headers.raw
                   if encoding == "identity" or key.lower() not in (b"content-encoding", b"content-length")]
        body = _CappedBody(response.stream, encoding != "identity", self._max_bytes, watchdog)
        return httpx2.Response(
            response.status_code, headers=headers, stream=body, extensions=response.extensions
        )

    def close(self) -> None:
        self._inner.close()


class _Watchdog:
    """Shuts one request's socket down when its deadline passes, wherever the request is blocked."""

    def __init__(self, deadline: _Deadline | None) -> None:
        self.deadline = deadline
        self.fired = False
        self._socket: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def remaining(self) -> float:
        return math.inf if self.deadline is None else self.deadline.at - time.monotonic()

    def shrink_timeouts(self, request: httpx2.Request) -> None:
        """Each phase's timeout at most the time left; ``DeadlineExceeded`` when none is."""
        left = self.remaining()
        self.raise_if_fired(None)
        if math.isinf(left):
            return
        given = request.extensions.get("timeout", {})
        request.extensions["timeout"] = {
            phase: left if given.get(phase) is None else min(left, given[phase])
            for phase in ("connect", "read", "write", "pool")
        }

    def trace(self, event: str, info: dict[str, Any]) -> None:
        """httpcore's trace hook: note the socket once connected (shut at once if already late)."""
        if event == "connection.connect_tcp.complete":
            with self._lock:
                self._socket = info["return_value"].get_extra_info("socket")
                if self.fired:
                    self._shut()

    def start(self) -> None:
        if self.deadline is not None:
            self._timer = threading.Timer(max(self.remaining(), 0.0), self._fire)
            self._timer.daemon = True
            self._timer.start()

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def raise_if_fired(self, cause: BaseException | None) -> None:
        if self.fired or self.remaining() <= 0:
            assert self.deadline is not None  # only a deadline fires
            message = f"the request was cut off at its deadline ({self.deadline.limit})"
            raise DeadlineExceeded(message) from cause

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            self._shut()

    def _shut(self) -> None:
        if self._socket is not None:
            with contextlib.suppress(OSError):  # already closed: nothing left to stop
                self._socket.shutdown(socket.SHUT_RDWR)


class _CappedBody(httpx2.SyncByteStream):
    """A response body read under the byte cap (as sent and, when ``decode``, as gunzipped) and
    the request's deadline."""

    def __init__(self, raw: Any, decode: bool, max_bytes: int, watchdog: _Watchdog) -> None:
        self._raw, self._max_bytes, self._watchdog = raw, max_bytes, watchdog
        self._decoder = zlib.decompressobj(47) if decode else None

    def __iter__(self) -> Iterator[bytes]:
        sent = decoded = 0
        try:
            for chunk in self._raw:
                self._watchdog.raise_if_fired(None)
                sent += len(chunk)
                if sent > self._max_bytes:
                    raise ResponseTooLarge(
                        f"the response body passed {self._max_bytes} bytes as sent; cut off"
                    )
                data = self._decoded(chunk, self._max_bytes - decoded)
                decoded += len(data)
                yield data
        except (DeadlineExceeded, ResponseTooLarge, UnreadableResponse):
            raise
        except Exception as error:
            self._watchdog.raise_if_fired(error)
            raise

    def _decoded(self, chunk: bytes, room: int) -> bytes:
        """``chunk`` decoded, refused once its output would pass ``room`` bytes."""
        if self._decoder is None:
            return chunk
        try:
            data = self._decoder.decompress(chunk, room + 1)
        except zlib.error as error:
            raise UnreadableResponse(f"the compressed response does not decode: {error}") from None
        if len(data) > room:
            raise ResponseTooLarge(f"the response body passed {self._max_bytes} bytes as decoded; cut off")
        return data

    def close(self) -> None:
        self._watchdog.cancel()
        self._raw.close()
