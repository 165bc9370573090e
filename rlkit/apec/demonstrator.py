"""Suboptimal demonstrations: train a demonstrator with SB3, keep its checkpoints, and take the
demos from the checkpoint whose return is closest to a chosen fraction of the best one.

APEC imitates one or a few demonstrations at about 50-80% of the expert's return; the achieved
fraction is measured and recorded, not assumed. The demonstrator's own checkpoints are also a
source of diverse trajectories for the held-out evaluation set.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecEnv

from rlkit.ail.demos import demos_from_policy, save_demos
from rlkit.apec.config import DemonstratorConfig
from rlkit.data import Trajectory, collect_trajectories
from rlkit.devices import resolve_device
from rlkit.errors import FileFormatError, InvalidDataError
from rlkit.factories.pixel_sac import DrQSAC, is_pixel_space
from rlkit.factories.resumable import ResumableTraining
from rlkit.persistence import atomic_write_json
from rlkit.persistence.agents import load_agent, save_agent

RESUME_DIR = "resume"  # the resume points of a demonstrator in training (rlkit.factories.resumable)
VenvFactory = Callable[[int], VecEnv]
"""Builds a fresh VecEnv from a seed; every stage of the APEC pipeline gets its envs this way."""


@dataclass(frozen=True)
class DemoReport:
    """What was chosen and what it achieved: ``fraction`` = (demo return - baseline) / (best -
    baseline), with the mean demo return."""

    checkpoint: str
    checkpoint_step: int
    checkpoint_returns: dict[str, float]
    best_return: float
    baseline_return: float
    target_fraction: float
    demo_returns: list[float]
    fraction: float


class _SaveEvery(BaseCallback):
    """Save the model every ``every`` steps as ``step_<n>.zip`` (SB3's format, plus the
    ``.json`` that lets ``rlkit.persistence.agents`` load it without unpickling). The next save is
    counted from the agent's steps at each ``learn``, so a resumed run saves none twice."""

    def __init__(self, directory: Path, every: int) -> None:
        super().__init__()
        self.directory, self.every, self.next_save = directory, every, every

    def _on_training_start(self) -> None:
        self.next_save = (self.model.num_timesteps // self.every + 1) * self.every

    def _on_step(self) -> bool:
        if self.num_timesteps >= self.next_save:
            save_agent(self.model, self.directory / f"step_{self.num_timesteps:09d}")
            self.next_save += self.every
        return True


def train_demonstrator(make_venv: VenvFactory, config: DemonstratorConfig, out_dir: str | os.PathLike[str],
                       algorithms: dict[str, type[BaseAlgorithm]]) -> list[Path]:
    """Train on the true reward, saving a checkpoint every ``checkpoint_every`` steps; returns them.
    Resumable: a resume point follows each checkpoint (``out_dir/resume``, removed once trained),
    so a run killed part way goes on from its last checkpoint instead of from scratch.
    On pixel observations (uint8 frame stacks) SAC is ``DrQSAC`` (``rlkit.factories.pixel_sac``):
    the demonstrator sees the frames its demos are made of."""
    device = resolve_device(config.device)  # SB3 would quietly take the CPU for a missing GPU
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    venv = make_venv(config.seed)
    try:
        if is_pixel_space(venv.observation_space):
            if config.algo != "sac":
                raise InvalidDataError(f"demos.algo={config.algo!r}: a pixel task's demonstrator is SAC "
                                       "from pixels (DrQSAC); set demos.algo=sac")
            model: BaseAlgorithm = DrQSAC("CnnPolicy", venv, seed=config.seed, device=device, verbose=0,
                                          **dict(config.kwargs))
        else:
            model = algorithms[config.algo]("MlpPolicy", venv, seed=config.seed, device=device, verbose=0,
                                            **dict(config.kwargs))
        training = ResumableTraining(directory / RESUME_DIR, config.total_timesteps, config.checkpoint_every,
                                     settings={"algo": config.algo, "seed": config.seed,
                                               "kwargs": dict(config.kwargs)})
        training.resume(model)
        training.train(model, _SaveEvery(directory, config.checkpoint_every))
    finally:
        venv.close()
    training.clear()
    return demonstrator_checkpoints(directory)


def demonstrator_checkpoints(directory: str | os.PathLike[str]) -> list[Path]:
    """The saved ``step_*.zip`` files in step order."""
    return sorted(Path(directory).glob("step_*.zip"))


def checkpoint_step(path: Path) -> int:
    try:
        return int(path.stem.removeprefix("step_"))
    except ValueError:
        raise FileFormatError(f"{path}: not a demonstrator checkpoint (step_<n>.zip)") from None


def suboptimal_demos(make_venv: VenvFactory, checkpoints: list[Path], config: DemonstratorConfig,
                     algorithms: dict[str, type[BaseAlgorithm]], rng: np.random.Generator,
                     ) -> tuple[list[Trajectory], DemoReport]:
    """Score every checkpoint (deterministic episodes), pick the one nearest ``target_fraction``
    of the best score, and roll out ``n_demos`` deterministic demos from it (with
    ``fraction_tolerance``: demos whose own returns lie near the target, from the nearest
    checkpoint that gives them)."""
    if not checkpoints:
        raise InvalidDataError("checkpoints is empty: train a demonstrator first")
    venv = make_venv(config.seed + 1)
    try:
        scores = {}
        for k, path in enumerate(checkpoints):
            model = load_demonstrator(algorithms[config.algo], path)
            episodes = demos_from_policy(venv, model, config.eval_episodes, rng, seed=config.seed + 100 + k)
            scores[path.name] = float(np.mean([t.ret for t in episodes]))
        best = max(scores.values())
        base = 0.0
        if config.baseline == "random":
            randoms = collect_trajectories(venv, None, rng, n_episodes=config.eval_episodes,
                                           seed=config.seed + 99)[: config.eval_episodes]
            base = float(np.mean([t.ret for t in randoms]))
        if best <= base:
            raise InvalidDataError(
                f"the demonstrator's best checkpoint return {best:.4g} is not above the baseline "
                f"({config.baseline}: {base:.4g}), so a fraction of it is undefined (train longer, "
                "or use baseline='random' for an env with negative returns)"
            )
        path, demos = _pick_demos(venv, checkpoints, scores, config, algorithms, rng, base, best)
    finally:
        venv.close()
    returns = [float(t.ret) for t in demos]
    report = DemoReport(
        checkpoint=path.name, checkpoint_step=checkpoint_step(path), checkpoint_returns=scores,
        best_return=best, baseline_return=base, target_fraction=config.target_fraction,
        demo_returns=returns, fraction=(float(np.mean(returns)) - base) / (best - base),
    )
    return demos, report


def _pick_demos(venv: VecEnv, checkpoints: list[Path], scores: dict[str, float], config: DemonstratorConfig,
                algorithms: dict[str, type[BaseAlgorithm]], rng: np.random.Generator, base: float,
                best: float) -> tuple[Path, list[Trajectory]]:
    target = base + config.target_fraction * (best - base)
    nearest = sorted(checkpoints, key=lambda p: abs(scores[p.name] - target))  # stable: ties in step order
    tolerance = config.fraction_tolerance
    if tolerance is None:  # the first draw of the nearest checkpoint, whatever its return
        nearest, tries, tolerance = nearest[:1], 1, float("inf")
    else:
        tries = config.demo_tries
    seen = []
    for path in nearest:
        model = load_demonstrator(algorithms[config.algo], path)
        kept: list[Trajectory] = []
        for attempt in range(tries):  # attempt 0: the seed a single draw always had
            batch = demos_from_policy(venv, model, config.n_demos, rng, seed=config.seed + 1000 + attempt)
            fractions = [(float(t.ret) - base) / (best - base) for t in batch]
            seen += fractions
            kept += [t for t, f in zip(batch, fractions, strict=True)
                     if abs(f - config.target_fraction) <= tolerance]
            if len(kept) >= config.n_demos:
                return path, kept[: config.n_demos]
    raise InvalidDataError(
        f"no checkpoint gave {config.n_demos} demo(s) within {config.target_fraction} +/- "
        f"{config.fraction_tolerance} of the best return {best:.4g} in {tries} draws each; the "
        f"fractions seen ranged {min(seen):.2f}-{max(seen):.2f} (raise demos.fraction_tolerance or "
        "demos.demo_tries, or train the demonstrator longer)")


def save_demo_set(demos: list[Trajectory], report: DemoReport, out_dir: str | os.PathLike[str],
                  frame_stack: int = 1) -> Path:
    """``demos.npz`` + ``demos.json`` (the report) in ``out_dir``; returns the npz path. Pixel
    demos stacked ``frame_stack`` frames deep are written with each frame once."""
    directory = Path(out_dir)
    path = save_demos(demos, directory / "demos.npz", frame_stack)
    atomic_write_json(directory / "demos.json", asdict(report))
    return path


def read_demo_report(out_dir: str | os.PathLike[str]) -> DemoReport:
    path = Path(out_dir) / "demos.json"
    try:
        return DemoReport(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError) as error:
        raise FileFormatError(f"{path}: not a demo report ({error})") from None


def load_demonstrator(algo: type[BaseAlgorithm], path: Path) -> BaseAlgorithm:
    """A saved demonstrator checkpoint, for acting (``algo``, or ``DrQSAC`` from pixels)."""
    return load_agent({algo.__name__: algo, DrQSAC.__name__: DrQSAC}, path)
