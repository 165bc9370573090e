"""The M3HF page: the phase's rollout video, a text box, the parser's preview per agent, and the
person's corrections, confirmed into the store for the M3HF loop's ``WebFeedbackSource``."""

from __future__ import annotations

from typing import Any

from rlkit.extras import extra

with extra("human"):
    from fastapi import APIRouter, Depends, HTTPException, Request
    from fastapi.responses import HTMLResponse

from pydantic import BaseModel, Field, ValidationError, field_validator

from rlkit.errors import InvalidDataError
from rlkit.human.deps import ERROR_RESPONSES, page, require_annotator, require_csrf
from rlkit.human.m3hf_source import scene_from_json
from rlkit.human.records import PhaseClosedError, UnknownQueryError
from rlkit.human.spec_form import spec_form
from rlkit.m3hf.parser_rule import clean_text
from rlkit.m3hf.scene import Scene
from rlkit.m3hf.specs import RewardSpec, validate_specs

router = APIRouter(responses=ERROR_RESPONSES)
MAX_SPECS = 20


def _no_nul(text: str) -> str:
    if "\x00" in text:  # PostgreSQL's text cannot hold it; no person types it
        raise InvalidDataError("a NUL character is not feedback text")
    return text


class TextIn(BaseModel):
    text: str = Field(min_length=1)

    _text = field_validator("text")(_no_nul)


class SpecOut(BaseModel):
    spec: dict[str, Any]
    summary: str


class PreviewOut(BaseModel):
    phase: int
    specs: list[SpecOut]
    per_agent: dict[str, list[str]]  # agent name -> summaries of the specs that concern it


class CommitIn(BaseModel):
    phase: int = Field(ge=0, le=10**6, strict=True)
    text: str = Field(min_length=1)
    specs: list[dict[str, Any]] = Field(max_length=MAX_SPECS)

    _text = field_validator("text")(_no_nul)


class CommitOut(BaseModel):
    id: int
    specs: list[SpecOut]


class CheckIn(BaseModel):
    specs: list[Any] = Field(max_length=MAX_SPECS)


class CheckOut(BaseModel):
    """Per spec, in order: its summary when valid, else what is wrong (field and reason)."""

    summaries: list[str | None]
    problems: list[str | None]


def _phase(request: Request) -> tuple[dict[str, Any], Scene]:
    phase = request.app.state.store.latest_phase()
    if phase is None or "scene" not in phase["context"]:
        raise HTTPException(404, "no M3HF phase is waiting for feedback")
    if phase["closed"]:
        raise HTTPException(409, _closed(phase["phase"]))
    return phase, scene_from_json(phase["context"]["scene"])


def _closed(phase: int) -> str:
    return f"phase {phase} is closed: training took its feedback and went on; the next phase opens here"


def _check_text(request: Request, text: str) -> str:
    limit = request.app.state.config.max_text_chars
    if len(text) > limit:
        raise HTTPException(422, f"text: {len(text)} characters, the limit is {limit}")
    return text


def _spec_out(spec: RewardSpec) -> SpecOut:
    return SpecOut(spec=spec.model_dump(mode="json"), summary=spec.summary())


@router.get("/m3hf", response_class=HTMLResponse, include_in_schema=False)
def m3hf_page(request: Request) -> HTMLResponse:
    phase = request.app.state.store.latest_phase()
    has_scene = phase is not None and "scene" in phase["context"]
    scene = scene_from_json(phase["context"]["scene"]) if has_scene else None
    return page(request, "m3hf.html", phase=phase, scene=scene)


@router.post("/api/m3hf/preview", response_model=PreviewOut, dependencies=[Depends(require_csrf)])
def preview(body: TextIn, request: Request) -> PreviewOut:
    """What the parser understands from the text, per agent; nothing is stored."""
    phase, scene = _phase(request)
    specs = request.app.state.parser.parse(_check_text(request, body.text), scene)
    per_agent = {name: [s.summary() for s in specs if i in s.agent_indices(scene.n_agents)]
                 for i, name in enumerate(scene.agent_names)}
    return PreviewOut(phase=phase["phase"], specs=[_spec_out(s) for s in specs], per_agent=per_agent)


@router.get("/api/m3hf/form")
def form(request: Request) -> dict[str, Any]:
    """The typed form of each template for this phase's scene (``rlkit.human.spec_form``)."""
    phase, scene = _phase(request)
    return {"phase": phase["phase"], **spec_form(scene)}


@router.post("/api/m3hf/check", response_model=CheckOut, dependencies=[Depends(require_csrf)])
def check(body: CheckIn, request: Request) -> CheckOut:
    """Validate specs against the scene as a commit would, one by one; nothing is stored."""
    _, scene = _phase(request)
    summaries: list[str | None] = []
    problems: list[str | None] = []
    for item in body.specs:
        try:
            summaries.append(RewardSpec.model_validate(item, context={"scene": scene}).summary())
            problems.append(None)
        except ValidationError as error:
            summaries.append(None)
            problems.append(clean_text("; ".join(map(_problem, error.errors()))))
    return CheckOut(summaries=summaries, problems=problems)


def _problem(issue: Any) -> str:
    """``params.value: Input should be ...``; a scene check's message names its field itself."""
    where, message = ".".join(map(str, issue["loc"])), issue["msg"].removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


@router.post("/api/m3hf/commit", response_model=CommitOut, dependencies=[Depends(require_csrf)])
def commit(body: CommitIn, request: Request, annotator: str = Depends(require_annotator)) -> CommitOut:
    """Store the text with the specs the person confirmed (as corrected), checked against the scene."""
    phase, scene = _phase(request)
    if body.phase != phase["phase"]:
        raise HTTPException(409, f"phase {body.phase} is closed; feedback now goes to phase {phase['phase']}")
    try:
        specs = validate_specs(body.specs, scene)
    except (ValidationError, ValueError) as error:  # a key may hold a lone surrogate: cleaned
        raise HTTPException(422, clean_text(f"specs: {error}")) from None
    try:
        feedback_id = request.app.state.store.add_feedback(
            body.phase, annotator, _check_text(request, body.text),
            [s.model_dump(mode="json") for s in specs])
    except UnknownQueryError as error:
        raise HTTPException(404, str(error)) from None
    except PhaseClosedError:  # closed between the check above and this commit
        raise HTTPException(409, _closed(body.phase)) from None
    return CommitOut(id=feedback_id, specs=[_spec_out(s) for s in specs])
