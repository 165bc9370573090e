"""What a piece of feedback becomes: a ``RewardSpec``, a typed template filled with bounded parameters.

Feedback text (typed by a person, written by an LLM) is turned into data, never code: a
``RewardSpec`` names one template of the closed catalogue in ``TEMPLATE_PARAMS``, the agents it
concerns (indices, or ``"all"``) and the template's parameters, each with bounds that pydantic
enforces with a message naming the field (``params.radius``, ``agents``...). Nothing is evaluated.
Numbers are read strictly, wherever a spec comes from (the LLM's answer, the web page's JSON, a
saved pool): an agent index or an integer parameter is a JSON integer, never ``true``, ``"2"`` or
``1.0``; a real parameter is a JSON number, never a boolean or a string.

Names in a spec (entities, actions, agent indices) are checked against a ``Scene``
(``rlkit.m3hf.scene``, the env describing itself) when one is passed as validation context::

    scene = Scene.from_env(env)                      # any env with describe()/action_names
    spec = RewardSpec.model_validate(data, context={"scene": scene})
    specs = validate_specs(list_of_dicts, scene)     # the same for a list

JSON in and out: ``spec.model_dump(mode="json")`` / ``RewardSpec.model_validate(data)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from rlkit.errors import InvalidDataError

if TYPE_CHECKING:
    from rlkit.m3hf.scene import Scene

SELF = "self"  # the agent the spec is evaluated for
ANY_ITEM = "any"

SimpleTemplate = Literal[
    "distance", "proximity", "action", "status", "holding", "time_penalty", "success", "action_cost"
]
TemplateName = Literal[SimpleTemplate, "composite"]
Status = Literal["chopped", "on_plate", "held", "has_food"]
Value = Annotated[float, Field(ge=-10.0, le=10.0, description="reward per step while it holds")]
#: An agent's index: an integer (a bool, a string or a float is refused, not converted).
AgentIndex = Annotated[int, Field(ge=0, le=7, strict=True)]


class _Params(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)  # numbers as numbers
    READS: ClassVar[tuple[str, ...]] = ()  # the features() arrays the template reads

    def reads(self) -> frozenset[str]:
        return frozenset(self.READS)

    def names(self) -> dict[str, tuple[str, str]]:
        """Fields holding names to check against a scene: field -> (name, kind of name)."""
        return {}


class DistanceParams(_Params):
    """-scale * grid distance between ``a`` and ``b`` / (height + width): pulls ``a`` towards ``b``."""

    READS = ("positions",)

    a: str = Field(SELF, min_length=1, max_length=40, description="entity name or 'self'")
    b: str = Field(min_length=1, max_length=40, description="entity name or 'self'")
    scale: float = Field(1.0, gt=0.0, le=10.0)

    def names(self) -> dict[str, tuple[str, str]]:
        return {"a": (self.a, "entity"), "b": (self.b, "entity")}


class ProximityParams(_Params):
    """``bonus`` per step while ``a`` is within ``radius`` cells (grid distance) of ``b``."""

    READS = ("positions",)

    a: str = Field(SELF, min_length=1, max_length=40, description="entity name or 'self'")
    b: str = Field(min_length=1, max_length=40, description="entity name or 'self'")
    radius: int = Field(1, ge=0, le=16)
    bonus: Value = 1.0

    def names(self) -> dict[str, tuple[str, str]]:
        return {"a": (self.a, "entity"), "b": (self.b, "entity")}


class ActionParams(_Params):
    """``value`` whenever the agent chooses ``action`` (negative: discourage it)."""

    action: str = Field(min_length=1, max_length=40, description="one of the env's action names")
    value: Value = 1.0

    def names(self) -> dict[str, tuple[str, str]]:
        return {"action": (self.action, "action")}


class StatusParams(_Params):
    """``value`` per step while ``entity`` has ``status`` (chopped / on_plate / held for food;
    held / has_food for plates)."""

    entity: str = Field(min_length=1, max_length=40, description="an ingredient or plate name")
    status: Status
    value: Value = 1.0

    def names(self) -> dict[str, tuple[str, str]]:
        return {"entity": (self.entity, "item")}

    def reads(self) -> frozenset[str]:
        return frozenset({"chopped": ("chops",), "held": ("holding",)}.get(self.status, ("plate_contents",)))


class HoldingParams(_Params):
    """``value`` per step while the agent holds ``item`` ('any': holds anything)."""

    READS = ("holding",)

    item: str = Field(ANY_ITEM, min_length=1, max_length=40, description="ingredient or plate name, or 'any'")
    value: Value = 1.0

    def names(self) -> dict[str, tuple[str, str]]:
        return {} if self.item == ANY_ITEM else {"item": (self.item, "item")}


class TimePenaltyParams(_Params):
    """A return that pays for slowness ("faster!"): ``-rate`` every step (``growth="constant"``) or
    the paper's ``-rate * t``, t the step of the episode (``growth="linear"``)."""

    rate: float = Field(0.1, gt=0.0, le=1.0)
    growth: Literal["constant", "linear"] = "constant"


class SuccessParams(_Params):
    """``bonus`` on the step the dish is delivered."""

    READS = ("delivered",)

    bonus: float = Field(10.0, gt=0.0, le=100.0)


class ActionCostParams(_Params):
    """-cost for every action other than the env's idle action (energy; "stop wandering")."""

    cost: float = Field(0.1, gt=0.0, le=1.0)


