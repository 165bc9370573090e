"""What a command would refuse later (after creating its run directory, or after minutes of
training), refused up front by ``rlkit`` and ``--print-config``: each check names the setting."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel


def check_before_run(command: str, config: BaseModel, *, build_env: bool = True) -> None:
    """Refuse, by name, what the run would refuse later (after creating its run directory, or
    after minutes of training): an unknown env id, env kwargs it does not take, a scripted
    feedback source without a script, an input file that is missing or of the wrong kind, a
    device this machine does not have.

    Args:
        command: the ``rlkit`` subcommand the config is for.
        config: its resolved config.
        build_env: make the gymnasium env to check its kwargs (what it really takes); False
            (``--print-config``) checks them against its entry point's signature instead, so
            nothing is built (no MuJoCo model loaded, no ``MUJOCO_LOG.TXT``).
    """
    from rlkit.errors import ConfigError

    _check_devices(config)
    env = getattr(config, "env", None)
    if command == "m3hf":
        _check_m3hf(config)
    elif env is not None and hasattr(env, "id") and hasattr(env, "kwargs"):
        _check_gym_env(env.id, dict(env.kwargs), build_env=build_env)
    for i, source in enumerate(getattr(config, "policies", None) or ()):
        if getattr(source, "kind", None) == "sb3" and source.path and not source.trust_pickle:
            from rlkit.factories.configs import untrusted_zip

            refusal = untrusted_zip(f"policies[{i}]", source.path)
            if refusal is not None:
                raise ConfigError(refusal)
    inputs = {"trajectories": ".npz", "model": None}  # a dataset is a path stem (.npz + .json)
    for field, suffix in inputs.items():
        value = getattr(config, field, None)
        if not isinstance(value, str):
            continue
        path = Path(value)
        if not path.exists():
            raise ConfigError(f"{field}={value}: no such file or directory")
        if suffix is not None and path.suffix != suffix:
            raise ConfigError(f"{field}={value}: a {path.suffix or 'suffix-less'} file where a {suffix} "
                              f"file is expected (the TrajectoryStore `rlkit collect` writes)")


def _check_devices(config: BaseModel, path: str = "") -> None:
    """Every ``device`` field of the config (sections and lists of them included) names a device
    torch sees here (``cuda`` on a machine without CUDA is refused, naming the field)."""
    from rlkit.devices import resolve_device
    from rlkit.errors import ConfigError

    for name in type(config).model_fields:
        value = getattr(config, name)
        where = f"{path}{name}"
        if name.endswith("device") and isinstance(value, str):
            try:
                resolve_device(value)
            except ConfigError as error:
                raise ConfigError(f"{where}={value}: {error}") from None
        for i, item in enumerate(value if isinstance(value, (list, tuple)) else [value]):
            if isinstance(item, BaseModel):
                _check_devices(item, f"{where}[{i}]." if isinstance(value, (list, tuple)) else f"{where}.")


def _check_gym_env(env_id: str, kwargs: dict[str, Any], *, build_env: bool) -> None:
    """``env_id`` names a registered env that takes ``kwargs``; ``module:Name-v0`` (gymnasium's
    form for an env a module registers when imported) imports the module first, as ``make`` does.
    With ``build_env`` the env is made with them; without, they are checked against its entry
    point's signature (``_unknown_kwargs``)."""
    import importlib
    import os
    import sys

    import gymnasium

    import envs  # noqa: F401 - registers rlkit's own ids
    from rlkit.errors import ConfigError

    module, _, name = env_id.rpartition(":")
    if module:
        if os.getcwd() not in sys.path:  # as `python -m` would: a module beside the user is found
            sys.path.append(os.getcwd())
        try:
            importlib.import_module(module)
        except ImportError as error:
            raise ConfigError(f"env.id={env_id}: cannot import {module!r}, the module that should "
                              f"register {name!r} ({error})") from None
    try:
        spec = gymnasium.spec(name)
    except gymnasium.error.Error as error:
        raise ConfigError(f"env.id={env_id}: {error}") from None
    if not build_env:
        unknown = _unknown_kwargs(spec, kwargs)
        if unknown:
            raise ConfigError(f"env.kwargs={kwargs}: {env_id} does not take them (no parameter "
                              f"{', '.join(map(repr, unknown))} in {spec.entry_point})")
        return
    try:
        gymnasium.make(env_id, **kwargs).close()
    except TypeError as error:  # an unexpected keyword argument
        raise ConfigError(f"env.kwargs={kwargs}: {env_id} does not take them ({error})") from None


def _unknown_kwargs(spec: Any, kwargs: dict[str, Any]) -> list[str]:
    """The names in ``kwargs`` that neither ``gymnasium.make`` nor the env's entry point takes,
    read from signatures without making the env. An env class whose ``__init__`` takes
    ``**kwargs`` passes them on to its base class's, as gymnasium's MuJoCo envs do, so the bases
    are read in turn; an entry point that takes ``**kwargs`` otherwise (or whose signature cannot
    be read) accepts any name."""
    import inspect

    from gymnasium.envs.registration import load_env_creator, make

    creator = spec.entry_point
    if isinstance(creator, str):
        creator = load_env_creator(creator)
    taken = set(inspect.signature(make).parameters) - {"id", "kwargs"}
    functions = [vars(klass)["__init__"] for klass in creator.__mro__ if "__init__" in vars(klass)] \
        if isinstance(creator, type) else [creator]
    for function in functions:
        if function is object.__init__:
            return []
        try:
            parameters = inspect.signature(function).parameters.values()
        except (TypeError, ValueError):  # a signature Python cannot read (a C extension's): accepted
            return []
        taken |= {p.name for p in parameters if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
        if all(p.kind is not p.VAR_KEYWORD for p in parameters):
            return sorted(set(kwargs) - taken)
    return []


def _check_m3hf(config: BaseModel) -> None:
    """The feedback script: a scripted source needs one, a named one must exist. (The game needs
    no check here: ``M3HFConfig.env``, a ``GameConfig``, validates every setting the env reads.)"""
    from rlkit.errors import ConfigError
    from rlkit.m3hf.examples import script_file
    from rlkit.m3hf.run_config import M3HFConfig

    assert isinstance(config, M3HFConfig)
    feedback = config.feedback
    if feedback.source == "scripted" and feedback.script is None and not feedback.texts:
        raise ConfigError("feedback.source=scripted needs feedback.script=<YAML of texts per phase> or "
                          "feedback.texts; without them the run would train with no feedback at all")
    if feedback.script is not None and not script_file(feedback.script).is_file():
        raise ConfigError(f"feedback.script={feedback.script}: no such file")
