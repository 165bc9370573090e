"""PettingZoo's own checks on every layout and action mode, registration, and bad input."""

from __future__ import annotations

import subprocess
import sys
import warnings

import gymnasium
import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, render_test, seed_test
from pettingzoo.test.state_test import state_test

import envs.overcooked as oc
from rlkit.errors import WrongTypeError

CASES = [(layout, macro) for layout in oc.LAYOUTS for macro in (True, False)]


@pytest.mark.parametrize(("layout", "macro"), CASES)
def test_pettingzoo_suite(layout: str, macro: bool) -> None:
    kwargs = {"layout": layout, "macro_actions": macro, "recipe": "lettuce-onion-tomato", "max_steps": 120}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # PettingZoo reports API problems as warnings
        parallel_api_test(oc.parallel_env(**kwargs), num_cycles=150)
        api_test(oc.env(**kwargs), num_cycles=150)
    parallel_seed_test(lambda: oc.parallel_env(**kwargs), num_cycles=150)
    seed_test(lambda: oc.env(**kwargs), num_cycles=150)
    render_test(lambda render_mode=None: oc.env(render_mode=render_mode, **kwargs))
    state_test(oc.env(**kwargs), oc.parallel_env(**kwargs))


@pytest.mark.parametrize("n_agents", [2, 3])
def test_image_observations_pass_the_suite_and_are_crops_of_the_frame(n_agents: int) -> None:
    kwargs = {"obs_mode": "image", "n_agents": n_agents, "cell_px": 16, "max_steps": 40}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parallel_api_test(oc.parallel_env(**kwargs), num_cycles=40)
    env = oc.parallel_env(**kwargs)
    obs, _ = env.reset()
    assert env.observation_space("agent_0").shape == (5 * 16, 5 * 16, 3)
    frame = env.rgb_frame()
    # agent_0 at (1,2): its 5x5 window starts one cell above the map; columns 0..4 are all inside
    np.testing.assert_array_equal(obs["agent_0"][16:, :], frame[: 4 * 16, : 5 * 16])
    assert not obs["agent_0"][:16].any()  # above the map edge: black, as the reference pads
    full = oc.parallel_env(obs_mode="image", obs_radius=0, cell_px=16, n_agents=n_agents)
    np.testing.assert_array_equal(full.reset()[0]["agent_1"], full.rgb_frame())


def test_two_and_three_agent_spaces_and_action_sets() -> None:
    for layout in oc.LAYOUTS:
        for n in (2, 3):
            env = oc.parallel_env(layout=layout, n_agents=n)
            assert env.possible_agents == [f"agent_{i}" for i in range(n)]
            assert env.observation_space("agent_0").shape == ({2: 30, 3: 32}[n],)
            assert env.state_space.shape == env.observation_space("agent_0").shape
            macros = 14 if layout.rstrip("9") == "A" else 15
            assert env.action_space("agent_0").n == macros
            assert (
                oc.parallel_env(layout=layout, n_agents=n, macro_actions=False).action_space("agent_0").n == 5
            )
    assert oc.parallel_env().render_mode is None  # SuperSuit reads it


def test_state_is_the_unmasked_observation() -> None:
    env = oc.parallel_env(obs_radius=2)
    env.reset()
    full = oc.parallel_env(obs_radius=0)
    np.testing.assert_array_equal(env.state(), full.reset()[0]["agent_0"])


def test_env_package_does_not_import_torch() -> None:
    code = "import sys, envs, envs.overcooked.vector; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_registered_ids_build_the_named_game() -> None:
    assert len(oc.ENV_IDS) == len(oc.LAYOUTS) * len(oc.RECIPES)
    assert "rlkit/Overcooked-A-lettuce-tomato-v0" in oc.ENV_IDS
    spec = gymnasium.spec("rlkit/Overcooked-B9-onion-tomato-v0")
    assert spec.kwargs == {"layout": "B9", "recipe": "onion-tomato"}
    env = oc.make("rlkit/Overcooked-C-lettuce-onion-v0", n_agents=2)
    assert (env.layout.name, env.recipe.name, env.possible_agents) == (
        "C",
        "lettuce-onion",
        ["agent_0", "agent_1"],
    )
    assert oc.make_vec("rlkit/Overcooked-A-tomato-v0", 4).num_envs == 12
    aec = oc.make_aec("rlkit/Overcooked-A-tomato-v0")
    aec.reset()
    assert aec.agent_selection == "agent_0"
    # The ids are PettingZoo games: gymnasium.make refuses with an rlkit error naming the call.
    with pytest.raises(WrongTypeError, match=r"multi-agent PettingZoo environment, not a gymnasium"
                       r"\.Env.*envs\.overcooked\.make\('rlkit/Overcooked-A-lettuce-tomato-v0'\)"):
        gymnasium.make("rlkit/Overcooked-A-lettuce-tomato-v0")
    with pytest.raises(WrongTypeError, match=r"make\('rlkit/Overcooked-A-tomato-v0', n_agents=2\)"):
        gymnasium.make("rlkit/Overcooked-A-tomato-v0", n_agents=2)
    with pytest.raises(ValueError, match="unknown Overcooked id"):
        oc.make("rlkit/Overcooked-Z-tomato-v0")


