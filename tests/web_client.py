"""The label web app as a browser on this machine talks to it, an M3HF phase opened for it, and the
feedback text a person types for that phase."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

import envs.overcooked as oc
from envs.overcooked.video import record_episode
from rlkit.human import LabelStore
from rlkit.human.m3hf_source import WebFeedbackSource
from rlkit.m3hf import FeedbackRequest, Scene

M3HF_TEXT = "Agent 0 should pick up the tomato. Agent 1 should not stand still."  # feedback a person types


def client_for(app: Any, **settings: Any) -> TestClient:
    """A client as a browser on this machine sends: Host 127.0.0.1 (the app refuses other names).

    Args:
        app: the FastAPI app (``rlkit.human.app.create_app``).
        **settings: passed on to ``TestClient``.

    Returns:
        The client.
    """
    return TestClient(app, base_url="http://127.0.0.1:8765", **settings)


def login(client: TestClient, annotator: str) -> dict[str, str]:
    """Start a session the way the page does.

    Args:
        client: a client of the app.
        annotator: the name the session labels as.

    Returns:
        The headers the session's POSTs carry (its CSRF token).
    """
    csrf = client.get("/api/session").json()["csrf"]
    response = client.post("/api/session", json={"annotator": annotator}, headers={"X-CSRF-Token": csrf})
    assert response.status_code == 200, response.text
    return {"X-CSRF-Token": csrf}


def open_phase(run_dir: Path, phase: int = 3) -> tuple[WebFeedbackSource, FeedbackRequest]:
    """A phase as the M3HF loop opens it: a recorded rollout (GIF) and the env's scene.

    Args:
        run_dir: the run directory (its label store, the GIF and the media folder go there).
        phase: the phase number published.

    Returns:
        The web feedback source the phase was published to, and the request it holds.
    """
    env = oc.parallel_env(layout="A", n_agents=2, max_steps=6)
    video = record_episode(env, lambda obs, infos: {a: 0 for a in obs}, run_dir / "rollout.gif")["path"]
    request = FeedbackRequest(phase, Scene.from_env(env), video, original_return=-1.5)
    source = WebFeedbackSource(LabelStore(run_dir), run_dir / "media", timeout_s=0.2, poll_s=0.02)
    source.publish(request)
    return source, request
