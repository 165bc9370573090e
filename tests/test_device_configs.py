"""The ``device`` field of the configs that build networks (issue 17, GPUs), on this CPU machine:
each accepts the names of ``rlkit.devices`` and refuses others, ``cpu`` puts the networks on the
CPU, ``cuda`` without CUDA is the ``ConfigError`` of ``resolve_device`` when the networks are built,
and a config saved before the field existed still resumes."""

import json

import numpy as np
import pytest
import torch
from stable_baselines3 import PPO

from experiments import ordinal_feedback
from rlkit.ail import AILConfig, AILTrainer, CheckpointStore, demos_from_policy
from rlkit.ail.transitions import Transitions, take_rows
from rlkit.apec.config import ApecAILConfig, ApecConfig, DemonstratorConfig
from rlkit.apec.demonstrator import train_demonstrator
from rlkit.apec.drex import DrexConfig, train_bc
from rlkit.config import load_config
from rlkit.errors import ConfigError, InvalidDataError
from rlkit.m3hf.loop import resumable
from rlkit.m3hf.run_config import M3HFConfig
from rlkit.marl import MarlConfig, MultiAgentPPO
from rlkit.runners.m3hf import run_m3hf
from rlkit.runners.rundir import same_config
from tests.small_tasks import cue_rows, expert, venv
from tests.tiny_envs import POINT_ID
from tests.tiny_runs import tiny_config

no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")

# MarlConfig's fields before it had a device: what every saved M3HF run state holds
MARL_FIELDS_BEFORE = {"sharing", "n_steps", "batch_size", "n_epochs", "learning_rate", "gamma", "gae_lambda",
                      "clip_range", "ent_coef", "vf_coef", "max_grad_norm", "net_arch", "seed"}


def devices_of(module: torch.nn.Module) -> set[torch.device]:
    return {p.device for p in module.parameters()}


@pytest.mark.parametrize("name", ["auto", "cpu", "cuda", "cuda:1"])
def test_marl_config_takes_a_device(name):
    assert MarlConfig(device=name).device == name
    assert M3HFConfig.model_validate({"marl": {"device": name}}).marl.device == name


def test_marl_config_refuses_a_bad_device():
    with pytest.raises(ConfigError, match="MarlConfig.device: device 'gpu' is not one of"):
        MarlConfig(device="gpu")


def test_marl_on_cpu_puts_every_policy_on_the_cpu():
    trainer = MultiAgentPPO(cue_rows(2), MarlConfig(n_steps=8, batch_size=16, device="cpu"))
    assert trainer.device == torch.device("cpu")
    assert set().union(*(devices_of(p) for p in trainer.policies)) == {torch.device("cpu")}


@no_cuda
def test_marl_on_cuda_without_cuda_is_a_config_error_when_built():
    config = MarlConfig(device="cuda")  # a config may name CUDA; building on it is what fails
    with pytest.raises(ConfigError, match="device 'cuda': torch sees no CUDA device"):
        MultiAgentPPO(cue_rows(2), config)


def test_the_default_marl_device_is_left_out_of_a_saved_config():
    assert set(MarlConfig().model_dump(mode="json")) == MARL_FIELDS_BEFORE
    assert MarlConfig(device="cuda").model_dump(mode="json")["device"] == "cuda"


def test_an_m3hf_run_saved_before_the_device_field_resumes(tmp_path):
    config = tiny_config(video="none", phases=0)
    run_m3hf(config, tmp_path)
    saved = json.loads((tmp_path / "state.json").read_text())["config"]
    assert set(saved["marl"]) == MARL_FIELDS_BEFORE  # as a run state written before the field
    more = config.replace(phases=1)
    assert resumable(tmp_path, more)
    assert resumable(tmp_path, more.replace(marl=more.marl.replace(device="cpu")))  # said, same
    state = run_m3hf(more, tmp_path)
    assert state["completed"] == 1


@pytest.fixture(scope="module")
def demos():
    return demos_from_policy(venv(), expert, 2, np.random.default_rng(0))


