"""Where networks run: the ``device`` field of every config that builds one.

A config holds the name (``auto``, ``cpu``, ``cuda`` or ``cuda:N``; ``Device`` checks it without
importing torch); ``resolve_device`` turns it into a ``torch.device`` when the network is built.
``auto`` is the first CUDA device when torch sees one, else the CPU.
"""

from __future__ import annotations

import os
import re
import sys
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AfterValidator

from rlkit.errors import ConfigError

if TYPE_CHECKING:
    import torch

_NAME = re.compile(r"^(auto|cpu|cuda(:\d+)?)$")
DEVICE_CHOICES = "auto, cpu, cuda or cuda:N"


def check_device_name(name: str) -> str:
    """``name`` if it is a device rlkit knows how to place networks on, else a ``ConfigError``.

    Args:
        name: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``.

    Returns:
        ``name``, unchanged.

    Raises:
        ConfigError: for any other name.
    """
    if not _NAME.match(name):
        raise ConfigError(f"device {name!r} is not one of {DEVICE_CHOICES}")
    return name


#: A config field's type: a device name, checked when the config is loaded.
Device = Annotated[str, AfterValidator(check_device_name)]


def resolve_device(name: str | torch.device) -> torch.device:
    """The ``torch.device`` a config's ``name`` means; ``cuda`` asked for on a machine without CUDA
    (or an index past its GPUs) is a ``ConfigError`` naming what torch sees.

    Args:
        name: a device name (``auto`` picks CUDA when torch sees it, else the CPU), or a
            ``torch.device``, returned as it is.

    Returns:
        The device.

    Raises:
        ConfigError: on an unknown name, or CUDA that torch does not see.
    """
    import torch

    if isinstance(name, torch.device):
        return name
    check_device_name(name)
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise ConfigError(f"device {name!r}: torch sees no CUDA device here (a CPU build of "
                              "torch, or no GPU); use device=auto or device=cpu")
        if device.index is not None and device.index >= count:
            raise ConfigError(f"device {name!r}: torch sees {count} CUDA device(s), "
                              f"cuda:0 to cuda:{count - 1}")
    return device


def native_bfloat16(device: torch.device, cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Does ``device`` multiply bfloat16 matrices in hardware? CUDA: as torch reports it; a CPU:
    when it has AMX or AVX512-BF16 (read from ``/proc/cpuinfo``; False where that file is not).
    Elsewhere autocast's bfloat16 is emulated: a 2x512 MLP's forward and backward on 50,000 rows
    took 27.7 s in bfloat16 against 1.8 s in float32 on one core of an AVX2 AMD EPYC, where a CPU
    with AMX ran APEC's reward steps 2.7x faster in bfloat16 (benchmarks/reward_precision.py).

    Args:
        device: where the network runs.
        cpuinfo: the file a CPU's flags are read from.

    Returns:
        True when bfloat16 products are native there.
    """
    import torch

    if device.type == "cuda":
        return bool(torch.cuda.is_bf16_supported())
    if device.type != "cpu":
        return False
    flags = _cpu_info(cpuinfo).get("flags", "").split()
    return "amx_bf16" in flags or "avx512_bf16" in flags


def _cpu_info(cpuinfo: str) -> dict[str, str]:
    """The first processor's fields of ``cpuinfo`` (name -> value; empty where it is unreadable)."""
    fields: dict[str, str] = {}
    try:
        with open(cpuinfo, encoding="utf-8") as lines:
            for line in lines:
                if not line.strip():
                    break
                name, _, value = line.partition(":")
                fields.setdefault(name.strip(), value.strip())
    except OSError:
        return {}
    return fields


# The CPU code paths a reproducible run pins: ATen's vector kernels, MKL's BLAS (its
# "conditional numerical reproducibility" branch) and oneDNN, each to AVX2 (x86 CPUs since 2013).
PINNED_CPU_KERNELS = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}


def pin_cpu_kernels() -> dict[str, str]:
    """Pin torch's CPU kernels to one instruction set, so that the same seed gives the same floats
    on machines whose CPUs differ (AVX-512 or AMX kernels round differently from AVX2 ones, and
    MKL picks its code path per CPU vendor and model). Only in a process that has not imported
    torch yet (a command's own process): there the settings take effect, and the process's
    children inherit them. In one that has (a test calling ``rlkit.cli.main``), nothing is set:
    the kernels are chosen already, and children would run other kernels than their parent. A
    variable already set in the environment is left as it is.

    Returns:
        The settings now in the environment (name -> value; empty when nothing was pinned).
    """
    if "torch" in sys.modules:
        return {}
    for name, value in PINNED_CPU_KERNELS.items():
        os.environ.setdefault(name, value)
    return {name: os.environ[name] for name in PINNED_CPU_KERNELS}


def cpu_kernel_settings() -> dict[str, str | None]:
    """Each of ``PINNED_CPU_KERNELS``' variables as the environment sets it now (None where unset):
    what a run records of its kernels.

    Returns:
        name -> value or None.
    """
    return {name: os.environ.get(name) for name in PINNED_CPU_KERNELS}


ISA_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")
"""The instruction sets whose kernels round a run's floats differently (``machine`` lists them)."""


def machine(cpuinfo: str = "/proc/cpuinfo") -> dict[str, Any]:
    """What a run's floats depend on besides its seeds and settings, for its results to record:
    the same unit gave the same floats on one machine and other ones on a CPU with other
    instruction sets, even with its kernels pinned (``docs/results/apec.md``).

    Args:
        cpuinfo: the file the CPU's model and flags are read from.

    Returns:
        ``cpu`` (the model name, None where unknown), ``isa`` (those of ``ISA_FLAGS`` it has),
        ``torch`` (its version), ``torch_threads`` and ``cpu_kernels`` (each of
        ``PINNED_CPU_KERNELS``' variables as the environment sets it, None where unset).
    """
    import torch

    fields = _cpu_info(cpuinfo)
    flags = fields.get("flags", "").split()
    return {"cpu": fields.get("model name"), "isa": [flag for flag in ISA_FLAGS if flag in flags],
            "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
            "cpu_kernels": cpu_kernel_settings()}
