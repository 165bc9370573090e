"""agent.hyperparams (issue 14, defaults that learn): rl-zoo3's tuned settings for known envs,
SB3's defaults otherwise, the user's own mapping as given; the run's config records the values."""

import logging
import sys
from pathlib import Path

import pytest
import yaml

from rlkit.config import load_config, save_config
from rlkit.errors import ConfigError
from rlkit.extras import MissingExtraError
from rlkit.factories import hyperparams as zoo
from rlkit.factories.algorithms import ALGORITHMS
from rlkit.factories.builders import make_agent, make_venv
from rlkit.factories.configs import AgentConfig, DemoConfig, EnvConfig, PrefRLConfig

rl_zoo3 = pytest.importorskip("rl_zoo3")
ZOO_FILES = Path(rl_zoo3.__file__).parent / "hyperparams"


def zoo_yaml(algo: str) -> dict:
    return yaml.safe_load((ZOO_FILES / f"{algo}.yml").read_text())


@pytest.fixture
def without_zoo(monkeypatch):
    """rl_zoo3 as if it were not installed."""
    monkeypatch.setitem(sys.modules, "rl_zoo3", None)
    zoo._zoo_file.cache_clear()
    yield
    zoo._zoo_file.cache_clear()


@pytest.mark.parametrize("algo", ["ppo", "sac"])
def test_pendulum_gets_the_zoos_settings_by_default(algo, caplog):
    with caplog.at_level(logging.INFO):
        config = load_config(PrefRLConfig, None, ["env.id=Pendulum-v1", f"agent.algo={algo}"])
    entry = zoo_yaml(algo)["Pendulum-v1"]
    expected = {k: v for k, v in entry.items() if k not in ("n_timesteps", "n_envs", "policy")}
    assert config.agent.hyperparams == expected and expected  # the zoo's own values, budget left out
    assert f"tuned {algo} settings for Pendulum-v1" in caplog.text
    venv = make_venv(config.env.replace(n_envs=2))
    agent = make_agent(config.agent, venv, seed=0)
    venv.close()
    assert agent.learning_rate == entry["learning_rate"]
    if algo == "ppo":  # the zoo's n_steps (1024), gamma (0.9) and gSDE, not SB3's 2048/0.99/off
        assert (agent.n_steps, agent.gamma, agent.use_sde) == (1024, 0.9, True)


def test_an_env_the_zoo_does_not_know_gets_sb3_defaults_said_in_a_log_line(caplog):
    assert "HalfCheetah-v5" not in zoo_yaml("ppo")
    with caplog.at_level(logging.INFO):
        config = load_config(PrefRLConfig, None, ["env.id=HalfCheetah-v5"])
    assert config.agent.hyperparams == "sb3"
    assert "no ppo entry for HalfCheetah-v5; SB3's defaults are used" in caplog.text


def test_without_rl_zoo3_auto_is_sb3_and_zoo_names_the_extra(without_zoo, caplog):
    with caplog.at_level(logging.INFO):
        config = load_config(PrefRLConfig, None, ["env.id=Pendulum-v1"])
    assert config.agent.hyperparams == "sb3"
    assert "rl_zoo3 is not installed" in caplog.text
    with pytest.raises(MissingExtraError, match=r"rlkit\[zoo\]") as error:
        load_config(PrefRLConfig, None, ["env.id=Pendulum-v1", "agent.hyperparams=zoo"])
    assert error.value.extra == "zoo"


def test_a_mapping_passes_through_and_kwargs_go_over_it():
    given = {"n_steps": 32, "learning_rate": "lin_1e-3", "policy_kwargs": {"net_arch": [8]}}
    config = load_config(PrefRLConfig, None, ["env.id=Pendulum-v1", "env.n_envs=2",
                                              f"agent.hyperparams={given}", "agent.kwargs={batch_size: 16}"])
    assert config.agent.hyperparams == given
    venv = make_venv(config.env)
    agent = make_agent(config.agent, venv, seed=0)
    venv.close()
    assert (agent.n_steps, agent.batch_size, agent.gamma) == (32, 16, 0.99)  # the rest: SB3's
    assert agent.lr_schedule(1.0) == pytest.approx(1e-3) and agent.lr_schedule(0.5) == pytest.approx(5e-4)
    assert agent.policy.net_arch == [8]
    sb3 = load_config(PrefRLConfig, None, ["env.id=Pendulum-v1", "agent.hyperparams=sb3"])
    assert sb3.agent.hyperparams == "sb3"


