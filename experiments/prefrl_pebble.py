"""PEBBLE-style preference RL with SAC against SAC on the true reward (issue 14).

One command:  python experiments/prefrl_pebble.py [--config FILE] [key=value ...]
                  [--backend local|ray] [--workers N] [--resume] [--report-only]

One unit per (seed, arm), run through ``rlkit.scale`` (a process each on this machine, or Ray Tune
trials on a cluster); ``--resume`` skips the units already finished in ``out_dir``, and a unit that
was killed picks up from its own folder (``out_dir/work/<unit>``) when it runs again. The report
is built from the rows by ``experiments/prefrl_pebble_report.py``. The arms:

- ``prefrl``: ``rlkit pref-rl``'s loop (``rlkit.prefrl.PreferenceRL`` with a run directory: a
  killed run resumes from the start of its last query round, as ``rlkit pref-rl --run-dir`` does);
- ``true_reward``: SAC with the same agent settings on the env's own reward, trained in chunks of
  ``eval_every`` env steps with a resume point after each (``rlkit.factories.resumable``).

Both arms take the same env steps (``prefrl.agent.total_timesteps``, the random steps included) and
start training at the same step: pref-rl first collects ``query.every_steps`` uniformly random env
steps to ask its first labels about, and the true-reward arm's SAC acts at random for as many
(its ``learning_starts`` is raised by them, as the loop raises its own agent's). Each arm records
its true-return learning curve, the deterministic policy's mean return over ``eval_episodes``
fresh episodes every ``eval_every`` env steps, and its final return over ``final_episodes``.

How this follows PEBBLE (Lee et al., ICML 2021) and B-Pref, and where not. As PEBBLE, the first
10,000 steps are 1,000 random ones and 9,000 of unsupervised pre-training (``query.unsupervised_steps``:
SAC on the k-NN state-entropy reward of its replay buffer, k = 5, normalised; then the critic is
re-initialised; ``rlkit.prefrl.unsupervised``), so the first labels compare diverse behaviour; the
replay buffer is relabelled with each refit reward (lazily, in batches); the reward model is refit on
every label each round (``trainer.refit: epochs``); queries are picked by ensemble disagreement; the
teacher is B-Pref's oracle (binary labels, perfectly rational: ``beta: .inf``, no mistakes, no ties,
no skips). Not as PEBBLE: the intrinsic reward is paid once per transition (when first sampled),
not drawn anew each update; the reward model is rlkit's (3 x 256x256 ReLU, linear output,
normalised by running statistics; PEBBLE's ends in tanh); SAC's settings are
``agent.hyperparams: auto``, which for HalfCheetah-v5 resolves to SB3's defaults (rl-zoo3 tunes SAC
only for HalfCheetah-v4, whose one change from SB3's defaults, ``learning_starts: 10000``, is the
random start both arms take here), not PEBBLE's 1024x1024 nets. The true-reward arm's SAC acts at
random for its first 10,000 steps.

``imitation`` 1.0.1 cannot run this setting (checked in its wheel's source): it pins
``gymnasium~=0.29`` (HalfCheetah-v4, no v5) and ``stable-baselines3~=2.2.1``, so it needs a venv of
its own; its ``PreferenceComparisons`` trains any SB3 algorithm, SAC included (its scripts' named
config ``rl.sac``, and ``imitation.policies.base.SAC1024Policy``, PEBBLE's nets), but the 1.0.1
release has no PEBBLE: no unsupervised pre-training and no relabelling of SAC's replay buffer
after a refit (rows keep the reward of the model that was current when they were stored;
``imitation.algorithms.pebble`` exists only on its unreleased master). The nearest it runs is SAC
with preference comparisons on HalfCheetah-v4, in a venv of its own (see ``IMITATION_COMMANDS``).
"""

from __future__ import annotations

import importlib
import json
import math
import resource
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from pydantic import Field
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

