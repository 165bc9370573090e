"""A MARL checkpoint loads onto the device asked for, not the one it was saved from."""

from __future__ import annotations

import pytest
import torch

import envs.overcooked as oc
from rlkit.devices import resolve_device
from rlkit.marl import MarlConfig, MultiAgentPPO, OvercookedRows, load_checkpoint, save_checkpoint

TINY = {"n_steps": 16, "batch_size": 32, "n_epochs": 1, "seed": 3}


def overcooked_rows() -> OvercookedRows:
    return OvercookedRows(oc.OvercookedVecEnv(2, keep_features=True, recipe="tomato", max_steps=20))


def _parameters(trainer: MultiAgentPPO) -> list[torch.Tensor]:
    return [tensor.detach().cpu() for policy in trainer.policies for tensor in policy.state_dict().values()]


@pytest.mark.parametrize("device", ["auto", *(["cuda"] if torch.cuda.is_available() else [])])
def test_a_checkpoint_loads_onto_the_device_given_else_the_saved_one(tmp_path, device):
    trainer = MultiAgentPPO(overcooked_rows(), MarlConfig(**TINY, device="cpu"))
    trainer.learn(64)
    path = save_checkpoint(trainer, tmp_path / "ckpt")

    moved = load_checkpoint(path, overcooked_rows(), device=device)
    assert moved.config == trainer.config.replace(device=device)
    assert moved.device == resolve_device(device)
    assert all(tensor.device.type == moved.device.type
               for policy in moved.policies for tensor in policy.state_dict().values())
    assert all(state["exp_avg"].device.type == moved.device.type
               for model in moved.models for state in model.policy.optimizer.state.values())
    assert moved.num_timesteps == 64
    for saved, loaded in zip(_parameters(trainer), _parameters(moved), strict=True):
        assert torch.equal(saved, loaded)
    moved.learn(64)  # trains on there

    kept = load_checkpoint(path, overcooked_rows())
    assert kept.config == trainer.config and kept.device == torch.device("cpu")
