"""Agents take a device (issue 17): ``agent.device`` reaches SB3, loading takes one too. On CPU."""

import pytest
import torch

from rlkit.errors import ConfigError
from rlkit.factories import builders
from rlkit.factories.builders import load_policy, make_agent, make_venv
from rlkit.factories.configs import AgentConfig, EnvConfig, PolicySource
from rlkit.persistence.agents import save_agent


class Spy:
    """Stands in for ``resolve_device``: records the names asked for, places on the CPU."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, name: str) -> torch.device:
        self.asked.append(name)
        return torch.device("cpu")


@pytest.fixture
def venv():
    env = make_venv(EnvConfig(id="Pendulum-v1", n_envs=1))
    yield env
    env.close()


def test_the_agent_device_is_auto_by_default_and_reaches_sb3(venv, monkeypatch):
    assert AgentConfig().device == "auto" and PolicySource().device == "auto"
    agent = make_agent(AgentConfig(hyperparams="sb3", device="cpu"), venv, seed=0)
    assert agent.device == torch.device("cpu")
    assert next(agent.policy.parameters()).device == torch.device("cpu")
    spy = Spy()
    monkeypatch.setattr(builders, "resolve_device", spy)
    make_agent(AgentConfig(algo="sac", hyperparams="sb3", device="cuda:1"), venv, seed=0)
    assert spy.asked == ["cuda:1"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_cuda_on_a_machine_without_it_is_refused_up_front(venv):
    with pytest.raises(ConfigError, match=r"device 'cuda'.*no CUDA device"):
        make_agent(AgentConfig(hyperparams="sb3", device="cuda"), venv, seed=0)


def test_a_bad_device_name_is_refused_when_the_config_is_loaded():
    with pytest.raises(ConfigError, match=r"device 'gpu' is not one of auto, cpu, cuda or cuda:N"):
        AgentConfig(device="gpu")
    with pytest.raises(ConfigError, match="device"):
        PolicySource(device="cuda:x")


def test_loading_a_policy_takes_a_device(venv, tmp_path, monkeypatch):
    path = save_agent(make_agent(AgentConfig(hyperparams="sb3", device="cpu"), venv, seed=0),
                      tmp_path / "agent.zip")
    assert load_policy("ppo", path, device="cpu").device == torch.device("cpu")
    spy = Spy()
    monkeypatch.setattr(builders, "resolve_device", spy)
    loaded = load_policy("ppo", path, device="cuda:0")
    assert spy.asked == ["cuda:0"] and loaded.device == torch.device("cpu")