def test_ail_config_takes_a_device_and_refuses_a_bad_one():
    assert AILConfig(rounds=1, steps_per_round=8, device="cuda:0").device == "cuda:0"
    with pytest.raises(InvalidDataError, match="AILConfig.device: device 'cuda0' is not one of"):
        AILConfig(rounds=1, steps_per_round=8, device="cuda0")


@pytest.mark.parametrize("generator", ["ppo", "sac"])
def test_ail_on_cpu_puts_discriminator_generator_and_demos_on_the_cpu(demos, generator):
    trainer = AILTrainer(AILConfig(rounds=1, steps_per_round=8, device="cpu"), venv(), demos, generator)
    cpu = {torch.device("cpu")}
    assert devices_of(trainer.discriminator) == cpu
    assert devices_of(trainer.generator.policy) == cpu and trainer.generator.device == torch.device("cpu")
    assert {t.device for t in trainer.expert_tensors.values()} == cpu


@no_cuda
def test_ail_on_cuda_without_cuda_is_a_config_error_when_built(demos, tmp_path):
    with pytest.raises(ConfigError, match="device 'cuda': torch sees no CUDA device"):
        AILTrainer(AILConfig(rounds=1, steps_per_round=8, device="cuda"), venv(), demos, "ppo")
    store = CheckpointStore(tmp_path)
    trainer = AILTrainer(AILConfig(rounds=1, steps_per_round=8), venv(), demos, "ppo", checkpoints=store)
    trainer.train()
    with pytest.raises(ConfigError, match="device 'cuda:1': torch sees no CUDA device"):
        store.load(0, "cuda:1")
    assert devices_of(store.load(0, "auto").discriminator) == {torch.device("cpu")}


def test_a_batch_gathered_on_the_device_is_the_batch_drawn_on_the_host(demos):
    transitions = Transitions.from_trajectories(demos)
    rows = transitions.draw(np.random.default_rng(3), 50)
    on_device = take_rows(transitions.to_torch("cpu"), rows)
    on_host = transitions.take(rows).to_torch("cpu")
    assert on_device.keys() == on_host.keys()
    for name, tensor in on_host.items():
        assert torch.equal(on_device[name], tensor) and on_device[name].dtype == tensor.dtype


APEC_SECTIONS = {"demos": DemonstratorConfig, "ail": ApecAILConfig, "drex": DrexConfig}


@pytest.mark.parametrize("section", APEC_SECTIONS)
def test_apec_sections_take_a_device_and_refuse_a_bad_one(section):
    config = load_config(ApecConfig, None, [f"{section}.device=cuda:2"])
    assert getattr(config, section).device == "cuda:2"
    with pytest.raises(InvalidDataError, match=f"{APEC_SECTIONS[section].__name__}.device: device 'GPU'"):
        APEC_SECTIONS[section](device="GPU")


@pytest.mark.parametrize(("section", "field"), [("demos", "kwargs"), ("ail", "generator_kwargs")])
@pytest.mark.parametrize("key", ["device", "seed"])
def test_apec_sb3_arguments_may_not_set_the_device_or_seed(section, field, key):
    with pytest.raises(ConfigError, match=rf"{section}: {field} sets \['{key}'\]: use {section}.device"):
        load_config(ApecConfig, None, [f"{section}.{field}={{{key}: cpu}}"])
    assert load_config(ApecConfig, None, [f"{section}.{field}={{batch_size: 64}}"])


def test_apec_defaults_auto_for_its_large_networks_and_cpu_for_behaviour_cloning():
    config = ApecConfig()
    assert (config.demos.device, config.ail.device, config.drex.device) == ("auto", "auto", "cpu")