from rlkit.config import StrictModel, load_config
from rlkit.errors import ConfigError
from rlkit.factories.builders import make_agent, make_venv, true_return
from rlkit.factories.configs import (
    AgentConfig,
    EnvConfig,
    PrefRLConfig,
    PrefRLTeacherSettings,
    QueryConfig,
)
from rlkit.factories.resumable import ResumableTraining
from rlkit.persistence import atomic_write_json, read_json
from rlkit.prefrl import PreferenceRL
from rlkit.scale.command import backend_from_args, exit_status, experiment_parser
from rlkit.scale.unit_graph import Unit
from rlkit.scale.units import Backend, UnitResult, run_units

ARMS = ("prefrl", "true_reward")
EVAL_SEED_OFFSET = 10_000  # eval episodes' env seeds: env.seed + this (never the training env's)
IMITATION_COMMANDS = """\
python3 -m venv /tmp/imitation-venv   # never rlkit's: imitation pins gymnasium~=0.29, SB3~=2.2.1
/tmp/imitation-venv/bin/pip install imitation==1.0.1 "gymnasium[mujoco]~=0.29"
for seed in 0 1 2; do
  /tmp/imitation-venv/bin/python -m imitation.scripts.train_preference_comparisons with \\
    rl.sac environment.gym_id=HalfCheetah-v4 total_timesteps=200000 total_comparisons=1000 \\
    initial_comparison_frac=0.1 num_iterations=18 query_schedule=constant fragment_length=50 \\
    active_selection=True seed=$seed
done
"""


class PebbleExperimentConfig(StrictModel):
    """``prefrl``: the pref-rl run of every seed (its ``seed`` and ``env.seed`` are the unit's);
    the true-reward arm takes its ``env`` and ``agent``."""

    out_dir: str = "runs/prefrl_pebble"
    seeds: list[int] = [0, 1, 2]
    arms: list[str] = list(ARMS)
    prefrl: PrefRLConfig = PrefRLConfig(
        env=EnvConfig(id="HalfCheetah-v5", n_envs=1),
        agent=AgentConfig(algo="sac", total_timesteps=200_000),
        query=QueryConfig(every_steps=10_000, initial_pairs=100, pairs_per_round=50, max_pairs=1000),
        teacher=PrefRLTeacherSettings(scale="binary", beta=math.inf),
    )
    eval_every: int = Field(10_000, ge=1)
    eval_episodes: int = Field(5, ge=1)
    final_episodes: int = Field(10, ge=1)


def seed_config(config: PebbleExperimentConfig, seed: int) -> PrefRLConfig:
    """The pref-rl config of one seed: the loop's and the env's seed set to it.

    Args:
        config: the experiment's config.
        seed: the unit's seed.

    Returns:
        The pref-rl config the unit runs (the true-reward arm takes its env and agent).
    """
    prefrl = config.prefrl
    return prefrl.replace(seed=seed, env=prefrl.env.replace(seed=seed))


class _Evaluator(BaseCallback):
    """Records the true return every ``every`` env steps into ``curve`` (kept in ``path``)."""

    def __init__(self, env: EnvConfig, every: int, episodes: int, curve: dict[str, float],
                 path: Path) -> None:
        super().__init__()
        self.env, self.every, self.episodes, self.curve, self.path = env, every, episodes, curve, path
        self.done = 0

    def _on_training_start(self) -> None:
        self.done = self.model.num_timesteps // self.every
        if self.model.num_timesteps % self.every == 0 and str(self.model.num_timesteps) not in self.curve:
            self._evaluate()  # the agent as training starts (a resumed run: as the killed one left it)

    def _evaluate(self) -> None:
        self.curve[str(self.model.num_timesteps)] = evaluate(self.model, self.env, self.episodes)
        atomic_write_json(self.path, self.curve)

    def _on_step(self) -> bool:
        if self.model.num_timesteps // self.every > self.done:
            self.done = self.model.num_timesteps // self.every
            self._evaluate()
        return True


def evaluate(agent: BaseAlgorithm, env: EnvConfig, episodes: int) -> float:
    """The deterministic policy's mean true return over ``episodes`` fresh episodes.

    Args:
        agent: the agent to evaluate.
        env: the env it trains on (evaluated on other seeds: ``EVAL_SEED_OFFSET`` on).
        episodes: how many episodes.

    Returns:
        The mean return.
    """
    return true_return(agent, env, episodes, seed_offset=EVAL_SEED_OFFSET)[0]


