"""The labelling web app: server-rendered pages, a typed JSON API (OpenAPI), the run's media.

``create_app`` wires the store, the security layer and the routers; the label queue lives in
``rlkit.human.routes_label``, the M3HF page in ``routes_m3hf`` and the dashboard in ``routes_dashboard``;
what they share (page rendering, the annotator and CSRF checks, error models) in ``deps``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rlkit.extras import extra

with extra("human"):
    from fastapi import FastAPI, HTTPException, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import FileResponse, JSONResponse
    from fastapi.staticfiles import StaticFiles

from rlkit.feedback.scale import OrdinalScale
from rlkit.human import routes_dashboard, routes_label, routes_m3hf, security
from rlkit.human.annotators import annotator_tokens
from rlkit.human.deps import PACKAGE_DIR, validation_problem
from rlkit.human.security import Signer
from rlkit.human.settings import ServeConfig
from rlkit.human.store import DamagedStoreError, LabelStore
from rlkit.m3hf.parser_rule import RuleParser

if TYPE_CHECKING:
    from rlkit.m3hf.specs import FeedbackParser

def create_app(
    store: LabelStore,
    config: ServeConfig | None = None,
    media_dir: str | Path | None = None,
    parser: FeedbackParser | None = None,
) -> FastAPI:
    """The app over one store; the M3HF page previews with ``parser`` (default: the offline RuleParser)."""
    config = config or ServeConfig()
    # Write the scale to the database now (the store's default if none is given), so a later switch
    # is checked against labels; pages and submits read it from there, so a trainer may still
    # set another one before the first label.
    store.set_scale(OrdinalScale.get(config.scale) if config.scale is not None else store.scale)
    secret = store.setting("secret")
    if secret is None:
        secret = security.new_secret()
        store.set_setting("secret", secret)
    # No /docs or /redoc: they load scripts from a CDN, which the Content-Security-Policy blocks
    # (and which a labelling server should not fetch); the schema stays at /openapi.json.
    app = FastAPI(title="rlkit labelling", version="1", docs_url=None, redoc_url=None,
                  description="Pairwise/ordinal labels and M3HF feedback from people.")
    app.state.store = store
    app.state.config = config
    app.state.signer = Signer(secret)
    app.state.annotator_tokens = annotator_tokens(config)  # None: annotators are self-asserted
    app.state.media_dir = Path(media_dir) if media_dir else _default_media_dir(config)
    app.state.parser = parser if parser is not None else RuleParser()
    app.add_exception_handler(RequestValidationError, validation_problem)
    app.add_exception_handler(DamagedStoreError, _damaged_store)
    app.include_router(routes_label.router)
    app.include_router(routes_m3hf.router)
    app.include_router(routes_dashboard.router)
    app.mount("/static", StaticFiles(directory=str(PACKAGE_DIR / "static")), name="static")

    @app.get("/media/{name:path}", include_in_schema=False)
    def media(name: str) -> FileResponse:
        path = security.safe_media_path(app.state.media_dir, name)
        if path is None:
            raise HTTPException(404, f"no media file {name!r}")
        return FileResponse(path)

    # The last added runs first: the guard (Host, token, security headers on every answer, a 413
    # included), then the body limit.
    app.add_middleware(security.BodyLimitMiddleware, max_bytes=config.max_body_bytes)
    hosts = security.allowed_hosts(config.host, config.token, config.allowed_hosts)
    app.add_middleware(security.GuardMiddleware, token=config.token, hosts=hosts)
    return app


def _damaged_store(request: Request, error: Exception) -> JSONResponse:
    """503 naming what is damaged in a store edited or damaged under the running server."""
    return JSONResponse({"detail": f"the label store is damaged: {error}"}, status_code=503)


def _default_media_dir(config: ServeConfig) -> Path:
    return Path(config.run_dir or ".") / "media"
