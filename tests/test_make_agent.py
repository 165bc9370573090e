"""make_agent leaves the config it was given as it was (SB3 writes into the dicts it receives)."""

from rlkit.factories import builders
from rlkit.factories.builders import make_agent, make_venv
from rlkit.factories.configs import AgentConfig, EnvConfig


def test_sac_does_not_write_into_the_configs_policy_kwargs():
    config = AgentConfig(algo="sac", hyperparams="sb3", device="cpu",
                         kwargs={"policy_kwargs": {"net_arch": [8, 8]}, "buffer_size": 100})
    before = config.model_dump()
    agent = make_agent(config, make_venv(EnvConfig(id="Pendulum-v1", n_envs=1)), seed=0)
    assert agent.policy_kwargs["use_sde"] is False  # SB3 added it to the dict it was handed
    assert config.model_dump() == before


def test_objects_in_the_kwargs_reach_sb3_as_they_are(monkeypatch):
    marker = object()  # e.g. the live reward function a lazily labelled replay buffer reads
    config = AgentConfig(algo="sac", hyperparams="sb3", device="cpu",
                         kwargs={"replay_buffer_kwargs": {"reward_fn": marker},
                                 "policy_kwargs": {"net_arch": [8]}})
    handed = {}

    class Recorder:
        def __init__(self, policy, env, **kwargs):
            handed.update(kwargs)

    monkeypatch.setitem(builders.ALGORITHMS, "sac", Recorder)
    make_agent(config, make_venv(EnvConfig(id="Pendulum-v1", n_envs=1)), seed=0)
    assert handed["replay_buffer_kwargs"]["reward_fn"] is marker
    assert handed["policy_kwargs"] == {"net_arch": [8]}
    assert handed["policy_kwargs"] is not config.kwargs["policy_kwargs"]
