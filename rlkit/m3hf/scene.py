"""``Scene``: the environment describing itself to reward templates, prompts and parsers.

Agents (names, colours), entities by name in the order of the env's ``features()`` arrays, action
names, grid size; no live state. A ``RewardSpec`` validated with a scene as context is checked
against it (``Scene.check``): every agent index, entity, item and action it names must be one of
the scene's, and every ``features()`` array its template reads must be one the env provides.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rlkit.errors import InvalidDataError
from rlkit.m3hf.specs import SELF, CompositeParams, RewardSpec, StatusParams

# What Overcooked's features() provides; a scene built from an env lists that env's keys.
FEATURES = ("positions", "holding", "chops", "plate_contents", "delivered")


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
