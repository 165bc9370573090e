"""M3HF's config holds the Overcooked game's own config as ``env``: one declaration of each setting."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from envs.overcooked.config import GameConfig, OvercookedConfig
from envs.overcooked.vector import OvercookedVecEnv
from experiments.m3hf import M3HFExperimentConfig
from rlkit.config import load_config
from rlkit.errors import ConfigError
from rlkit.m3hf.run_config import M3HFConfig

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ("docs/results/m3hf_config.yaml", "docs/results/m3hf_pilot_config.yaml",
             "experiments/configs/m3hf.yaml", "experiments/configs/m3hf_pilot.yaml",
             "experiments/configs/m3hf_confirm.yaml")


def test_the_env_section_is_the_game_config_of_the_env_itself():
    assert M3HFConfig.model_fields["env"].annotation is GameConfig
    assert type(M3HFConfig().env) is GameConfig
    assert set(GameConfig.model_fields) < set(OvercookedConfig.model_fields)
    # the paper's game: map A, lettuce-tomato salad, 3 agents, radius 2, 200 steps, macro actions
    assert M3HFConfig().env == GameConfig(layout="A", recipe="lettuce-tomato", n_agents=3, obs_radius=2,
                                          max_steps=200, macro_actions=True)


def test_env_overrides_reach_the_games_the_run_trains_on():
    config = load_config(M3HFConfig, None, ["env.layout=B", "env.recipe=tomato-lettuce salad",
                                            "env.n_agents=2", "env.max_steps=20", "env.rewards.chop=5"])
    assert config.env.recipe == "lettuce-tomato" and config.env.rewards.chop == 5.0
    venv = OvercookedVecEnv(2, **config.env.model_dump())
    assert (venv.config.layout, venv.config.n_agents, venv.config.max_steps) == ("B", 2, 20)
    assert venv.config.rewards.chop == 5.0 and venv.config.recipe == "lettuce-tomato"


@pytest.mark.parametrize("path", COMMITTED)
def test_committed_configs_load_with_the_env_they_state(path):
    written = yaml.safe_load((ROOT / path).read_text())["run"]["env"]
    loaded = load_config(M3HFExperimentConfig, ROOT / path).run.env.model_dump(mode="json")
    assert {key: loaded[key] for key in written} == written


@pytest.mark.parametrize("override, message", [
    ("env.n_agents=4", "env.n_agents is out of range: 4 (must be <= 3)"),
    ("env.n_agents=2.5", "env: n_agents must be an int, got 2.5"),
    ("env.macro_actions=1", "env: macro_actions must be a bool, got 1"),
    ("env.layout=Z", "env: unknown layout 'Z'"),
    ("env.obs_mode=image", "env.obs_mode is not a field of M3HFConfig.env"),
])
def test_a_bad_env_setting_is_a_config_error_at_its_path(override, message):
    with pytest.raises(ConfigError, match=re.escape(f"M3HFConfig.{message}")):
        load_config(M3HFConfig, None, [override])
