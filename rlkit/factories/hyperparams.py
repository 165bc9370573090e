"""Agent settings by name: rl-zoo3's tuned hyperparameters, SB3's defaults, or the user's own.

``agent.hyperparams`` is one of

- ``auto`` (the default): rl-zoo3's entry for the env id and algorithm when ``rl_zoo3`` is
  installed and has one, else SB3's defaults; a log line says which;
- ``zoo``: the same, but ``rl_zoo3`` must be installed (else ``MissingExtraError``, extra ``zoo``);
- ``sb3``: SB3's defaults;
- a mapping: the user's own SB3 keyword arguments, in the zoo's spelling (below).

A command's config resolves ``auto``/``zoo`` when it is loaded (``resolve_hyperparams``), so the
``config.yaml`` a run writes holds the settings themselves (a mapping, or ``sb3``) and reruns
without ``rl_zoo3``. The zoo's YAML files are read with ``yaml.safe_load`` from the installed
package; the zoo's entry is translated as follows:

- ``n_timesteps`` is the zoo's training budget, not the run's (``agent.total_timesteps``): dropped;
- ``n_envs`` is logged when it differs from ``env.n_envs``, not applied: a run's number of envs
  stays the config's, whether or not rl_zoo3 is installed;
- ``policy`` must be ``MlpPolicy`` (what rlkit builds);
- ``normalize`` (a ``VecNormalize`` around the env) is not applied: rlkit normalises the learned
  reward itself (``agent.normalize_reward``), and observations stay the env's own, because the
  reward model, the recorded trajectories, saved agents and evaluation all see raw observations;
- ``policy_kwargs`` written as Python (``"dict(net_arch=[64, 64], activation_fn=nn.ReLU)"``) are
  parsed as literals with ``ast`` (nothing is evaluated): numbers, text, lists, ``dict(...)`` and
  the names in ``CLASS_NAMES``, kept as text (``"nn.ReLU"``) until the agent is built;
- ``lin_<x>`` schedules, ``noise_type``/``noise_std`` and ``train_freq`` lists are kept as data and
  become SB3 objects when the agent is built (``sb3_kwargs``);
- an entry needing what rlkit does not build (env wrappers, frame stacking, callbacks, other
  replay buffers...) is not used: SB3's defaults, with a log line naming those keys.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import inspect
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from rlkit.errors import ConfigError
from rlkit.extras import require

if TYPE_CHECKING:
    from stable_baselines3.common.base_class import BaseAlgorithm

log = logging.getLogger(__name__)

MODES = ("auto", "zoo", "sb3")
#: zoo keys rlkit translates (besides the algorithm's own keyword arguments)
_HANDLED = {"n_timesteps", "n_envs", "policy", "normalize", "noise_type", "noise_std"}
#: class names a zoo ``policy_kwargs`` may name, and where each lives
CLASS_NAMES: dict[str, tuple[str, str]] = {
    **{f"nn.{name}": ("torch.nn", name) for name in
       ("ReLU", "Tanh", "ELU", "GELU", "LeakyReLU", "SiLU", "Sigmoid")},
    "RMSpropTFLike": ("stable_baselines3.common.sb2_compat.rmsprop_tf_like", "RMSpropTFLike"),
}
_SCHEDULED = ("learning_rate", "clip_range", "clip_range_vf")


@dataclass(frozen=True)
class Resolved:
    """What ``auto``/``zoo`` came to: the SB3 settings (a mapping, or ``"sb3"`` for its defaults),
    the zoo's ``n_envs`` (None when it names none or was not used) and where they came from."""

    hyperparams: str | dict[str, Any]
    n_envs: int | None
    source: str


def zoo_installed() -> bool:
    """Whether ``rl_zoo3`` can be imported (without importing it)."""
    return importlib.util.find_spec("rl_zoo3") is not None


@functools.cache
def _zoo_file(algo: str) -> tuple[str, dict[str, Any]]:
    zoo = require("rl_zoo3", "zoo", "agent.hyperparams=zoo")
    path = Path(str(zoo.__file__)).parent / "hyperparams" / f"{algo}.yml"
    if not path.is_file():
        return getattr(zoo, "__version__", "?"), {}
    with path.open() as handle:
        return getattr(zoo, "__version__", "?"), yaml.safe_load(handle) or {}


def zoo_entry(env_id: str, algo: str) -> dict[str, Any] | None:
    """rl-zoo3's own entry for ``env_id`` and ``algo`` (a copy), None when it has none.

    Args:
        env_id: the gymnasium id, matched exactly as the zoo does (``Pendulum-v1``).
        algo: the algorithm's lower-case name (``ppo``, ``sac``...).

    Returns:
        The entry as the zoo's YAML holds it.
    """
    entry = _zoo_file(algo)[1].get(env_id)
    return dict(entry) if isinstance(entry, dict) else None