def test_the_resolved_config_round_trips_and_reruns_without_rl_zoo3(tmp_path, monkeypatch):
    config = load_config(PrefRLConfig, None, ["env.id=Pendulum-v1", "agent.algo=ppo"])
    save_config(config, tmp_path / "config.yaml")
    written = yaml.safe_load((tmp_path / "config.yaml").read_text())
    assert written["agent"]["hyperparams"]["n_steps"] == 1024  # the values, not "auto"
    assert load_config(PrefRLConfig, tmp_path / "config.yaml") == config
    assert DemoConfig(env=EnvConfig(id="Pendulum-v1")).agent.hyperparams["gamma"] == 0.9  # demo too
    monkeypatch.setitem(sys.modules, "rl_zoo3", None)
    zoo._zoo_file.cache_clear()
    try:
        assert load_config(PrefRLConfig, tmp_path / "config.yaml") == config
    finally:
        zoo._zoo_file.cache_clear()


def test_policy_kwargs_are_parsed_as_literals_never_run():
    parsed = zoo.parse_literal("dict(log_std_init=-2, ortho_init=False, activation_fn=nn.ReLU,\n"
                               "     net_arch=dict(pi=[256, 256], vf=[256, 256]))")
    assert parsed == {"log_std_init": -2, "ortho_init": False, "activation_fn": "nn.ReLU",
                      "net_arch": {"pi": [256, 256], "vf": [256, 256]}}
    assert zoo.parse_literal("{'norm_obs': False}") == {"norm_obs": False}
    for hostile in ("__import__('os').system('true')", "dict(a=open('x'))", "nn.Module",
                    "dict(a=1 + 2)", "dict(**x)", "lambda: 1", "dict(a=[i for i in x])"):
        with pytest.raises(ConfigError):
            zoo.parse_literal(hostile)


def test_an_entry_needing_what_rlkit_does_not_build_falls_back(monkeypatch, caplog):
    entry = {"policy": "MlpPolicy", "n_timesteps": 1e6, "env_wrapper": "x.Y", "frame_stack": 4,
             "learning_rate": 1e-3}
    monkeypatch.setattr(zoo, "zoo_entry", lambda env_id, algo: dict(entry))
    with caplog.at_level(logging.WARNING):
        resolved = zoo.resolve_hyperparams("zoo", "Some-v0", "ppo")
    assert resolved.hyperparams == "sb3"
    assert "needs env_wrapper, frame_stack, which rlkit does not build" in caplog.text
    monkeypatch.setattr(zoo, "zoo_entry", lambda env_id, algo: {"policy": "CnnPolicy", "n_steps": 8})
    assert zoo.resolve_hyperparams("auto", "Some-v0", "ppo").hyperparams == "sb3"


@pytest.mark.parametrize("algo", ["ppo", "sac"])
def test_every_usable_zoo_entry_becomes_arguments_sb3_takes(algo):
    """The translation covers the zoo's real files: schedules, class names, noise, train_freq."""
    used = 0
    for env_id, entry in zoo_yaml(algo).items():
        if not isinstance(entry, dict):
            continue
        settings, _, blocking = zoo.translate_zoo_entry(entry, zoo.accepted_kwargs(algo))
        if blocking:
            continue
        kwargs = zoo.sb3_kwargs(settings, ALGORITHMS[algo], action_dim=2)
        used += 1
        for key in ("learning_rate", "clip_range"):
            if isinstance(entry.get(key), str):  # lin_<x>: a schedule from x down to 0
                start = float(entry[key].split("_")[1])
                assert kwargs[key](1.0) == pytest.approx(start) and kwargs[key](0.0) == 0.0, env_id
        activation = kwargs.get("policy_kwargs", {}).get("activation_fn")
        assert activation is None or isinstance(activation, type), env_id
    assert used >= 20


def test_bad_settings_are_refused_naming_them():
    venv = make_venv(EnvConfig(id="Pendulum-v1", n_envs=1))
    with pytest.raises(ConfigError, match=r"\['n_stepz'\] are not arguments of PPO"):
        make_agent(AgentConfig(hyperparams={"n_stepz": 8}), venv, seed=0)
    with pytest.raises(ConfigError, match=r"lin_<start>"):
        make_agent(AgentConfig(hyperparams={"learning_rate": "cos_1e-3"}), venv, seed=0)
    venv.close()
    with pytest.raises(ConfigError, match=r"agent.kwargs sets \['device'\]: use agent.device"):
        AgentConfig(kwargs={"device": "cuda"})
    with pytest.raises(ConfigError, match="hyperparams"):
        AgentConfig(hyperparams="tuned")


def test_a_config_left_unresolved_is_resolved_for_the_env_the_agent_gets(caplog):
    """``make_agent`` on ``auto`` (a section built in code, e.g. APEC's) reads the venv's env id."""
    venv = make_venv(EnvConfig(id="Pendulum-v1", n_envs=1))
    with caplog.at_level(logging.INFO):
        agent = make_agent(AgentConfig(), venv, seed=0)
    venv.close()
    assert (agent.n_steps, agent.gamma) == (1024, 0.9)
    assert "tuned ppo settings for Pendulum-v1" in caplog.text
    assert PrefRLConfig().agent.hyperparams == "auto"  # the class's defaults, which files go over
