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


def test_a_run_records_the_machine_its_floats_depend_on(tmp_path, monkeypatch):
    import torch

    from rlkit.devices import PINNED_CPU_KERNELS, machine

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: AMD EPYC 9654\n"
                       "flags\t\t: fpu avx2 fma avx512f avx512_bf16\n"
                       "\nprocessor\t: 1\nmodel name\t: another\nflags\t\t: amx_bf16\n")  # the first counts
    for name in PINNED_CPU_KERNELS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MKL_CBWR", "AVX2")
    found = machine(str(cpuinfo))
    assert found["cpu"] == "AMD EPYC 9654" and found["isa"] == ["avx2", "avx512f", "avx512_bf16"]
    assert found["cpu_kernels"] == {"ATEN_CPU_CAPABILITY": None, "MKL_CBWR": "AVX2",
                                    "ONEDNN_MAX_CPU_ISA": None}
    assert found["torch"] == torch.__version__ and found["torch_threads"] == torch.get_num_threads()
    unknown = machine(str(tmp_path / "missing"))
    assert unknown["cpu"] is None and unknown["isa"] == []
