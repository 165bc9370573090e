"""How well does D-REX's behaviour cloning imitate the one demonstration, as rlkit trains it and as
APEC's reference implementation does?

One command:  python experiments/apec_drex_bc_check.py [--config FILE] [key=value ...]
              [--bc-seeds N] [--episodes N]

D-REX's preferences compare a cloned policy's episodes at different levels of eps-random actions,
so the clone's own return is the best behaviour its data shows. For each task of an APEC
experiment (``--config`` as ``experiments/apec.py``'s, default its config) whose demos exist, the
true return of clones trained on them, ``--bc-seeds`` initialisations per variant, each played for
``--episodes`` deterministic episodes (the same env seeds for every clone):

- ``rlkit``: ``rlkit.apec.drex.train_bc`` as the experiment runs it (64x64 MLP, MSE, the config's
  ``drex.bc_epochs`` passes over 256-state minibatches, Adam lr 1e-3) on every step of the demo,
  a terminated demo's absorbing steps included;
- ``rlkit, real steps``: the same on the demo's real steps only (its absorbing steps left out,
  as the reference masks them; the same as ``rlkit`` on a task that never terminates);
- ``reference net, MSE``: the reference's clone (``apec_mjc/epsilon_noise_sample.py:97-121``,
  ``utils/epsilon_utils.py:6-37``): 256x256 MLP, 2,000 full-batch Adam steps, lr 1e-4, weight
  decay 1e-3 (``parameter/Parameter.py:131-144``), on the real steps, with MSE;
- ``reference as released``: the same with the reference's own loss,
  ``((prediction - action).sum(-1) * mask).square().mean()``: the action errors are summed over
  the action's dimensions before squaring, so errors of opposite sign cancel.

Per (task, variant): each clone's mean return over its episodes, and over the clones the mean,
sample sd (ddof = 1), 95% t-interval and n (clones). Writes ``drex_bc_check.json`` in ``out_dir``
and prints a JSON line per (task, variant).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rlkit.scale.command import exit_status

CONFIG = Path(__file__).parent / "configs" / "apec.yaml"
VARIANTS = ("rlkit", "rlkit, real steps", "reference net, MSE", "reference as released")
REFERENCE_STEPS = 2000  # epsilon_noise_sample.py:112, full-batch
REFERENCE_HIDDEN = (256, 256)  # epsilon_noise_sample.py:104
REFERENCE_LR, REFERENCE_WEIGHT_DECAY = 1e-4, 1e-3  # Parameter.py:131, 135 (r_lr, r_weight_decay)


def bc_loss(prediction: torch.Tensor, actions: torch.Tensor, kind: str) -> torch.Tensor:
    """The clone's loss: ``mse`` (per action dimension), or ``released``, the reference's: the
    error summed over the action's dimensions, then squared (epsilon_noise_sample.py:117)."""
    error = prediction - actions
    return error.square().mean() if kind == "mse" else error.sum(-1).square().mean()


def reference_clone(demos: Sequence[Any], action_space: Any, seed: int, loss: str,
                    steps: int = REFERENCE_STEPS) -> Any:
    """The reference's behaviour cloning: ``steps`` full-batch Adam steps of a 256x256 MLP with
    ``loss`` (``bc_loss``); its initial weights from ``seed``; leaves torch's global RNG alone."""
    from rlkit.apec.drex import BCPolicy

    states = np.concatenate([d.obs[:-1] for d in demos]).astype(np.float32)
    obs = torch.as_tensor(states.reshape(len(states), -1))
    actions = torch.as_tensor(np.concatenate([d.acts.reshape(len(d), -1) for d in demos]),
                              dtype=torch.float32)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        policy = BCPolicy(states.shape[1:], action_space, REFERENCE_HIDDEN)
        optimizer = torch.optim.Adam(policy.parameters(), lr=REFERENCE_LR,
                                     weight_decay=REFERENCE_WEIGHT_DECAY)
        for _ in range(steps):
            value = bc_loss(policy(obs), actions, loss)
            optimizer.zero_grad()
            value.backward()
            optimizer.step()
    return policy.train(False)