def _with_callback(agent: BaseAlgorithm, extra: BaseCallback) -> None:
    """Make every ``agent.learn`` call run ``extra`` beside the callbacks it is given (the loop
    builds its own list and takes no callback of ours)."""
    learn = agent.learn

    def learn_with(total_timesteps: int, callback: Any = None, **kwargs: Any) -> Any:
        given = callback if isinstance(callback, list) else [] if callback is None else [callback]
        return learn(total_timesteps, callback=[*given, extra], **kwargs)

    setattr(agent, "learn", learn_with)  # noqa: B010 (an instance attribute over the method)


def run_prefrl(config: PebbleExperimentConfig, seed: int, folder: Path) -> dict[str, Any]:
    """One seed of pref-rl; resumes from ``folder`` when a killed run left a point there.

    Args:
        config: the experiment's config.
        seed: the unit's seed.
        folder: the unit's working folder (its run directory and curve).

    Returns:
        The unit's row (without timing).
    """
    prefrl = seed_config(config, seed)
    folder.mkdir(parents=True, exist_ok=True)
    curve_path = folder / "curve.json"
    curve = read_json(curve_path) if curve_path.exists() else {}
    loop = PreferenceRL.from_config(prefrl, run_dir=folder / "run")
    start = loop.resume_point.timestep if loop.resume_point is not None else 0
    curve = {step: value for step, value in curve.items() if int(step) <= start}  # redone after
    _with_callback(loop.agent, _Evaluator(prefrl.env, config.eval_every, config.eval_episodes,
                                          curve, curve_path))
    result = loop.learn()
    steps = int(result.agent.num_timesteps)
    if steps % config.eval_every == 0 and str(steps) not in curve:  # killed between round and eval
        curve[str(steps)] = evaluate(result.agent, prefrl.env, config.eval_episodes)
    return {"labels": len(result.dataset), "resumed_from": start,
            "steps": steps, "curve": curve,
            "final_return": evaluate(result.agent, prefrl.env, config.final_episodes)}


