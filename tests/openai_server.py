"""A tiny OpenAI-compatible chat server for tests, answering from a script, one reply per request.

    with ScriptedChatServer([reply('{"specs": []}'), status(500), slow(0.5, "{}")]) as server:
        client = OpenAI(base_url=server.base_url, api_key="test", max_retries=0)

Each ``POST /v1/chat/completions`` takes the next scripted ``Reply`` (the last one repeats once the
script runs out) and records the request body in ``server.requests``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a chat completion with ``content``, or an HTTP error ``status``."""

    content: str = ""
    status: int = 200
    delay_s: float = 0.0


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

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                answer = server._next(body)
                if answer.delay_s:
                    time.sleep(answer.delay_s)
                if answer.status != 200:
                    error = {
                        "message": f"scripted HTTP {answer.status}",
                        "type": "server_error",
                        "code": None,
                    }
                    self._send(answer.status, {"error": error})
                    return
                self._send(200, _completion(body.get("model", "test-model"), answer.content))

            def _send(self, code: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
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
