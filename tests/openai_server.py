"""A tiny OpenAI-compatible chat server for tests, answering from a script, one reply per request.

    with ScriptedChatServer([reply('{"specs": []}'), status(500), slow(0.5, "{}")]) as server:
        client = OpenAI(base_url=server.base_url, api_key="test", max_retries=0)

Each ``POST /v1/chat/completions`` takes the next scripted ``Reply`` (the last one repeats once the
script runs out) and records the request body in ``server.requests``.

A hostile server is scripted the same way: ``reply(text)`` carries any answer text (deep nesting,
``NaN``, lone surrogates, megabytes), ``raw(body)`` any HTTP body in place of the chat completion
(a broken or deeply nested envelope, bytes that are not UTF-8); ``hostile_replies(rng, n)`` draws
a seeded mix of both with some valid answers among them.

Hostile HTTP is scripted too, each a ``Reply`` that writes its own bytes to the socket:
``trickle(interval_s)`` sends a valid completion one byte at a time (headers too, or only the
body), ``chunked(n_bytes)`` a chunked body of ``n_bytes`` (``None``: one that never ends),
``gzipped(content, pad_bytes)`` a completion gzipped, padded to any decoded size from a small body
(a gzip bomb), ``redirect(code, location)`` a redirect, ``response(code, headers, body)`` anything
else. ``server.bytes_sent`` counts what these replies managed to write before the client hung up.
"""

from __future__ import annotations

