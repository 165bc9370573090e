"""What the web app's routers share: page rendering, the annotator and CSRF checks, the error
model of every response."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlkit.extras import extra

with extra("human"):
    from fastapi import HTTPException, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import HTMLResponse, JSONResponse
    from fastapi.templating import Jinja2Templates

from pydantic import BaseModel

from rlkit.human import security
from rlkit.human.annotators import session_key
from rlkit.human.security import Signer

PACKAGE_DIR = Path(__file__).parent


class Problem(BaseModel):
    """Every error: a sentence naming the field and value, or pydantic's list of field errors."""

    detail: str | list[dict[str, Any]]


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"model": Problem, "description": what} for code, what in (
        (401, "no access token or no annotator session"),
        (403, "missing or wrong CSRF token, or annotator token"),
        (404, "no such pair, phase or file"), (409, "already labelled, or the phase closed"),
        (413, "request body too large"), (422, "invalid input (named in the detail)"),
    )
}
templates = Jinja2Templates(directory=str(PACKAGE_DIR / "templates"))



def validation_problem(request: Request, error: Exception) -> JSONResponse:
    """422 naming each field and what is wrong with it, never echoing the input: a value such as
    NaN, 1e400 or a lone surrogate cannot be written back as JSON (FastAPI's own handler, which
    echoes it, failed with HTTP 500 on them)."""
    issues = error.errors() if isinstance(error, RequestValidationError) else []
    detail = "; ".join(
        f"{_field(issue.get('loc', ()))}: {issue.get('msg', 'invalid')}" for issue in issues
    ) or "invalid request"
    return JSONResponse({"detail": detail.encode("utf-8", "replace").decode("utf-8")}, status_code=422)


def _field(loc: Any) -> str:
    parts = [str(part) for part in loc if part != "body"] if isinstance(loc, list | tuple) else []
    return ".".join(parts) or "body"


def page(request: Request, name: str, **context: Any) -> HTMLResponse:
    """Render a page with the annotator and the CSRF token its scripts send back."""
    signer: Signer = request.app.state.signer
    return templates.TemplateResponse(request, name, {
        "annotator": current_annotator(request),
        "csrf": signer.csrf_token(request.state.visitor),
        "tokens_required": request.app.state.annotator_tokens is not None,
        **context,
    })


def current_annotator(request: Request) -> str | None:
    signer: Signer = request.app.state.signer
    tokens = request.app.state.annotator_tokens
    return signer.annotator_from_cookie(request.cookies.get(security.ANNOTATOR_COOKIE),
                                        lambda annotator: session_key(tokens, annotator))


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
