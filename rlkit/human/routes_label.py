"""The label queue: the page, the annotator session, next pair, submit, skip, undo, progress."""

from __future__ import annotations

import math
from typing import Annotated

from rlkit.extras import extra

with extra("human"):
    from fastapi import APIRouter, Depends, HTTPException, Request, Response
    from fastapi import Path as PathParam
    from fastapi.responses import HTMLResponse

from pydantic import BaseModel, Field

from rlkit.errors import InvalidLabelError
from rlkit.human import security
from rlkit.human.annotators import session_key, token_ok
from rlkit.human.deps import ERROR_RESPONSES, current_annotator, page, require_annotator, require_csrf
from rlkit.human.media import shown_media
from rlkit.human.store import (
    ANNOTATOR_PATTERN,
    LabelConflictError,
    LabelRecord,
    LabelStore,
    Progress,
    Query,
    UnknownQueryError,
)

router = APIRouter(responses=ERROR_RESPONSES)


class SessionIn(BaseModel):
    annotator: str = Field(pattern=ANNOTATOR_PATTERN, description="letters, digits, _.@- (up to 64)")
    token: str | None = Field(None, max_length=256,
                              description="the annotator's own token, when the server has them")


class SessionOut(BaseModel):
    annotator: str | None
    csrf: str


class ScaleOut(BaseModel):
    name: str
    levels: list[float]
    names: list[str]


class MediaOut(BaseModel):
    """What to show for a pair now: each segment's video, or its plot while the video renders."""

    left_media: str = Field(description="file under /media/; empty while nothing is written yet")
    right_media: str
    rendering: bool = Field(description="a video is still being rendered: ask again shortly")


class QueryOut(MediaOut):
    id: int
    left: list[int]
    right: list[int]


class ProgressOut(BaseModel):
    done: int
    remaining: int
    total: int


class NextOut(BaseModel):
    query: QueryOut | None
    progress: ProgressOut


class LabelIn(BaseModel):
    # Strict: ``true`` is not query 1 and ``"0.5"`` is not a level; NaN / Infinity / 1e400 refused.
    query_id: int = Field(ge=1, le=2**62, strict=True)
    value: float | None = Field(None, ge=0.0, le=1.0, strict=True, allow_inf_nan=False,
                                description="a level of the scale; null = skip")


class LabelOut(BaseModel):
    id: int
    query_id: int
    annotator: str
    value: float | None
    created_at: float


class UndoOut(BaseModel):
    undone: LabelOut | None
    query: QueryOut | None
    progress: ProgressOut


def _store(request: Request) -> LabelStore:
    return request.app.state.store


def _media_out(request: Request, query: Query) -> MediaOut:
    """Checks two files' existence (no rendering happens in a request: see ``rlkit.human.render``)."""
    media_dir = request.app.state.media_dir
    (left, left_busy), (right, right_busy) = (shown_media(media_dir, name)
                                              for name in (query.left_media, query.right_media))
    return MediaOut(left_media=left, right_media=right, rendering=left_busy or right_busy)


def _query_out(request: Request, query: Query) -> QueryOut:
    return QueryOut(id=query.id, left=list(query.left), right=list(query.right),
                    **_media_out(request, query).model_dump())


def _progress_out(progress: Progress) -> ProgressOut:
    return ProgressOut(done=progress.done, remaining=progress.remaining, total=progress.total)


def _label_out(label: LabelRecord) -> LabelOut:
    value = None if math.isnan(label.value) else label.value
    return LabelOut(id=label.id, query_id=label.query_id, annotator=label.annotator, value=value,
                    created_at=label.created_at)


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
def label_page(request: Request) -> HTMLResponse:
    scale = _store(request).scale
    # Buttons run from "A much better" (key 1) to "B much better": the scale's levels reversed.
    buttons = [(key, level, name) for key, (level, name) in
               enumerate(zip(reversed(scale.levels), reversed(scale.names), strict=True), start=1)]
    return page(request, "label.html", buttons=buttons, scale=scale)


@router.get("/api/session", response_model=SessionOut)
def get_session(request: Request) -> SessionOut:
    """Who this browser is labelling as, and the CSRF token its POSTs must carry."""
    return SessionOut(annotator=current_annotator(request),
                      csrf=request.app.state.signer.csrf_token(request.state.visitor))


@router.post("/api/session", response_model=SessionOut, dependencies=[Depends(require_csrf)])
def start_session(body: SessionIn, request: Request, response: Response) -> SessionOut:
    """Label as ``annotator`` from now on (a signed cookie; the id cannot be edited in the browser)."""
    annotator = body.annotator  # SessionIn's pattern is the store's ANNOTATOR_PATTERN
    signer = request.app.state.signer
    tokens = request.app.state.annotator_tokens
    if tokens is not None and not security.limited_login(
            request, lambda: token_ok(tokens, annotator, body.token)):
        raise HTTPException(403, f"a session as {annotator} needs {annotator}'s own token")
    key = session_key(tokens, annotator) or ""
    response.set_cookie(security.ANNOTATOR_COOKIE, signer.annotator_cookie(annotator, key),
                        httponly=True, samesite="strict", max_age=30 * 24 * 3600)
    return SessionOut(annotator=annotator, csrf=signer.csrf_token(request.state.visitor))


@router.get("/api/scale", response_model=ScaleOut)
def get_scale(request: Request) -> ScaleOut:
    scale = _store(request).scale
    return ScaleOut(name=scale.name, levels=list(scale.levels), names=list(scale.names))


@router.get("/api/queue/next", response_model=NextOut)
def next_pair(request: Request, annotator: str = Depends(require_annotator)) -> NextOut:
    store = _store(request)
    query = store.next_query(annotator, lease_s=request.app.state.config.lease_s)
    return NextOut(query=None if query is None else _query_out(request, query),
                   progress=_progress_out(store.progress(annotator)))


@router.get("/api/queries/{query_id}/media", response_model=MediaOut,
            dependencies=[Depends(require_annotator)])
def query_media(query_id: Annotated[int, PathParam(ge=1, le=2**62)], request: Request) -> MediaOut:
    """The pair's media now: the page asks again while ``rendering`` and swaps the videos in."""
    try:
        return _media_out(request, _store(request).query(query_id))
    except UnknownQueryError as error:
        raise HTTPException(404, str(error)) from None


@router.post("/api/labels", response_model=LabelOut, dependencies=[Depends(require_csrf)])
def submit_label(body: LabelIn, request: Request, annotator: str = Depends(require_annotator)) -> LabelOut:
    """Commit a label (or a skip) for the session's annotator; it is on disk when this returns."""
    try:
        label = _store(request).submit(body.query_id, annotator, body.value, interface="web")
    except UnknownQueryError as error:
        raise HTTPException(404, str(error)) from None
    except LabelConflictError as error:
        raise HTTPException(409, str(error)) from None
    except InvalidLabelError as error:
        raise HTTPException(422, str(error)) from None
    return _label_out(label)


@router.post("/api/labels/undo", response_model=UndoOut, dependencies=[Depends(require_csrf)])
def undo_label(request: Request, annotator: str = Depends(require_annotator)) -> UndoOut:
    """Retract this annotator's latest label and return its pair, to be labelled again."""
    store = _store(request)
    undone = store.undo(annotator)
    query = None if undone is None else store.query(undone.query_id)
    return UndoOut(undone=None if undone is None else _label_out(undone),
                   query=None if query is None else _query_out(request, query),
                   progress=_progress_out(store.progress(annotator)))
