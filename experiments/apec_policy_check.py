"""Why does a policy trained on a learned reward fail: is the reward wrong, or the optimisation?

One command:  python experiments/apec_policy_check.py [--config FILE] [key=value ...]

For every finished (task, seed) of an APEC experiment (``experiments/apec.py`` or
``experiments/apec_pixels.py``; ``--config`` as theirs, default the pixel one) and every method
whose policy was trained, the learned and the true return of four groups of episodes:

- the policy: ``policy.agent.eval_episodes`` deterministic episodes of the saved agent on the
  final evaluation's env seeds (the episodes its reported return is the mean of);
- the demonstrations the run imitated;
- random play: as many episodes of uniformly random actions;
- the other methods' policies (``other_policies``): their episodes as above, paid this reward.

A policy whose learned return exceeds the demonstrations' while its true return stays below them
has found what the reward pays for and the task does not (the reward is exploitable); one whose
learned return stays below the demonstrations' was not optimised far enough to tell; a reward
that pays another method's better policy less than its own policy ranks the two wrongly. Learned
returns are the sum of the reward as the policy was paid (``policy.reward_on``). Writes
``policy_check.json`` in ``out_dir`` and prints a JSON line per (task, seed, method).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from rlkit.scale.command import exit_status

CONFIG = Path(__file__).parent / "configs" / "apec_pixels.yaml"


def returns(trajectories: list[Any], reward_fn: Any) -> dict[str, float]:
    """Mean learned and true return of ``trajectories``, and how many."""
    learned = [float(np.sum(reward_fn(t.obs[:-1], t.acts, t.obs[1:], np.zeros(len(t.acts), bool))))
               for t in trajectories]
    return {"learned": float(np.mean(learned)), "true": float(np.mean([t.ret for t in trajectories])),
            "n": len(trajectories)}


def check_run(run_dir: Path, methods: list[str]) -> list[dict[str, Any]]:
    """The three groups' returns for each method's policy in one finished run directory."""
    from rlkit.ail.demos import load_demos
    from rlkit.apec.config import ApecConfig
    from rlkit.apec.pair_config import RolloutConfig
    from rlkit.apec.rollouts import policy_rollouts
    from rlkit.config import load_config
    from rlkit.factories.algorithms import ALGORITHMS
    from rlkit.persistence.agents import load_agent
    from rlkit.reward import load_reward_model
    from rlkit.reward.numpy_rewards import TorchRewardFn
    from rlkit.runners.apec import venv_factory
    from rlkit.runners.apec_policy import evaluation_episodes, paid_reward

    config = load_config(ApecConfig, run_dir / "config.yaml", [])
    make_venv = venv_factory(config.env)
    episodes = config.policy.agent.eval_episodes
    demos = load_demos(run_dir / "demos" / "demos.npz")
    venv = make_venv(config.seed + 20_000)
    try:
        def random_actions(obs: np.ndarray) -> np.ndarray:
            return np.stack([venv.action_space.sample() for _ in obs])

        venv.action_space.seed(config.seed)
        random_play, _ = policy_rollouts([(0, random_actions)], venv, np.random.default_rng(config.seed),
                                         RolloutConfig(per_checkpoint=episodes))
    finally:
        venv.close()
    trained = [m for m in methods if (run_dir / "policies" / m / "agent.zip").is_file()]
    policies = {m: evaluation_episodes(config, make_venv,
                                       load_agent(ALGORITHMS, run_dir / "policies" / m / "agent"))
                for m in trained}
    rows = []
    for method in trained:
        reward_fn = paid_reward(TorchRewardFn(load_reward_model(run_dir / "rewards" / method).model),
                                config.policy.reward_on)
        rows.append({"method": method, "policy": returns(policies[method], reward_fn),
                     "other_policies": {m: returns(policies[m], reward_fn) for m in trained if m != method},
                     "demos": returns(demos, reward_fn), "random": returns(list(random_play), reward_fn)})
    return rows


def main(argv: list[str] | None = None) -> int:
    """The policy check of every finished run of ``argv``'s config; returns the exit status."""
    from experiments.apec_checks import check_finished_runs  # by name: a script puts the repo root first

    return check_finished_runs(argv, __doc__, CONFIG, check_run, lambda pipeline: pipeline.policy.methods,
                               "policy_check.json")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `experiments` by name
    sys.exit(exit_status(main, Path(__file__).name))