def run_true_reward(config: PebbleExperimentConfig, seed: int, folder: Path) -> dict[str, Any]:
    """One seed of SAC on the true reward, in chunks of ``eval_every`` steps with a resume point
    in ``folder`` after each; the curve is saved with each point.

    Args:
        config: the experiment's config.
        seed: the unit's seed.
        folder: the unit's working folder (its resume points).

    Returns:
        The unit's row (without timing).
    """
    prefrl = seed_config(config, seed)
    venv = make_venv(prefrl.env)
    agent = make_agent(prefrl.agent, venv, seed)
    if not isinstance(agent, OffPolicyAlgorithm):
        raise ConfigError(f"prefrl.agent.algo={prefrl.agent.algo}: this experiment compares off-policy "
                          "agents (PEBBLE's SAC)")
    random_steps = -(-prefrl.query.every_steps // venv.num_envs) * venv.num_envs  # as the loop's
    agent.learning_starts += random_steps
    settings = {"agent": prefrl.agent.model_dump(mode="json"), "env": prefrl.env.model_dump(mode="json"),
                "learning_starts": agent.learning_starts}
    training = ResumableTraining(folder, prefrl.agent.total_timesteps, config.eval_every, settings)
    resumed = training.resume(agent)
    curve: dict[str, float] = dict(resumed.progress.get("curve", {})) if resumed is not None else {}

    def progress() -> dict[str, Any]:
        if agent.num_timesteps % config.eval_every == 0:  # the steps the other arm is evaluated at
            curve[str(agent.num_timesteps)] = evaluate(agent, prefrl.env, config.eval_episodes)
        return {"curve": curve}

    training.train(agent, progress=progress)
    row = {"labels": 0, "resumed_from": resumed.timesteps if resumed is not None else 0,
           "steps": int(agent.num_timesteps), "curve": curve,
           "final_return": evaluate(agent, prefrl.env, config.final_episodes)}
    venv.close()
    return row


RUNNERS: dict[str, Callable[[PebbleExperimentConfig, int, Path], dict[str, Any]]] = {
    "prefrl": run_prefrl, "true_reward": run_true_reward,
}


def units(config: PebbleExperimentConfig, out: Path) -> list[Unit]:
    """One unit per (seed, arm).

    Args:
        config: the experiment's config.
        out: the output folder.

    Returns:
        The units, seed by seed.
    """
    unknown = sorted(set(config.arms) - set(ARMS))
    if unknown:
        raise ConfigError(f"arms {unknown} are not among {list(ARMS)}")
    base = {"config": config.model_dump(mode="json"), "out": str(out.absolute())}
    return [Unit(f"{arm}-s{seed}", base | {"arm": arm, "seed": seed})
            for seed in config.seeds for arm in config.arms]


def run_unit(unit: Unit, report: Any) -> dict[str, Any]:
    """One unit in its own process: one arm of one seed, resumed from its folder if it was killed.

    Args:
        unit: the unit (its payload names the arm and seed).
        report: interim metrics for Tune (unused).

    Returns:
        ``{"rows": [row]}``.
    """
    torch.set_num_threads(1)  # small nets: one thread is fastest and leaves a core for the env
    payload = unit.payload
    config = PebbleExperimentConfig.model_validate(payload["config"])
    arm, seed = payload["arm"], int(payload["seed"])
    start, cpu = time.perf_counter(), _cpu_seconds()
    row = RUNNERS[arm](config, seed, Path(payload["out"]) / "work" / unit.id)
    row = {"arm": arm, "seed": seed} | row | {"wall_s": time.perf_counter() - start,
                                              "cpu_s": _cpu_seconds() - cpu}
    print(f"{unit.id}: final true return {row['final_return']:.1f}", file=sys.stderr)
    return {"rows": [row]}


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_all(config: PebbleExperimentConfig, out: Path, backend: Backend,
            resume: bool = False, only: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Run the units on ``backend``; the rows of the finished ones, in unit order.

    Args:
        config: the experiment's config.
        out: the output folder.
        backend: where the units run.
        resume: skip the units already finished in ``out``.
        only: run just these units and those they need (``--only``); all when empty.

    Returns:
        One row per finished unit.
    """
    fn = importlib.import_module("experiments.prefrl_pebble").run_unit  # by name, not a copy
    results = run_units(units(config, out), fn, out, backend, resume=resume, name="prefrl_pebble",
                        on_result=_echo, only=only)
    for key, result in results.items():
        if result.status != "done":
            print(f"unit {key} failed: {result.error}", file=sys.stderr)
    return [row for r in results.values() if r.status == "done" for row in r.result.get("rows", [])]


def _echo(result: UnitResult) -> None:
    state = "done earlier" if result.skipped else result.status
    print(f"unit {result.id}: {state} ({result.seconds:.0f} s)", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Run the experiment (or rebuild its report).

    Args:
        argv: command-line arguments (default: ``sys.argv``).

    Returns:
        The exit status.
    """
    parser = experiment_parser(__doc__, Path(__file__).parent / "configs/prefrl_pebble.yaml",
                               "rebuild summary, table and plot from out_dir/rows.jsonl; no training",
                               "skip the units already finished in out_dir; killed ones go on from "
                               "their folders")
    args = parser.parse_args(argv)
    from experiments.prefrl_pebble_report import markdown_table, plot, summarise  # by name, as below
    from experiments.rows import run_or_read  # by name: the script puts the repo root on sys.path
    config = load_config(PebbleExperimentConfig, args.config, args.overrides)
    out = Path(config.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = run_or_read(out, config, args.report_only,
                       lambda: run_all(config, out, backend_from_args(args), resume=args.resume,
                                               only=args.only))
    if rows is None:
        return 1
    table = summarise(rows)
    atomic_write_json(out / "summary.json", table)
    (out / "table.md").write_text(markdown_table(table))
    env = config.prefrl.env.id
    plot(table, f"{env}, SAC, {config.prefrl.agent.total_timesteps} steps: mean, 95% t-interval shaded",
         out / "curves.png")
    print(json.dumps({"summary": str(out / "summary.json"), "plot": str(out / "curves.png")}))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `experiments` by name
    sys.exit(exit_status(main, Path(__file__).name))
