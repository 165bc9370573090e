"""The labelling web app: server-rendered pages, a typed JSON API (OpenAPI), the run's media.

``create_app`` wires the store, the security layer and the routers; the label queue lives in
``rlkit.human.routes_label``, the M3HF page in ``routes_m3hf`` and the dashboard in ``routes_dashboard``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from pydantic import BaseModel

from rlkit.feedback.scale import OrdinalScale
from rlkit.human import security
from rlkit.human.security import Signer
from rlkit.human.settings import ServeConfig
from rlkit.human.store import LabelStore

if TYPE_CHECKING:
    from rlkit.m3hf.specs import FeedbackParser

PACKAGE_DIR = Path(__file__).parent


class Problem(BaseModel):
    """Every error: a sentence naming the field and value, or pydantic's list of field errors."""

    detail: str | list[dict[str, Any]]


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"model": Problem, "description": what} for code, what in (
        (401, "no access token or no annotator session"), (403, "missing or wrong CSRF token"),
        (404, "no such pair, phase or file"), (409, "already labelled, or the phase closed"),
        (413, "request body too large"), (422, "invalid input (named in the detail)"),
    )
}
templates = Jinja2Templates(directory=str(PACKAGE_DIR / "templates"))


def create_app(
    store: LabelStore,
    config: ServeConfig | None = None,
    media_dir: str | Path | None = None,
    parser: FeedbackParser | None = None,
) -> FastAPI:
    """The app over one store; the M3HF page previews with ``parser`` (default: the offline RuleParser)."""
    from rlkit.human import routes_dashboard, routes_label, routes_m3hf
    from rlkit.m3hf.parser_rule import RuleParser

    config = config or ServeConfig()
    # Write the scale to the database now (the store's default if none is given), so a later switch
    # is checked against labels; pages and submits read it from there, so a trainer may still
    # set another one before the first label.
    store.set_scale(OrdinalScale.get(config.scale) if config.scale is not None else store.scale)
    secret = store.setting("secret")
    if secret is None:
        secret = security.new_secret()
        store.set_setting("secret", secret)
    app = FastAPI(title="rlkit labelling", version="1",
                  description="Pairwise/ordinal labels and M3HF feedback from people.")
    app.state.store = store
    app.state.config = config
    app.state.signer = Signer(secret)
    app.state.media_dir = Path(media_dir) if media_dir else _default_media_dir(config)
    app.state.parser = parser if parser is not None else RuleParser()
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

    app.add_middleware(security.GuardMiddleware, token=config.token)
    app.add_middleware(security.BodyLimitMiddleware, max_bytes=config.max_body_bytes)
    return app


def _default_media_dir(config: ServeConfig) -> Path:
    return Path(config.run_dir or ".") / "media"


def page(request: Request, name: str, **context: Any) -> HTMLResponse:
    """Render a page with the annotator and the CSRF token its scripts send back."""
    signer: Signer = request.app.state.signer
    return templates.TemplateResponse(request, name, {
        "annotator": current_annotator(request),
        "csrf": signer.csrf_token(request.state.visitor),
        **context,
    })


def current_annotator(request: Request) -> str | None:
    signer: Signer = request.app.state.signer
    return signer.annotator_from_cookie(request.cookies.get(security.ANNOTATOR_COOKIE))


def require_csrf(request: Request) -> None:
    """State-changing calls must come from our own pages (or a client that read /api/session)."""
    signer: Signer = request.app.state.signer
    given = request.headers.get(security.CSRF_HEADER, "")
    if not signer.verify("csrf", request.state.visitor, given):
        raise HTTPException(403, "missing or wrong X-CSRF-Token header")


def require_annotator(request: Request) -> str:
    annotator = current_annotator(request)
    if annotator is None:
        raise HTTPException(401, "no annotator session: POST /api/session with your annotator id")
    return annotator
