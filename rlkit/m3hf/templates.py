"""Reward templates evaluated on the env's state arrays, vectorised over games, never from text.

``compile_term(params, scene)`` turns a validated template (``rlkit.m3hf.specs``) into a plain
function ``term(state, actions, agent) -> (G,)`` where

- ``state`` is the env's ``features()`` with a leading game axis G: ``positions`` (G, E, 2) in
  ``scene.entity_names`` order, ``holding`` (G, A) item id per agent (-1 none, ids in
  ``scene.item_names`` order), ``chops`` (G, n_ingredients), ``plate_contents`` (G, n_plates,
  n_ingredients) bool, ``delivered`` (G,) bool;
- ``actions`` (G,) the action index this agent chose (``scene.action_names``);
- ``agent`` the index of the agent the term is evaluated for (what ``"self"`` means).

Each template reads only the arrays it needs; names are resolved to indices once, at compile time.
The catalogue and its meaning (the docstrings of the params models) are in ``specs``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from rlkit.errors import InvalidDataError, WrongTypeError
from rlkit.m3hf.scene import Scene
from rlkit.m3hf.specs import (
    ANY_ITEM,
    SELF,
    ActionCostParams,
    ActionParams,
    CompositeParams,
    DistanceParams,
    HoldingParams,
    ProximityParams,
    StatusParams,
    SuccessParams,
    TemplateParams,
    TimePenaltyParams,
)

State = Mapping[str, np.ndarray]
Term = Callable[[State, np.ndarray, int], np.ndarray]


def compile_term(params: TemplateParams, scene: Scene) -> Term:
    """The vectorised reward function of one template.

    Args:
        params: one template's validated parameters.
        scene: the env's names of agents, entities, items and actions.

    Returns:
        A term ``(state, actions, agent) -> rewards``: ``state`` is the env's ``features()``,
        ``actions`` the agents' action ids, ``agent`` the index of the agent rewarded.

    Raises:
        InvalidDataError: when the parameters name an entity, item, action or status the scene
            lacks.
        WrongTypeError: when ``params`` is not a template's parameters.
    """
    match params:
        case DistanceParams():
            return _distance(params, scene)
        case ProximityParams():
            return _proximity(params, scene)
        case ActionParams():
            return _action(params, scene)
        case StatusParams():
            return _status(params, scene)
        case HoldingParams():
            return _holding(params, scene)
        case TimePenaltyParams():
            if params.growth == "linear":
                rate = params.rate
                return lambda state, actions, agent: -rate * np.asarray(state["step"], dtype=np.float64)
            return _constant(-params.rate)
        case SuccessParams():
            bonus = params.bonus
            return lambda state, actions, agent: bonus * np.asarray(state["delivered"], dtype=np.float64)
        case ActionCostParams():
            return _action_cost(params, scene)
        case CompositeParams():
            return _composite(params, scene)
    raise WrongTypeError(f"params of type {type(params).__name__} are not a reward template")


def _entity(name: str, scene: Scene, field: str) -> Callable[[int], int]:
    """Entity index for an agent: ``self`` depends on the agent, other names are fixed."""
    if name == SELF:
        agent_entities = [scene.entity_index[a] for a in scene.agent_names]
        return lambda agent: agent_entities[agent]
    if name not in scene.entity_index:
        raise InvalidDataError(f"{field}: unknown entity {name!r}; known: {[SELF, *scene.entity_names]}")
    index = scene.entity_index[name]
    return lambda agent: index


def _grid_distance(
    params: DistanceParams | ProximityParams, scene: Scene
) -> Callable[[State, int], np.ndarray]:
    """Manhattan distance in cells between ``a`` and ``b`` per game (held items are at the holder)."""
    a, b = _entity(params.a, scene, "params.a"), _entity(params.b, scene, "params.b")

    def distance(state: State, agent: int) -> np.ndarray:
        positions = np.asarray(state["positions"])
        return np.abs(positions[:, a(agent)] - positions[:, b(agent)]).sum(axis=-1).astype(np.float64)

    return distance


def _distance(params: DistanceParams, scene: Scene) -> Term:
    distance, scale = _grid_distance(params, scene), params.scale / (scene.height + scene.width)
    return lambda state, actions, agent: -scale * distance(state, agent)


def _proximity(params: ProximityParams, scene: Scene) -> Term:
    distance, radius, bonus = _grid_distance(params, scene), params.radius, params.bonus
    return lambda state, actions, agent: bonus * (distance(state, agent) <= radius)


def _action_index(name: str, scene: Scene, field: str) -> int:
    if name not in scene.action_names:
        raise InvalidDataError(f"{field}: unknown action {name!r}; known: {list(scene.action_names)}")
    return scene.action_names.index(name)


def _action(params: ActionParams, scene: Scene) -> Term:
    index, value = _action_index(params.action, scene, "params.action"), params.value
    return lambda state, actions, agent: value * (np.asarray(actions) == index)


def _action_cost(params: ActionCostParams, scene: Scene) -> Term:
    idle, cost = _action_index(scene.idle_action, scene, "scene.idle_action"), params.cost
    return lambda state, actions, agent: -cost * (np.asarray(actions) != idle)


def _item_id(name: str, scene: Scene, field: str) -> int:
    if name not in scene.item_names:
        raise InvalidDataError(f"{field}: unknown item {name!r}; known: {list(scene.item_names)}")
    return scene.item_names.index(name)


def _status(params: StatusParams, scene: Scene) -> Term:
    item, value, status = _item_id(params.entity, scene, "params.entity"), params.value, params.status
    n_ingredients = sum(scene.entity_kinds[name] == "ingredient" for name in scene.item_names)
    is_plate = item >= n_ingredients
    if status == "held":
        return lambda state, actions, agent: value * (np.asarray(state["holding"]) == item).any(axis=-1)
    if status == "has_food" and is_plate:
        plate = item - n_ingredients
        return lambda state, actions, agent: value * np.any(state["plate_contents"][:, plate], axis=-1)
    if status == "chopped" and not is_plate:
        needed = scene.chops_needed
        return lambda state, actions, agent: value * (np.asarray(state["chops"])[:, item] >= needed)
    if status == "on_plate" and not is_plate:
        return lambda state, actions, agent: value * np.any(state["plate_contents"][:, :, item], axis=-1)
    raise InvalidDataError(f"params.status: {status!r} does not apply to {params.entity!r}")


def _holding(params: HoldingParams, scene: Scene) -> Term:
    value = params.value
    if params.item == ANY_ITEM:
        return lambda state, actions, agent: value * (np.asarray(state["holding"])[:, agent] >= 0)
    item = _item_id(params.item, scene, "params.item")
    return lambda state, actions, agent: value * (np.asarray(state["holding"])[:, agent] == item)


def _constant(value: float) -> Term:
    return lambda state, actions, agent: np.full(len(actions), value, dtype=np.float64)


def _composite(params: CompositeParams, scene: Scene) -> Term:
    parts = [(part.weight, compile_term(part.params, scene)) for part in params.parts]

    def composite(state: State, actions: np.ndarray, agent: int) -> np.ndarray:
        return sum((weight * term(state, actions, agent) for weight, term in parts), np.zeros(len(actions)))

    return composite
