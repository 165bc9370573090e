"""Device names in configs, and what they resolve to on this (CPU-only) machine."""

import pytest
import torch

from rlkit.config import StrictModel
from rlkit.devices import Device, check_device_name, resolve_device
from rlkit.errors import ConfigError


class _WithDevice(StrictModel):
    device: Device = "auto"


@pytest.mark.parametrize("name", ["auto", "cpu", "cuda", "cuda:0", "cuda:12"])
def test_known_names_pass(name):
    assert check_device_name(name) == name
    assert _WithDevice(device=name).device == name


@pytest.mark.parametrize("name", ["gpu", "CUDA", "cuda:", "cuda:x", "tpu", ""])
def test_unknown_names_are_refused_by_the_config(name):
    with pytest.raises(ConfigError, match="auto, cpu, cuda or cuda:N"):
        _WithDevice(device=name)


def test_auto_is_cuda_only_where_torch_sees_it():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == expected
    assert resolve_device("cpu") == torch.device("cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_without_a_gpu_is_a_clear_error():
    with pytest.raises(ConfigError, match="no CUDA device"):
        resolve_device("cuda")