def test_an_apec_run_resumes_on_any_device(tmp_path):
    dumped = ApecConfig().model_dump(mode="json")
    (tmp_path / "config.yaml").write_text(json.dumps(dumped))  # JSON is YAML
    said = load_config(ApecConfig, None, ["ail.device=auto", "drex.device=cpu"])
    assert same_config(said, "apec")(tmp_path)
    elsewhere = load_config(ApecConfig, None, ["ail.device=cpu", "demos.device=cuda"])
    assert same_config(elsewhere, "apec")(tmp_path)
    with pytest.raises(ConfigError, match=r"other settings for \['ail.rounds'\]"):
        same_config(load_config(ApecConfig, None, ["ail.device=cpu", "ail.rounds=3"]), "apec")(tmp_path)


class RecordingPPO(PPO):
    built: list[PPO] = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        RecordingPPO.built.append(self)


def test_the_demonstrator_trains_on_its_device(tmp_path):
    config = DemonstratorConfig(algo="ppo", total_timesteps=16, checkpoint_every=16, device="cpu",
                                kwargs={"n_steps": 16, "batch_size": 16})
    RecordingPPO.built.clear()
    train_demonstrator(lambda seed: venv(seed), config, tmp_path, {"ppo": RecordingPPO})
    (model,) = RecordingPPO.built
    assert model.device == torch.device("cpu") and devices_of(model.policy) == {torch.device("cpu")}
    with pytest.raises(InvalidDataError, match="DemonstratorConfig.device: device 'gpu'"):
        DemonstratorConfig(device="gpu")


@no_cuda
def test_the_demonstrator_on_cuda_without_cuda_is_a_config_error_not_a_quiet_cpu_run(tmp_path):
    config = DemonstratorConfig(algo="ppo", total_timesteps=16, device="cuda")
    with pytest.raises(ConfigError, match="device 'cuda': torch sees no CUDA device"):
        train_demonstrator(lambda seed: venv(seed), config, tmp_path, {"ppo": PPO})


def test_behaviour_cloning_trains_on_its_device(demos):
    config = DrexConfig(bc_epochs=2, device="cpu")
    policy = train_bc(demos, venv().action_space, config)
    assert devices_of(policy) == {torch.device("cpu")}
    assert policy.act(demos[0].obs[:3]).shape == (3, 1)
    with pytest.raises(InvalidDataError, match="DrexConfig.device: device 'cuda:'"):
        DrexConfig(device="cuda:")


@no_cuda
def test_behaviour_cloning_on_cuda_without_cuda_is_a_config_error(demos):
    with pytest.raises(ConfigError, match="device 'cuda': torch sees no CUDA device"):
        train_bc(demos, venv().action_space, DrexConfig(device="cuda"))


def ordinal_config(device: str) -> ordinal_feedback.OrdinalExperimentConfig:
    return ordinal_feedback.OrdinalExperimentConfig(
        tasks=[ordinal_feedback.TaskConfig(id=POINT_ID, checkpoint_steps=[16])], n_envs=1,
        ppo_kwargs={"n_steps": 16, "batch_size": 16}, ppo_device=device)


def test_the_ordinal_experiment_trains_its_ppo_checkpoints_on_ppo_device(tmp_path, monkeypatch):
    monkeypatch.setattr(ordinal_feedback, "PPO", RecordingPPO)
    RecordingPPO.built.clear()
    config = ordinal_config("cpu")
    ordinal_feedback.train_checkpoints(config.tasks[0], config, tmp_path)
    (model,) = RecordingPPO.built
    assert model.device == torch.device("cpu") and devices_of(model.policy) == {torch.device("cpu")}
    with pytest.raises(ConfigError, match="ppo_device: device 'cuda:a'"):
        ordinal_feedback.OrdinalExperimentConfig(ppo_device="cuda:a")


@no_cuda
def test_the_ordinal_experiment_on_cuda_without_cuda_is_a_config_error(tmp_path):
    config = ordinal_config("cuda")
    with pytest.raises(ConfigError, match="device 'cuda': torch sees no CUDA device"):
        ordinal_feedback.train_checkpoints(config.tasks[0], config, tmp_path)
    assert not any(tmp_path.iterdir())  # refused before anything was made
