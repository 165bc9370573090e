"""A spec's numbers are read strictly, wherever the spec comes from (the LLM, the web page, a saved pool):
``true``, ``"2"`` and ``1.0`` are not agent indices, nor a bool or a string a parameter's number."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from rlkit.m3hf.specs import validate_specs


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"template": "success", "agents": [True]}, "agents.0"),
        ({"template": "success", "agents": ["2"]}, "agents.0"),
        ({"template": "success", "agents": [1.0]}, "agents.0"),
        ({"template": "success", "agents": [0, False]}, "agents.1"),
        ({"template": "proximity", "agents": [0], "params": {"b": "onion", "radius": True}}, "params.radius"),
        ({"template": "proximity", "agents": [0], "params": {"b": "onion", "radius": 2.0}}, "params.radius"),
        ({"template": "distance", "agents": [0], "params": {"b": "tomato", "scale": "2"}}, "params.scale"),
        ({"template": "success", "agents": "all", "params": {"bonus": True}}, "params.bonus"),
        (
            {"template": "composite", "agents": "all", "params": {"parts": [
                {"template": "success", "weight": True}, {"template": "time_penalty"}]}},
            "params.parts.0.weight",
        ),
    ],
)
def test_a_number_that_is_a_bool_a_string_or_a_float_index_is_refused_by_field(
    spec: dict[str, object], field: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        validate_specs([spec])
    located = [".".join(str(part) for part in issue["loc"] if "[" not in str(part))  # union tags left out
               for issue in refused.value.errors()]
    assert field in located, located


def test_integers_and_real_numbers_are_still_read() -> None:
    spec, composite = validate_specs([
        {"template": "proximity", "agents": [2, 0, 2], "params": {"b": "tomato", "radius": 3, "bonus": -1}},
        {"template": "composite", "agents": "all", "params": {"parts": [
            {"template": "success", "weight": 2}, {"template": "time_penalty", "params": {"rate": 0.5}}]}},
    ])
    assert spec.agents == (0, 2) and spec.params.radius == 3 and spec.params.bonus == -1.0
    assert [part.weight for part in composite.params.parts] == [2.0, 1.0]