def test_recipe_names_are_forgiving_but_unknown_ones_list_the_valid() -> None:
    assert oc.parallel_env(recipe="tomato-lettuce salad").recipe.name == "lettuce-tomato"
    assert oc.parallel_env(recipe=6).recipe.name == "lettuce-onion-tomato"
    with pytest.raises(ValueError, match="valid recipes: tomato, lettuce, onion, lettuce-tomato"):
        oc.parallel_env(recipe="pizza")
    with pytest.raises(ValueError, match="valid layouts: A, B, C, A9, B9, C9"):
        oc.parallel_env(layout="D")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_agents": 4}, ValueError, r"n_agents is out of range: 4 \(must be <= 3\)"),
        ({"obs_radius": -1}, ValueError, "obs_radius"),
        ({"max_steps": 0}, ValueError, "max_steps"),
        ({"obs_mode": "pixels"}, ValueError, "obs_mode"),
        ({"macro_timeout": 2.5}, TypeError, "macro_timeout"),
        ({"render_mode": "window"}, ValueError, "render_mode"),
        ({"rewards": {"bonus": 1.0}}, ValueError, "unknown reward terms"),
    ],
)
def test_bad_settings_fail_with_the_field_named(kwargs: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        oc.parallel_env(**kwargs)


def test_bad_actions_fail_clearly_and_change_nothing() -> None:
    env = oc.parallel_env(macro_actions=False)
    with pytest.raises(RuntimeError, match="call reset"):
        env.step({a: 4 for a in env.possible_agents})
    env.reset()
    before = env.describe()
    good = {a: 4 for a in env.possible_agents}
    with pytest.raises(ValueError, match="action 5 for agent_1 out of range 0..4"):
        env.step({**good, "agent_1": 5})
    with pytest.raises(ValueError, match="out of range"):
        env.step({**good, "agent_0": -1})
    with pytest.raises(TypeError, match="must be an integer"):
        env.step({**good, "agent_2": 1.0})
    with pytest.raises(ValueError, match=r"agents not in the game: \['agent_3'\]"):
        env.step({**good, "agent_3": 0})
    with pytest.raises(ValueError, match=r"no action for \['agent_2'\]"):
        env.step({"agent_0": 4, "agent_1": 4})
    with pytest.raises(TypeError, match="dict"):
        env.step([4, 4, 4])
    assert env.describe() == before  # nothing moved, no step counted
    env.step({a: np.int64(0) for a in env.possible_agents})  # numpy integers are fine
    short = oc.parallel_env(max_steps=2, macro_actions=False)
    short.reset()
    short.step(good)
    *_, truncated, _ = short.step(good)
    assert all(truncated.values()) and short.agents == []
    with pytest.raises(RuntimeError, match="episode is over"):
        short.step(good)


def test_macro_agents_may_skip_actions_only_while_their_macro_runs() -> None:
    env = oc.parallel_env()
    env.reset()
    get_plate = env.action_names.index("get plate 1")
    env.step({"agent_0": 0, "agent_1": 0, "agent_2": get_plate})  # agent_2 is now busy
    env.step({"agent_0": 0, "agent_1": 0})
    with pytest.raises(ValueError, match="unless its macro is still running"):
        env.step({"agent_0": 0, "agent_2": 0})


def test_readme_quick_start_runs() -> None:
    import re
    from pathlib import Path

    text = (Path(oc.__file__).parent / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    namespace: dict = {}
    exec(compile(code, "envs/overcooked/README.md", "exec"), namespace)  # noqa: S102 - our own docs
    assert namespace["env"].possible_agents == ["agent_0", "agent_1"]
    assert namespace["aec"].unwrapped.layout.name == "B"
