"""``LLMParser``: feedback to ``RewardSpec`` through any OpenAI-compatible chat server, never trusted.

The model answers one JSON object (``prompt.ParsedFeedback``), validated by pydantic against the
spec schema and the env's scene. What can go wrong, and what happens:

- API error (timeout, connection, HTTP 429 / 5xx): retried ``api_retries`` times with exponential
  backoff (``backoff_s * backoff_factor ** k``), then the ``fallback`` parser (``RuleParser``);
- any other HTTP error (400, 401, 404), a redirect off the ``base_url``'s origin (refused before
  anything is sent there): no retry, fallback;
- time: each request is cut off ``timeout_s`` after it starts, however slowly the server trickles,
  and the whole parse (every retry, backoff and repair) ``deadline_s`` after it starts, then
  fallback; a response body past ``llm_http.MAX_RESPONSE_BYTES``, as sent or as decoded (a gzip
  bomb), is cut off and not retried, fallback (``rlkit.m3hf.llm_http`` holds the HTTP client);
- invalid JSON or a schema / bounds / name violation: ``repair_retries`` (default 1) follow-up
  requests carrying the validation error, then fallback;
- hostile answers are invalid JSON before they reach ``json``: longer than ``MAX_ANSWER_CHARS``,
  nested deeper than ``MAX_DEPTH``, ``NaN`` / ``Infinity``; lone surrogates are replaced before
  anything is sent back to the server; a reply the SDK cannot read (a broken envelope, content
  that is not text) is a failed request, not retried.

Every failure is logged (``logging`` warnings on ``rlkit.m3hf.parser_llm``) and recorded: each
``parse`` leaves a ``ParseDecision`` (``parser.decisions``, also returned by ``parse_recorded``)
listing every attempt. Nothing the model writes is executed. ``make_parser(config)`` gives the
``RuleParser`` when there is neither an API key nor a ``base_url`` (offline and deterministic).

    parser = LLMParser(LLMConfig(model="llama3.1", base_url="http://localhost:11434/v1"))
    specs = parser.parse("Green agent, go to the tomato", Scene.from_env(env))
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from pydantic import Field, SecretStr, ValidationError

from rlkit.config import StrictModel
from rlkit.errors import InvalidDataError, WrongTypeError
from rlkit.m3hf.parser_rule import RuleParser, clean_text
from rlkit.m3hf.prompt import ParsedFeedback, build_messages, repair_message, response_schema
from rlkit.m3hf.scene import Scene
from rlkit.m3hf.specs import FeedbackParser, RewardSpec

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletion, ChatCompletionMessageParam
    from openai.types.chat.completion_create_params import ResponseFormat
    from openai.types.shared_params.response_format_json_schema import JSONSchema

log = logging.getLogger(__name__)

#: Where the SDK sends requests when neither ``base_url`` nor ``OPENAI_BASE_URL`` says.
DEFAULT_BASE_URL = "https://api.openai.com/v1"

#: The longest model answer read as JSON; the nesting a ``{"specs": [...]}`` answer may have.
MAX_ANSWER_CHARS = 64_000
MAX_DEPTH = 16
_ECHO_CHARS = 4_000  # of an invalid answer, sent back in the repair request


def _retryable() -> tuple[type[Exception], ...]:
    """The errors worth another try (timeouts are connection errors; a request cut off at
    ``timeout_s``); imported on first use, so ``rlkit m3hf --help`` does not load the SDK."""
    import openai

    from rlkit.m3hf.llm_http import DeadlineExceeded

    return (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError, DeadlineExceeded)


class LLMConfig(StrictModel):
    """Where the model lives and how patient to be; ``api_key`` None reads ``OPENAI_API_KEY``.

    The key is a secret: a ``SecretStr`` left out of every dump (``config.yaml``, ``config.json``,
    W&B, ``--print-config``, M3HF's ``state.json``), so a resolved config never holds it. The
    ``rlkit`` command refuses it as an override (see ``rlkit.config.SECRET_FIELDS``): give it in
    ``OPENAI_API_KEY``.

    Attributes:
        model: the model's name on the server.
        base_url: the OpenAI-compatible server (None: ``$OPENAI_BASE_URL``, else OpenAI's API).
        api_key: the server's key (None: ``$OPENAI_API_KEY``); never written out.
        timeout_s: the most one request may take, connect to last byte, in seconds (> 0).
        deadline_s: the most one parse may take, every retry, backoff and repair included, in
            seconds (> 0).
        api_retries: further tries of a request after a connection, rate-limit or server error,
            in [0, 10].
        backoff_s: seconds before the first retry, >= 0.
        backoff_factor: each further retry waits this many times longer, >= 1 (the waits never
            pass the deadline).
        repair_retries: further requests, in [0, 5], that show the model its invalid answer and
            what was wrong with it.
        temperature: the sampling temperature, in [0, 2].
        response_format: what the request asks of the answer: ``"json_object"`` (any JSON
            object), ``"json_schema"`` (the specs' JSON schema, for servers that take it) or
            ``"none"`` (the server's default).
    """

    model: str = "gpt-4o-mini"
    base_url: str | None = None
    api_key: SecretStr | None = Field(None, exclude=True, repr=False)
    timeout_s: float = Field(30.0, gt=0.0, description="the most one request may take, connect to last byte")
    deadline_s: float = Field(
        120.0, gt=0.0, description="the most one parse may take, every retry, backoff and repair included"
    )
    api_retries: int = Field(2, ge=0, le=10)
    backoff_s: float = Field(1.0, ge=0.0)
    backoff_factor: float = Field(2.0, ge=1.0)
    repair_retries: int = Field(1, ge=0, le=5)
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    response_format: Literal["json_object", "json_schema", "none"] = "json_object"

    def resolved_api_key(self) -> str | None:
        given = self.api_key.get_secret_value() if self.api_key is not None else None
        return given or os.environ.get("OPENAI_API_KEY") or None


AttemptOutcome = Literal["ok", "api_error", "invalid_json", "invalid_spec", "empty"]


@dataclass(frozen=True)
class Attempt:
    """One request to the model and what came of it."""

    outcome: AttemptOutcome
    detail: str = ""


@dataclass
class ParseDecision:
    """The record of one ``parse``: every attempt, who produced the specs, and why.

    Attributes:
        text: the feedback parsed.
        attempts: each request to the model (and a failed fallback) and what came of it, in
            order.
        parser: who produced ``specs``: ``"llm"``, or ``"fallback"`` when the model failed.
        reason: why that parser's specs were taken (``"valid output"``, ``"API failed: ..."``).
        specs: the reward specs parsed from ``text``.
    """

    text: str
    attempts: list[Attempt] = field(default_factory=list)
    parser: Literal["llm", "fallback"] = "llm"
    reason: str = ""
    specs: list[RewardSpec] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        """The record as JSON data that encodes as UTF-8: lone surrogates (a JSON escape such as
        ``"\\ud800"`` in the text) are replaced by ``?``, as in what was sent to the model."""
        return {
            "text": clean_text(self.text),
            "parser": self.parser,
            "reason": clean_text(self.reason),
            "attempts": [{"outcome": a.outcome, "detail": clean_text(a.detail)} for a in self.attempts],
            "specs": [spec.model_dump(mode="json") for spec in self.specs],
        }


class _GiveUp(Exception):
    """The API failed for good on this request."""


class LLMParser:
    """Parse feedback with an LLM through the ``openai`` SDK; fall back to ``fallback`` on failure.

    Every parse's record is appended to ``decisions`` (``ParseDecision``).

    Args:
        config: the server and how patient to be (None: ``LLMConfig()``'s defaults).
        fallback: parses a text when the model fails for good (None: a ``RuleParser``).
        sleep: waits the backoff between retries, in seconds (``time.sleep``).
    """

    def __init__(
        self,
        config: LLMConfig | None = None,
        fallback: FeedbackParser | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.config = config or LLMConfig()
        self.fallback = fallback or RuleParser()
        self.decisions: list[ParseDecision] = []
        self._sleep = sleep
        import openai

        from rlkit.m3hf.llm_http import guarded_client

        base_url = self.config.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        self._client = openai.OpenAI(
            base_url=base_url,
            api_key=self.config.resolved_api_key() or "no-key-local-server",
            timeout=self.config.timeout_s,
            max_retries=0,  # retries are ours, so each one is logged and recorded
            http_client=guarded_client(base_url, self.config.timeout_s),
        )

    def parse(self, text: str, scene: Scene) -> list[RewardSpec]:
        return self.parse_recorded(text, scene).specs

    def parse_recorded(self, text: str, scene: Scene) -> ParseDecision:
        """Parse, and return the full record of how (also appended to ``self.decisions``)."""
        decision = ParseDecision(text=text)
        self.decisions.append(decision)
        deadline = time.monotonic() + self.config.deadline_s
        messages = build_messages(clean_text(text), scene)
        for repair in range(self.config.repair_retries + 1):
            try:
                content = self._complete(messages, decision, deadline)
            except _GiveUp as error:
                return self._fall_back(decision, scene, f"API failed: {error}")
            try:
                decision.specs = _validated(content, scene)
            except ValueError as error:  # InvalidAnswer, json.JSONDecodeError, ValidationError
                unreadable = isinstance(error, json.JSONDecodeError | InvalidAnswer)
                outcome: AttemptOutcome = "invalid_json" if unreadable else "invalid_spec"
                detail = clean_text(_short(error))
                decision.attempts.append(Attempt(outcome, detail))
                log.warning("LLM output rejected (%s, try %d): %s", outcome, repair + 1, detail)
                echo = clean_text(content[:_ECHO_CHARS])
                messages = [*messages, {"role": "assistant", "content": echo}, repair_message(detail)]
                continue
            decision.attempts.append(Attempt("ok", f"{len(decision.specs)} spec(s)"))
            decision.reason = "valid output" if repair == 0 else "valid output after repair"
            log.info("LLM parsed %r into %d spec(s) (%s)", text, len(decision.specs), decision.reason)
            return decision
        return self._fall_back(decision, scene, "output still invalid after repair")

    def _complete(
        self, messages: list[ChatCompletionMessageParam], decision: ParseDecision, deadline: float
    ) -> str:
        """One model answer, with API errors retried under backoff; ``_GiveUp`` when out of tries
        or past the parse's ``deadline`` (``time.monotonic()``)."""
        config = self.config
        for attempt in range(config.api_retries + 1):
            if time.monotonic() >= deadline:
                detail = f"DeadlineExceeded: the parse passed its deadline (deadline_s={config.deadline_s:g})"
                decision.attempts.append(Attempt("api_error", detail))
                log.warning("LLM parse out of time, giving up: %s", detail)
                raise _GiveUp(detail)
            try:
                content = _content(self._create(messages, deadline))
            except Exception as error:  # noqa: BLE001 - whatever the server sends ends in a fallback
                detail = clean_text(f"{type(error).__name__}: {_short(error)}")
                decision.attempts.append(Attempt("api_error", detail))
                retryable = isinstance(error, _retryable())
                if not retryable or attempt == config.api_retries:
                    log.warning(
                        "LLM request failed (%s), giving up: %s", "final" if retryable else "fatal", detail
                    )
                    raise _GiveUp(detail) from error
                left = max(deadline - time.monotonic(), 0.0)
                delay = min(config.backoff_s * config.backoff_factor**attempt, left)
                log.warning("LLM request failed (try %d), retrying in %.3g s: %s", attempt + 1, delay, detail)
                self._sleep(delay)
                continue
            if not content:
                decision.attempts.append(Attempt("empty", "the model answered no content"))
                log.warning("LLM answered no content")
                return ""
            return content
        raise AssertionError("unreachable: the loop returns or raises")

    def _create(self, messages: list[ChatCompletionMessageParam], deadline: float) -> ChatCompletion:
        """One request, cut off at ``timeout_s`` or the parse's ``deadline``, whichever comes first."""
        from rlkit.m3hf.llm_http import request_deadline

        config, response_format = self.config, self._format()
        own = time.monotonic() + config.timeout_s
        limit = (f"timeout_s={config.timeout_s:g}" if own <= deadline
                 else f"deadline_s={config.deadline_s:g} of the parse")
        create = self._client.chat.completions.create
        with request_deadline(min(own, deadline), limit):
            if response_format is None:  # the server's default
                return create(model=config.model, messages=messages, temperature=config.temperature)
            return create(model=config.model, messages=messages, temperature=config.temperature,
                          response_format=response_format)

    def _format(self) -> ResponseFormat | None:
        if self.config.response_format == "none":
            return None
        if self.config.response_format == "json_object":
            return {"type": "json_object"}
        schema: JSONSchema = {"name": "reward_specs", "schema": response_schema(), "strict": False}
        return {"type": "json_schema", "json_schema": schema}

    def _fall_back(self, decision: ParseDecision, scene: Scene, reason: str) -> ParseDecision:
        decision.parser, decision.reason = "fallback", reason
        try:
            decision.specs = self.fallback.parse(decision.text, scene)
        except Exception as error:  # noqa: BLE001 - a parser must never stop training
            decision.attempts.append(
                Attempt("invalid_spec", f"fallback failed: {type(error).__name__}: {error}")
            )
            log.error(
                "fallback parser %s failed on %r: %s", type(self.fallback).__name__, decision.text, error
            )
            decision.specs = []
        log.warning(
            "LLM parser fell back to %s for %r (%s): %d spec(s)",
            type(self.fallback).__name__,
            decision.text,
            reason,
            len(decision.specs),
        )
        return decision


class InvalidAnswer(InvalidDataError):
    """A model answer refused before it is parsed: too long, too deep, or not plain JSON."""


def _content(response: ChatCompletion) -> str | None:
    """The answer's text; ``WrongTypeError`` (a ``TypeError``) for a reply whose envelope or
    content is not what the API says (the SDK builds its models without validating them)."""
    choices = response.choices
    if not choices:
        return None
    if not isinstance(choices, list):
        raise WrongTypeError(f"choices is a {type(choices).__name__}, not a list")
    message = getattr(choices[0], "message", None)
    content = getattr(message, "content", None)
    if content is not None and not isinstance(content, str):
        raise WrongTypeError(f"message.content is a {type(content).__name__}, not text")
    return content


def _validated(content: str, scene: Scene) -> list[RewardSpec]:
    """The specs in a model answer; ``InvalidAnswer`` / ``json.JSONDecodeError`` / ``ValidationError``
    (all ValueError), whatever the answer holds."""
    if len(content) > MAX_ANSWER_CHARS:
        raise InvalidAnswer(f"the answer is {len(content)} characters long; at most {MAX_ANSWER_CHARS}")
    depth = _depth(content)
    if depth > MAX_DEPTH:
        raise InvalidAnswer(f"the answer's JSON is nested {depth} deep; at most {MAX_DEPTH}")
    try:
        data = json.loads(content, parse_constant=_no_constant)
    except RecursionError as error:  # unreachable past the depth check; kept a named error regardless
        raise InvalidAnswer("the answer's JSON is nested too deep") from error
    if isinstance(data, list):  # a bare list of specs is accepted as the same thing
        data = {"specs": data}
    return list(ParsedFeedback.model_validate(data, context={"scene": scene}).specs)


def _no_constant(name: str) -> float:
    raise InvalidAnswer(f"{name} is not a JSON number")


_STRING_OR_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]')


def _depth(content: str) -> int:
    """The deepest nesting of ``[`` / ``{`` in a JSON text, brackets inside strings skipped."""
    depth = deepest = 0
    for match in _STRING_OR_BRACKET.finditer(content):
        token = match.group()
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif token in "]}":
            depth -= 1
    return deepest




def _short(error: Exception, limit: int = 600) -> str:
    text = str(error) if not isinstance(error, ValidationError) else _validation_summary(error)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _validation_summary(error: ValidationError) -> str:
    """Field and message per problem, without pydantic's URLs: what the repair request shows."""
    return "; ".join(
        f"{'.'.join(str(part) for part in issue['loc']) or '(root)'}: {issue['msg']}"
        for issue in error.errors()
    )


def make_parser(config: LLMConfig | None = None) -> FeedbackParser:
    """The LLM parser when a key or a server is configured, else the offline ``RuleParser``.

    Args:
        config: the model, endpoint and key; defaults when ``None``.

    Returns:
        An ``LLMParser`` when an API key or ``base_url`` is set, else a ``RuleParser``.
    """
    config = config or LLMConfig()
    if config.resolved_api_key() is None and config.base_url is None:
        log.info("no OPENAI_API_KEY and no base_url: parsing feedback with the offline RuleParser")
        return RuleParser()
    return LLMParser(config)