def clone(variant: str, demos: Sequence[Any], action_space: Any, seed: int, bc_epochs: int,
          flagged: bool) -> Any:
    """One clone of ``demos`` trained as ``variant`` (one of ``VARIANTS``) from ``seed``."""
    from rlkit.apec.drex import DrexConfig, train_bc
    from rlkit.apec.rollouts import real_part

    real = [real_part(d) for d in demos] if flagged else list(demos)
    if variant == "rlkit":
        return train_bc(demos, action_space, DrexConfig(bc_epochs=bc_epochs, seed=seed))
    if variant == "rlkit, real steps":
        return train_bc(real, action_space, DrexConfig(bc_epochs=bc_epochs, seed=seed))
    if variant == "reference net, MSE":
        return reference_clone(real, action_space, seed, "mse")
    if variant == "reference as released":
        return reference_clone(real, action_space, seed, "released")
    raise ValueError(f"variant {variant!r}: one of {VARIANTS}")


def clone_returns(demos: Sequence[Any], make_venv: Callable[[int], Any], flagged: bool, bc_epochs: int,
                  bc_seeds: int, episodes: int, variants: Sequence[str] = VARIANTS) -> list[dict[str, Any]]:
    """Each variant's clones and their true returns on the same ``episodes`` env seeds.

    Args:
        demos: the demonstrations cloned.
        make_venv: the task's env factory (a seed in, a one-env VecEnv out).
        flagged: do the observations end with an absorbing flag (a padded task)?
        bc_epochs: rlkit's passes (the experiment's ``drex.bc_epochs``).
        bc_seeds: clones per variant (initial weights and minibatch order 0..bc_seeds-1).
        episodes: deterministic episodes per clone.
        variants: which of ``VARIANTS``.

    Returns:
        A row per variant: ``clone_returns`` (each clone's mean episode return), ``episode_returns``
        (per clone), and over the clones ``mean``, ``sd`` (ddof = 1), ``ci95`` and ``n``.
    """
    from experiments.stats import Spread  # by name: a script puts the repo root on sys.path first
    from rlkit.data.rollout import collect_trajectories

    rows = []
    for variant in variants:
        per_clone = []
        for seed in range(bc_seeds):
            venv = make_venv(10_000)
            try:
                policy = clone(variant, demos, venv.action_space, seed, bc_epochs, flagged)
                played = collect_trajectories(venv, policy.act, np.random.default_rng(seed),
                                              n_episodes=episodes, seed=10_000)[:episodes]
            finally:
                venv.close()
            per_clone.append([float(t.rews.sum()) for t in played])
        spread = Spread.of([float(np.mean(r)) for r in per_clone])
        rows.append({"variant": variant, "episode_returns": per_clone,
                     "clone_returns": [float(np.mean(r)) for r in per_clone], "mean": spread.mean,
                     "sd": spread.sd, "ci95": [spread.low, spread.high], "n": spread.n})
    return rows


def main(argv: list[str] | None = None) -> int:
    """The check for every task of ``argv``'s config whose demos exist; returns the exit status."""
    import json

    from experiments.apec import demo_dir, task_config
    from experiments.apec_checks import check_command_line
    from rlkit.ail.demos import load_demos
    from rlkit.runners.apec import venv_factory

    def add_arguments(parser: Any) -> None:
        parser.add_argument("--bc-seeds", type=int, default=3)
        parser.add_argument("--episodes", type=int, default=5)

    args, config = check_command_line(argv, __doc__, CONFIG, add_arguments)
    out = Path(config.out_dir)
    results = []
    for task in config.tasks:
        path = demo_dir(config, task, out) / "demos" / "demos.npz"
        if not path.is_file():
            continue
        pipeline = task_config(config, task, config.demo_seed)
        demos = load_demos(path)
        for row in clone_returns(demos, venv_factory(pipeline.env), pipeline.env.horizon is not None,
                                 pipeline.drex.bc_epochs, args.bc_seeds, args.episodes):
            results.append({"task": task.id, "demo_return": float(np.mean([d.ret for d in demos])), **row})
            print(json.dumps(results[-1]), flush=True)
    if not results:
        print(f"no task's demos under {out}", file=sys.stderr)
        return 1
    (out / "drex_bc_check.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `experiments` by name
    sys.exit(exit_status(main, Path(__file__).name))