def translate_zoo_entry(entry: dict[str, Any], accepted: set[str]) -> tuple[dict[str, Any], int | None,
                                                                             list[str]]:
    """The zoo's entry as rlkit's hyperparameters (data, see the module's notes).

    Args:
        entry: one env's entry of a zoo YAML file.
        accepted: the keyword arguments of the algorithm the entry is for.

    Returns:
        The settings, the zoo's ``n_envs`` (None when absent) and the keys that keep the entry
        from being used (empty when it can be).
    """
    settings: dict[str, Any] = {}
    blocking: list[str] = []
    for key, value in entry.items():
        if key in ("n_timesteps", "normalize", "n_envs"):
            continue
        if key == "policy":
            if value != "MlpPolicy":
                blocking.append(f"policy={value}")
            continue
        if key not in accepted and key not in _HANDLED:
            blocking.append(key)
            continue
        if key == "policy_kwargs" and isinstance(value, str):
            try:
                value = parse_literal(value)
            except ConfigError as error:
                blocking.append(f"policy_kwargs ({error})")
                continue
        settings[key] = value
    n_envs = entry.get("n_envs")
    return settings, n_envs if isinstance(n_envs, int) else None, blocking


def resolve_hyperparams(mode: str | dict[str, Any], env_id: str, algo: str) -> Resolved:
    """``agent.hyperparams`` resolved for ``env_id`` and ``algo``; ``auto``/``zoo`` log a line
    saying what they came to.

    Args:
        mode: ``auto``, ``zoo``, ``sb3`` or a mapping (returned as it is).
        env_id: the env the agent trains on.
        algo: the algorithm's lower-case name.

    Returns:
        The settings and where they came from.

    Raises:
        MissingExtraError: ``zoo`` without ``rl_zoo3`` installed.
    """
    if isinstance(mode, dict):
        return Resolved(dict(mode), None, "the config")
    if mode == "sb3":
        return Resolved("sb3", None, "SB3's defaults")
    if mode not in MODES:
        raise ConfigError(f"agent.hyperparams={mode!r} is not one of {', '.join(MODES)} or a mapping")
    if mode == "auto" and not zoo_installed():
        log.info("agent.hyperparams=auto: rl_zoo3 is not installed, so %s uses SB3's defaults "
                 "(pip install 'rlkit[zoo]' for tuned settings)", algo)
        return Resolved("sb3", None, "SB3's defaults (rl_zoo3 not installed)")
    version, _ = _zoo_file(algo)
    entry = zoo_entry(env_id, algo)
    if entry is None:
        log.info("agent.hyperparams=%s: rl-zoo3 %s has no %s entry for %s; SB3's defaults are used",
                 mode, version, algo, env_id)
        return Resolved("sb3", None, f"SB3's defaults (no rl-zoo3 entry for {env_id})")
    settings, n_envs, blocking = translate_zoo_entry(entry, accepted_kwargs(algo))
    if blocking:
        log.warning("agent.hyperparams=%s: rl-zoo3 %s's %s entry for %s needs %s, which rlkit does not "
                    "build; SB3's defaults are used", mode, version, algo, env_id, ", ".join(blocking))
        return Resolved("sb3", None, f"SB3's defaults (rl-zoo3's entry needs {', '.join(blocking)})")
    if entry.get("normalize"):
        log.info("rl-zoo3's %s entry for %s normalises observations (VecNormalize); rlkit keeps the "
                 "env's observations and normalises the learned reward itself", algo, env_id)
    log.info("agent.hyperparams=%s: rl-zoo3 %s's tuned %s settings for %s: %s (n_envs %s)", mode,
             version, algo, env_id, settings, n_envs or 1)
    return Resolved(settings, n_envs or 1, f"rl-zoo3 {version}")


def accepted_kwargs(algo: str) -> set[str]:
    """The keyword arguments the SB3 algorithm named ``algo`` is built with.

    Args:
        algo: a key of ``rlkit.factories.algorithms.ALGORITHMS``.

    Returns:
        Its constructor's argument names but ``policy`` and ``env``.
    """
    from rlkit.factories.algorithms import ALGORITHMS

    if algo not in ALGORITHMS:
        raise ConfigError(f"agent.algo={algo!r} is not one of {sorted(ALGORITHMS)}")
    return set(inspect.signature(ALGORITHMS[algo].__init__).parameters) - {"self", "policy", "env"}


