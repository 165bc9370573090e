"""What a piece of feedback becomes: a ``RewardSpec``, a typed template filled with bounded parameters.

Feedback text (typed by a person, written by an LLM) is turned into data, never code: a
``RewardSpec`` names one template of the closed catalogue in ``TEMPLATE_PARAMS``, the agents it
concerns (indices, or ``"all"``) and the template's parameters, each with bounds that pydantic
enforces with a message naming the field (``params.radius``, ``agents``...). Nothing is evaluated.
Numbers are read strictly, wherever a spec comes from (the LLM's answer, the web page's JSON, a
saved pool): an agent index or an integer parameter is a JSON integer, never ``true``, ``"2"`` or
``1.0``; a real parameter is a JSON number, never a boolean or a string.

``Scene`` is the environment describing itself to templates and parsers: agents (names, colours),
entities by name in the order of the env's ``features()`` arrays, action names, grid size. Names in
a spec (entities, actions, agent indices) are checked against a scene when one is passed as
validation context::

    scene = Scene.from_env(env)                      # any env with describe()/action_names
    spec = RewardSpec.model_validate(data, context={"scene": scene})
    specs = validate_specs(list_of_dicts, scene)     # the same for a list

JSON in and out: ``spec.model_dump(mode="json")`` / ``RewardSpec.model_validate(data)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, ClassVar, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from rlkit.errors import InvalidDataError

SELF = "self"  # the agent the spec is evaluated for
# What Overcooked's features() provides; a scene built from an env lists that env's keys.
FEATURES = ("positions", "holding", "chops", "plate_contents", "delivered")
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


@dataclass(frozen=True)
class Scene:
    """The env's self-description for templates, prompts and parsers (no live state).

    ``entity_index`` (name -> position on the entity axis) is derived from ``entity_names``.

    Attributes:
        agent_names: the agents' names, in agent order.
        agent_colours: each agent's colour, as people see it in the video.
        entity_names: the order of ``features()["positions"]``'s entity axis; it holds every
            agent and item.
        entity_kinds: name -> agent / ingredient / plate / knife / delivery.
        item_names: the ids of ``features()["holding"]``: ingredients then plates.
        action_names: the agents' actions, by index.
        recipe_foods: the ingredients the recipe needs.
        height: the grid's rows.
        width: the grid's columns.
        idle_action: the action that does nothing, one of ``action_names``.
        chops_needed: the chops that make a food chopped.
        features: the keys of the env's ``features()`` the templates may read.

    Raises:
        InvalidDataError: when ``entity_names`` lacks an agent or item, or ``idle_action`` is
            not an action.
    """

    agent_names: tuple[str, ...]
    agent_colours: tuple[str, ...]
    entity_names: tuple[str, ...]  # the order of ``features()["positions"]``'s entity axis
    entity_kinds: Mapping[str, str]  # name -> agent / ingredient / plate / knife / delivery
    item_names: tuple[str, ...]  # the ids of ``features()["holding"]``: ingredients then plates
    action_names: tuple[str, ...]
    recipe_foods: tuple[str, ...]
    height: int
    width: int
    idle_action: str = "stay"
    chops_needed: int = 3
    features: tuple[str, ...] = FEATURES  # the keys of the env's features() the templates may read
    entity_index: Mapping[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "entity_index", {name: i for i, name in enumerate(self.entity_names)})
        missing = [name for name in (*self.agent_names, *self.item_names) if name not in self.entity_index]
        if missing:
            raise InvalidDataError(f"entity_names {list(self.entity_names)} lack agents or items {missing}")
        if self.idle_action not in self.action_names:
            raise InvalidDataError(
                f"idle_action {self.idle_action!r} not in action_names {self.action_names}"
            )

    @property
    def n_agents(self) -> int:
        return len(self.agent_names)

    @classmethod
    def from_env(cls, env: Any) -> Scene:
        """Read an Overcooked parallel env (``describe()``) or batched env (``describe(0)``)."""
        description = env.describe() if hasattr(env, "possible_agents") else env.describe(0)
        scene = cls.from_description(description, tuple(env.action_names))
        return replace(scene, features=tuple(env.features()))

    @classmethod
    def from_description(cls, description: Mapping[str, Any], action_names: Sequence[str]) -> Scene:
        """Build from an env's JSON self-description (``describe()``) and its action names."""
        entities: Mapping[str, Mapping[str, Any]] = description["entities"]
        kinds = {name: str(entity["kind"]) for name, entity in entities.items()}
        agents = tuple(sorted((n for n, k in kinds.items() if k == "agent"), key=_agent_number))
        items = tuple(n for n, k in kinds.items() if k in ("ingredient", "plate"))
        fixtures = tuple(n for n, k in kinds.items() if k in ("knife", "delivery"))
        return cls(
            agent_names=agents,
            agent_colours=tuple(str(entities[a]["colour"]) for a in agents),
            entity_names=(*items, *fixtures, *agents),
            entity_kinds=kinds,
            item_names=items,
            action_names=tuple(action_names),
            recipe_foods=tuple(description["recipe_foods"]),
            height=int(description["grid"]["height"]),
            width=int(description["grid"]["width"]),
        )

    def check(self, spec: RewardSpec) -> None:
        """Raise ``ValueError`` naming the field if ``spec`` names what this scene lacks."""
        if spec.agents != "all":
            bad = [a for a in spec.agents if a >= self.n_agents]
            if bad:
                raise InvalidDataError(f"agents: {bad} out of range 0..{self.n_agents - 1}")
        missing = sorted(spec.params.reads() - set(self.features))
        if missing:
            raise InvalidDataError(
                f"template: {spec.template!r} reads {missing}, which the env's features() lack"
            )
        known = {
            "entity": (SELF, *self.entity_names),
            "item": self.item_names,
            "action": self.action_names,
        }
        for name_field, (name, kind) in spec.params.names().items():
            if name not in known[kind]:
                raise InvalidDataError(
                    f"params.{name_field}: unknown {kind} {name!r}; known: {list(known[kind])}"
                )
        parts = spec.params.parts if isinstance(spec.params, CompositeParams) else ()
        leaves = [("params", spec.params)]
        leaves += [(f"params.parts.{k}.params", part.params) for k, part in enumerate(parts)]
        for where, params in leaves:
            if isinstance(params, StatusParams):
                self._check_status(params, where)

    def _check_status(self, params: StatusParams, where: str) -> None:
        plate = self.entity_kinds[params.entity] == "plate"
        allowed = ("held", "has_food") if plate else ("chopped", "on_plate", "held")
        if params.status not in allowed:
            raise InvalidDataError(f"{where}.status: {params.status!r} does not apply to {params.entity!r}")


def _agent_number(name: str) -> int:
    return int(name.rsplit("_", 1)[-1])


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