import functools
import json
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a chat completion with ``content``, or an HTTP error ``status``."""

    content: str = ""
    status: int = 200
    delay_s: float = 0.0
    body: bytes | None = None  # sent as it is, in place of a chat completion
    send: Callable[[Any], None] | None = None  # writes the whole HTTP response itself (``Handler``)


def raw(body: bytes | str, code: int = 200) -> Reply:
    """An HTTP reply with exactly this body (``application/json`` claimed, whatever it holds)."""
    return Reply(status=code, body=body if isinstance(body, bytes) else body.encode("utf-8", "surrogatepass"))


def reply(content: str | dict[str, Any]) -> Reply:
    """A chat completion whose message is ``content`` (a dict is sent as its JSON text)."""
    return Reply(content if isinstance(content, str) else json.dumps(content))


def status(code: int) -> Reply:
    return Reply(status=code)


def slow(delay_s: float, content: str = '{"specs": []}') -> Reply:
    return Reply(content, delay_s=delay_s)


class ScriptedChatServer:
    """``http.server`` in a daemon thread on a free port; a context manager."""

    def __init__(self, script: Sequence[Reply]) -> None:
        if not script:
            raise ValueError("script must hold at least one reply")
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self.bytes_sent = 0  # by ``Reply.send`` writers, up to the client hanging up
        self.hits: list[tuple[str, str]] = []  # (method, path) of every request, on any route
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        # A short poll interval: shutdown() waits for it, once per test.
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> ScriptedChatServer:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            return self.script.pop(0) if len(self.script) > 1 else self.script[0]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
                """Quiet: the test output is the log under test."""

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                server.hits.append(("GET", self.path))
                self._send(404, {"error": {"message": f"no route GET {self.path}"}})

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                server.hits.append(("POST", self.path))
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                answer = server._next(body)
                if answer.delay_s:
                    time.sleep(answer.delay_s)
                if answer.send is not None:
                    try:
                        answer.send(self)
                    except (BrokenPipeError, ConnectionResetError):
                        pass  # the client cut the reply off: what a hostile reply is for
                    self.close_connection = True
                    return
                if answer.body is not None:
                    self._send_bytes(answer.status, answer.body)
                    return
                if answer.status != 200:
                    error = {
                        "message": f"scripted HTTP {answer.status}",
                        "type": "server_error",
                        "code": None,
                    }
                    self._send(answer.status, {"error": error})
                    return
                self._send(200, _completion(body.get("model", "test-model"), answer.content))

            def write(self, data: bytes) -> None:
                """Write to the client now, counted in ``server.bytes_sent``."""
                self.wfile.write(data)
                self.wfile.flush()
                with server._lock:
                    server.bytes_sent += len(data)

            def _send(self, code: int, payload: dict[str, Any]) -> None:
                self._send_bytes(code, json.dumps(payload).encode())

            def _send_bytes(self, code: int, data: bytes) -> None:
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left: what a slow reply is for

        return Handler


def _completion(model: str, content: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


# --- hostile HTTP ---------------------------------------------------------------------------------


def _head(code: int, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {code} Scripted", "Content-Type: application/json", "Connection: close"]
    lines += [f"{key}: {value}" for key, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def trickle(interval_s: float, content: str = '{"specs": []}', headers_too: bool = True) -> Reply:
    """A valid completion sent one byte every ``interval_s`` (the headers at once if not ``headers_too``)."""
    body = json.dumps(_completion("m", content)).encode()
    head = _head(200, {"Content-Length": str(len(body))})

    data, start = head + body, 0 if headers_too else len(head)

    def send(handler: Any) -> None:
        handler.write(data[:start])
        for k in range(start, len(data)):
            handler.write(data[k : k + 1])
            time.sleep(interval_s)

    return Reply(send=send)


def chunked(n_bytes: int | None, chunk_bytes: int = 65_536) -> Reply:
    """A chunked body of ``n_bytes`` spaces (``None``: it never ends), as fast as the client reads."""
    chunk = b" " * chunk_bytes
    frame = f"{chunk_bytes:x}\r\n".encode() + chunk + b"\r\n"

    def send(handler: Any) -> None:
        handler.write(_head(200, {"Transfer-Encoding": "chunked"}))
        sent = 0
        while n_bytes is None or sent < n_bytes:
            handler.write(frame)
            sent += chunk_bytes
        handler.write(b"0\r\n\r\n")

    return Reply(send=send)


@functools.cache
def _gzip(content: str, pad_bytes: int) -> bytes:
    """A completion with ``pad_bytes`` spaces before its last brace, gzipped in 1 MB steps."""
    text = json.dumps(_completion("m", content)).encode()
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [packer.compress(text[:-1])]
    block = b" " * 1_000_000
    for start in range(0, pad_bytes, len(block)):
        parts.append(packer.compress(block[: pad_bytes - start]))
    parts += [packer.compress(text[-1:]), packer.flush()]
    return b"".join(parts)


def response(code: int, headers: dict[str, str], body: bytes = b"") -> Reply:
    """An HTTP response with exactly these headers (and its ``Content-Length``) and body."""

    def send(handler: Any) -> None:
        handler.write(_head(code, headers | {"Content-Length": str(len(body))}) + body)

    return Reply(send=send)


def gzipped(content: str = '{"specs": []}', pad_bytes: int = 0) -> Reply:
    """A completion sent with ``Content-Encoding: gzip``; ``pad_bytes`` of whitespace make a gzip
    bomb (200 MB of it is about 200 kB sent)."""
    return response(200, {"Content-Encoding": "gzip"}, _gzip(content, pad_bytes))


def redirect(code: int, location: str) -> Reply:
    """A redirect (302, 307, 308...) to ``location``."""
    return response(code, {"Location": location})


# --- hostile answers -----------------------------------------------------------------------------

VALID_SPEC = {"template": "distance", "agents": [1], "params": {"b": "tomato", "scale": 2.0}, "reason": "go"}


def _nested(rng: np.random.Generator) -> str:
    depth = int(rng.choice([20, 100, 1_000, 5_000, 20_000]))
    kind = int(rng.integers(4))
    if kind == 0:
        return "[" * depth + "]" * depth * int(rng.integers(2))
    if kind == 1:
        return '{"specs": ' + "[" * depth + "]" * depth + "}"
    if kind == 2:
        return '{"a": ' * depth + "1" + "}" * depth
    spec = dict(VALID_SPEC, params={"b": "tomato", "scale": 1.0})
    inner: Any = spec
    for _ in range(min(depth, 200)):  # composites of composites, which the schema never allows
        inner = {"template": "composite", "agents": "all", "params": {"parts": [inner, spec]}}
    return json.dumps({"specs": [inner]})


def _non_finite(rng: np.random.Generator) -> str:
    value = str(rng.choice(["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1e-400"]))
    field = str(rng.choice(["scale", "radius", "bonus"]))
    template = "distance" if field == "scale" else "proximity"
    params = f'{{"b": "tomato", "{field}": {value}}}'
    return f'{{"specs": [{{"template": "{template}", "agents": [0], "params": {params}}}]}}'


def _surrogate(rng: np.random.Generator) -> str:
    where = int(rng.integers(4))
    escape = str(rng.choice(["\\ud800", "\\udfff", "\\udbff\\u0041", "\\u0000", "\\ud83d\\ude00"]))
    if where == 0:
        return json.dumps({"specs": [dict(VALID_SPEC, reason="x")]}).replace('"x"', f'"{escape}"')
    if where == 1:
        return '{"specs": [{"template": "dist' + escape + '", "agents": [0], "params": {}}]}'
    if where == 2:
        return '{"specs": [{"' + escape + '": 1, "template": "success", "agents": "all"}]}'
    return "\ud800 " + json.dumps({"specs": [VALID_SPEC]}) + " \udfff"  # raw lone surrogates


def _huge(rng: np.random.Generator) -> str:
    size = int(rng.choice([70_000, 1_000_000, 3_000_000]))
    kind = int(rng.integers(3))
    if kind == 0:
        return json.dumps({"specs": [dict(VALID_SPEC, reason="r" * size)]})
    if kind == 1:
        return json.dumps({"specs": [VALID_SPEC] * (size // 100)})
    return json.dumps({"specs": [VALID_SPEC], "padding": " " * size})


def _wrong_shape(rng: np.random.Generator) -> str:
    return str(
        rng.choice(
            [
                '{"specs": "all"}',
                '{"specs": [1, 2, 3]}',
                '{"specs": [{"template": "distance", "agents": true, "params": {"b": "tomato"}}]}',
                '{"specs": [{"template": "distance", "agents": [1.5], "params": {"b": "tomato"}}]}',
                '{"specs": [{"template": "success", "agents": "all", "params": []}]}',
                '{"specs": [{"template": "action", "agents": [0], "params": {"action": "__import__()"}}]}',
                '{"specs": [{"template": "distance", "agents": [0], "params": {"b": "tomato"}}], "specs": 1}',
                '{"specs": [{"template": null, "agents": null, "params": null}]}',
                "null",
                "true",
                '"specs"',
                "[]",
                "",
                "   ",
                "```json\n{\"specs\": []}\n```",
                '{"specs": []} trailing',
                '{"specs": [' + json.dumps(VALID_SPEC)[:-5],
            ]
        )
    )


def _garbage(rng: np.random.Generator) -> str:
    alphabet = list('{}[]",:0123456789.eE+-ntrufalsNaIfiy \\u\ud800\x00\n') + ["\\ud800", "specs", "template"]
    return "".join(str(c) for c in rng.choice(alphabet, size=int(rng.integers(1, 200))))


def _envelope(rng: np.random.Generator) -> Reply:
    """A reply whose HTTP body is not a chat completion the SDK can read."""
    depth = int(rng.choice([1_000, 5_000, 50_000]))
    content = json.dumps({"specs": [VALID_SPEC]})
    completion = _completion("m", content)
    bodies: list[bytes | str] = [
        "[" * depth + "]" * depth,
        '{"choices": ' + "[" * depth + "]" * depth + "}",
        '{"choices": [{"message": {"role": "assistant", "content": ' + "[" * depth + "]" * depth + "}}]}",
        json.dumps(completion).replace(json.dumps(content), '{"specs": []}'),  # content an object
        json.dumps(completion).replace(json.dumps(content), "12"),
        json.dumps(dict(completion, choices="yes")),
        json.dumps(dict(completion, choices=[None])),
        json.dumps(dict(completion, choices=[{"message": None}])),
        json.dumps({"object": "chat.completion"}),
        json.dumps(completion)[: int(rng.integers(1, 50))],
        b"\xff\xfe\x00garbage",
        "<html>502 Bad Gateway</html>",
        json.dumps(completion).replace("\"stop\"", "NaN"),
        json.dumps(completion).replace(json.dumps(content), '"\\ud800' + json.dumps(content)[1:]),
        "",
    ]
    body = bodies[int(rng.integers(len(bodies)))]
    code = int(rng.choice([200, 200, 200, 500, 418]))
    return raw(body, code)


_HOSTILE = (_nested, _non_finite, _surrogate, _huge, _wrong_shape, _garbage)


def hostile_replies(rng: np.random.Generator, n: int) -> list[Reply]:
    """``n`` seeded replies: a tenth valid, a tenth broken envelopes, the rest hostile answers
    (deep nesting, non-finite numbers, surrogates, huge payloads, wrong shapes, garbage)."""
    replies: list[Reply] = []
    for _ in range(n):
        draw = rng.random()
        if draw < 0.1:
            replies.append(reply({"specs": [VALID_SPEC]}))
        elif draw < 0.2:
            replies.append(_envelope(rng))
        else:
            maker = _HOSTILE[int(rng.integers(len(_HOSTILE)))]
            if maker is _huge and rng.random() > 0.25:  # megabytes, but not in every tenth request
                maker = _nested
            replies.append(Reply(maker(rng)))
    return replies