def parse_literal(text: str) -> Any:
    """A Python literal as the zoo's YAML writes one (``"dict(net_arch=[64, 64])"``), read with
    ``ast``: numbers, text, booleans, None, lists, tuples, ``{...}``, ``dict(key=...)`` and the
    class names in ``CLASS_NAMES`` (returned as text). Nothing is evaluated.

    Args:
        text: the literal.

    Returns:
        Its value, as JSON-able data.

    Raises:
        ConfigError: anything else (a call, another name, an operator).
    """
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as error:
        raise ConfigError(f"{text!r} is not a Python literal ({error.msg})") from None
    return _literal(tree.body, text)


def _literal(node: ast.expr, text: str) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float | str | bool | None):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _literal(node.operand, text)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.List | ast.Tuple):
        return [_literal(item, text) for item in node.elts]
    if isinstance(node, ast.Dict) and all(key is not None for key in node.keys):
        return {_key(key, text): _literal(value, text) for key, value in zip(node.keys, node.values,
                                                                              strict=True)}
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict"
            and not node.args and all(k.arg is not None for k in node.keywords)):
        return {k.arg: _literal(k.value, text) for k in node.keywords}
    name = ast.unparse(node)
    if isinstance(node, ast.Name | ast.Attribute) and name in CLASS_NAMES:
        return name
    raise ConfigError(f"{text!r}: {name!r} is not a literal or one of {sorted(CLASS_NAMES)}")


def _key(node: ast.expr | None, text: str) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    raise ConfigError(f"{text!r}: dict keys must be text")


def sb3_kwargs(hyperparams: str | dict[str, Any], algorithm: type[BaseAlgorithm],
               action_dim: int | None) -> dict[str, Any]:
    """The keyword arguments an SB3 algorithm is built with, from resolved hyperparameters.

    Args:
        hyperparams: ``sb3`` or a mapping (``auto``/``zoo`` must be resolved first).
        algorithm: the SB3 class; every key must be one of its constructor's arguments.
        action_dim: the size of a Box action space (for ``noise_type``), None for others.

    Returns:
        SB3 keyword arguments: ``lin_<x>`` as linear schedules, class names as classes,
        ``noise_type``/``noise_std`` as ``action_noise``, a ``train_freq`` list as a tuple.

    Raises:
        ConfigError: an unresolved mode, a key the algorithm does not take, or a bad value.
    """
    if hyperparams == "sb3":
        return {}
    if not isinstance(hyperparams, dict):
        raise ConfigError(f"agent.hyperparams={hyperparams!r} must be resolved before an agent is built")
    settings = dict(hyperparams)
    accepted = set(inspect.signature(algorithm.__init__).parameters) - {"self", "policy", "env"}
    unknown = sorted(set(settings) - accepted - _HANDLED)
    if unknown:
        raise ConfigError(f"agent.hyperparams: {unknown} are not arguments of {algorithm.__name__}")
    for key in _HANDLED - {"noise_type", "noise_std"}:
        settings.pop(key, None)
    for key in _SCHEDULED:
        if isinstance(settings.get(key), str):
            settings[key] = _schedule(key, settings[key])
    if isinstance(settings.get("train_freq"), list):
        settings["train_freq"] = tuple(settings["train_freq"])
    if "policy_kwargs" in settings:
        settings["policy_kwargs"] = _classes(settings["policy_kwargs"])
    noise_type, noise_std = settings.pop("noise_type", None), settings.pop("noise_std", None)
    if noise_type is not None:
        settings["action_noise"] = _noise(str(noise_type), noise_std, action_dim)
    return settings


def _schedule(key: str, text: str) -> Any:
    from stable_baselines3.common.utils import LinearSchedule

    kind, _, start = text.partition("_")
    try:
        value = float(start)
    except ValueError:
        value = None
    if kind != "lin" or value is None:
        raise ConfigError(f"agent.hyperparams.{key}={text!r}: a schedule is written lin_<start>")
    return LinearSchedule(value, 0.0, 1.0)  # start * progress_remaining, as the zoo's


def _classes(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _classes(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_classes(item) for item in value]
    if isinstance(value, str) and value in CLASS_NAMES:
        module, name = CLASS_NAMES[value]
        return getattr(importlib.import_module(module), name)
    return value


def _noise(kind: str, std: Any, action_dim: int | None) -> Any:
    import numpy as np
    from stable_baselines3.common.noise import NormalActionNoise, OrnsteinUhlenbeckActionNoise

    noises = {"normal": NormalActionNoise, "ornstein-uhlenbeck": OrnsteinUhlenbeckActionNoise}
    if kind.strip() not in noises or action_dim is None or not isinstance(std, int | float):
        raise ConfigError(f"agent.hyperparams: noise_type={kind!r} with noise_std={std!r} needs "
                          f"one of {sorted(noises)}, a number and a Box action space")
    return noises[kind.strip()](mean=np.zeros(action_dim), sigma=float(std) * np.ones(action_dim))