class CompositePart(BaseModel):
    """One weighted term of a composite; a part is never itself a composite."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    template: SimpleTemplate
    params: Any = Field(None, validate_default=True)
    weight: float = Field(1.0, ge=0.0, le=10.0, strict=True)

    @field_validator("params", mode="before")
    @classmethod
    def _typed_params(cls, value: Any, info: ValidationInfo) -> _Params:
        return _params_for(info.data.get("template"), value)


class CompositeParams(_Params):
    """sum_k weight_k * part_k: several simple terms as one function in the pool."""

    parts: tuple[CompositePart, ...] = Field(min_length=2, max_length=4, strict=False)  # a JSON list

    def names(self) -> dict[str, tuple[str, str]]:
        return {
            f"parts.{k}.params.{name}": ref
            for k, part in enumerate(self.parts)
            for name, ref in part.params.names().items()
        }

    def reads(self) -> frozenset[str]:
        return frozenset().union(*(part.params.reads() for part in self.parts))


TEMPLATE_PARAMS: dict[str, type[_Params]] = {
    "distance": DistanceParams,
    "proximity": ProximityParams,
    "action": ActionParams,
    "status": StatusParams,
    "holding": HoldingParams,
    "time_penalty": TimePenaltyParams,
    "success": SuccessParams,
    "action_cost": ActionCostParams,
    "composite": CompositeParams,
}
TemplateParams = (
    DistanceParams
    | ProximityParams
    | ActionParams
    | StatusParams
    | HoldingParams
    | TimePenaltyParams
    | SuccessParams
    | ActionCostParams
    | CompositeParams
)


def _params_for(template: Any, value: Any) -> _Params:
    if template not in TEMPLATE_PARAMS:
        raise InvalidDataError(
            f"no parameters without a known template (templates: {sorted(TEMPLATE_PARAMS)})"
        )
    model = TEMPLATE_PARAMS[template]
    if isinstance(value, model):
        return value
    if value is None:
        value = {}
    return model.model_validate(value)


class RewardSpec(BaseModel):
    """One reward function for a pool: a template, the agents it is for, and its parameters.

    Data, never code: an LLM's or a rule parser's output is validated into it (frozen, unknown
    fields refused).

    Attributes:
        template: the reward template's name.
        agents: the indices (0 to 7) of the agents the feedback concerns, at least one, kept
            sorted and distinct; or ``"all"`` for the team.
        params: the template's typed parameters (None: the template's defaults).
        reason: the words of the feedback it came from, at most 500 characters.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    template: TemplateName
    agents: Literal["all"] | tuple[AgentIndex, ...] = Field(
        description="agent indices the feedback concerns, or 'all' for the team"
    )
    params: TemplateParams = Field(None, validate_default=True)
    reason: str = Field("", max_length=500, description="the words of the feedback it came from")

    @field_validator("agents")
    @classmethod
    def _some_agents(cls, agents: str | tuple[int, ...]) -> str | tuple[int, ...]:
        if isinstance(agents, tuple):
            if not agents:
                raise InvalidDataError("must name at least one agent index, or be 'all'")
            agents = tuple(sorted(set(agents)))
        return agents

    @field_validator("params", mode="before")
    @classmethod
    def _typed_params(cls, value: Any, info: ValidationInfo) -> _Params:
        return _params_for(info.data.get("template"), value)

    @model_validator(mode="after")
    def _names_in_scene(self, info: ValidationInfo) -> RewardSpec:
        scene = info.context.get("scene") if isinstance(info.context, Mapping) else None
        if scene is not None:
            scene.check(self)
        return self

    def summary(self) -> str:
        """One line for people (logs, the web page): who, which template, which parameters."""
        who = "all agents" if self.agents == "all" else ", ".join(f"agent {a}" for a in self.agents)
        return f"{who}: {_call(self.template, self.params)}"

    def agent_indices(self, n_agents: int) -> tuple[int, ...]:
        """The agents this spec is for, with ``"all"`` resolved."""
        return tuple(range(n_agents)) if self.agents == "all" else self.agents


def validate_specs(data: Sequence[Mapping[str, Any]], scene: Scene | None = None) -> list[RewardSpec]:
    """Validate a list of JSON objects into specs (names checked against ``scene`` if given).

    Args:
        data: the specs as parsed JSON objects.
        scene: the env's names; when given, every name a spec uses must be one of them.

    Returns:
        One ``RewardSpec`` per object, in order.

    Raises:
        pydantic.ValidationError: naming the first object's fields that do not validate.
    """
    context = {"scene": scene} if scene is not None else None
    return [RewardSpec.model_validate(item, context=context) for item in data]


@runtime_checkable
class FeedbackParser(Protocol):
    """Turns one piece of free-text feedback into reward specs for the scene's agents.

    Both parsers (``RuleParser``, ``LLMParser``) return validated specs, possibly none (the text
    asked for nothing a template can express); they never raise on odd text.
    """

    def parse(self, text: str, scene: Scene) -> list[RewardSpec]: ...


def _call(template: str, params: _Params) -> str:
    if isinstance(params, CompositeParams):
        inner = " + ".join(f"{part.weight:g} * {_call(part.template, part.params)}" for part in params.parts)
        return f"composite({inner})"
    values = ", ".join(f"{key}={value!r}" for key, value in params.model_dump().items())
    return f"{template}({values})"
