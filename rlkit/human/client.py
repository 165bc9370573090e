"""A labelling client over HTTP, for scripted annotators, benchmarks and tests of a live server."""

from __future__ import annotations

from typing import Any

from rlkit.extras import extra

with extra("human"):
    import httpx


class AnnotatorClient:
    """One annotator's session: logs in like the page does, then fetches and submits pairs."""

    def __init__(self, base_url: str, annotator: str, token: str | None = None) -> None:
        headers = {"X-Rlkit-Token": token} if token else {}
        self.http = httpx.Client(base_url=base_url, headers=headers, timeout=30.0)
        csrf = self.http.get("/api/session").raise_for_status().json()["csrf"]
        self.http.headers["X-CSRF-Token"] = csrf
        self.http.post("/api/session", json={"annotator": annotator}).raise_for_status()

    def next(self) -> dict[str, Any]:
        return self.http.get("/api/queue/next").raise_for_status().json()

    def submit(self, query_id: int, value: float | None) -> httpx.Response:
        return self.http.post("/api/labels", json={"query_id": query_id, "value": value})

    def undo(self) -> dict[str, Any]:
        return self.http.post("/api/labels/undo", json={}).raise_for_status().json()

    def close(self) -> None:
        self.http.close()
