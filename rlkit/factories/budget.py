"""How many updates a training budget gives an SB3 agent (and pref-rl's reward model), known
before the run, so a budget that would train nothing is refused and one that trains very little
is warned about.

SB3's own arithmetic, which the counts follow exactly:

- on-policy (PPO, A2C): ``learn`` collects rollouts of ``n_steps`` steps per env
  (``n_steps * n_envs`` env steps) and trains after each whole one; PPO's ``_n_updates`` grows
  by ``n_epochs`` per rollout (fewer if ``target_kl`` stops an update early), A2C's by one.
  A plain ``learn(total)`` runs until ``num_timesteps >= total``, so it finishes the rollout the
  total falls inside (``ceil``); a run that stops at its budget (pref-rl's loop) trains only on
  the rollouts that end by the budget (``floor``).
- off-policy (SAC, TD3, DrQ-SAC): it collects ``train_freq`` steps per env, then, once
  ``num_timesteps > learning_starts``, makes ``gradient_steps`` gradient steps (``-1``: as many
  as the env steps just collected); ``_n_updates`` counts gradient steps. A ``train_freq`` in
  episodes has no count known before the run (``None``).

A run's *trainings* are the times SB3's ``train()`` runs (rollouts trained on, or off-policy
train calls); ``updates`` is what SB3 records in ``_n_updates``. Zero trainings is refused
(``ConfigError``); fewer than ``FEW_TRAININGS`` is warned about, and in pref-rl fewer than
``FEW_REFITS`` reward refits after the first fit.
"""

from __future__ import annotations

import inspect
import logging
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rlkit.errors import ConfigError
from rlkit.factories.hyperparams import resolve_hyperparams

if TYPE_CHECKING:
    from stable_baselines3.common.base_class import BaseAlgorithm

    from rlkit.factories.configs import AgentConfig, EnvConfig, PrefRLConfig

log = logging.getLogger(__name__)

#: fewer trainings of the agent than this is warned about (it has barely learned anything)
FEW_TRAININGS = 5
#: fewer reward refits after pref-rl's first fit than this is warned about
FEW_REFITS = 3


@dataclass(frozen=True)
class Schedule:
    """How an SB3 algorithm turns env steps (all envs together) into updates."""

    algo: str
    on_policy: bool
    n_envs: int
    steps_per_training: int  # env steps collected between two trainings
    updates_per_training: int  # what one training adds to ``_n_updates`` (PPO: at most)
    learning_starts: int  # off-policy: no training until num_timesteps exceeds it (0 on-policy)
    why: str  # the settings, as a sentence's end ("once per rollout of n_steps=2048 x 4 envs")


@dataclass(frozen=True)
class AgentPlan:
    """What a budget gives an agent: ``trainings`` (SB3 ``train()`` calls) and ``updates`` (its
    ``_n_updates`` after them; PPO's with ``target_kl`` may come out lower)."""

    schedule: Schedule
    trainings: int
    updates: int
    start: int  # num_timesteps when the agent starts collecting
    first_training_at: int  # num_timesteps at the end of the first collection it trains on

    def budget_for(self, n: int) -> int:
        """The smallest budget that gives ``n`` trainings (with the same start)."""
        return self.first_training_at + (n - 1) * self.schedule.steps_per_training


@dataclass(frozen=True)
class PrefRLPlan:
    """What ``rlkit pref-rl``'s budget gives: the random steps before the first query, the
    agent's plan, and the query rounds the budget allows after the first (``query.max_pairs``
    may end them sooner; 0 for ``reward=env``)."""

    random_steps: int
    agent: AgentPlan | None
    rounds_after_first: int


def schedule(config: AgentConfig, n_envs: int, env_id: str) -> Schedule | None:
    """The update schedule of ``config``'s algorithm with its settings (``agent.kwargs`` over
    ``agent.hyperparams`` over SB3's defaults) on ``n_envs`` envs; None when it cannot be known
    before the run (a ``train_freq`` counted in episodes).

    Args:
        config: the agent section (``hyperparams`` still ``auto``/``zoo`` are resolved as
            ``make_agent`` would; a loaded config holds the settings themselves).
        n_envs: the number of envs it steps at once.
        env_id: the env it trains on (what ``auto``/``zoo`` are resolved for).

    Returns:
        The schedule, or None.
    """
    from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm

    from rlkit.factories.algorithms import ALGORITHMS

    algorithm = ALGORITHMS[config.algo]
    defaults = {name: p.default for name, p in inspect.signature(algorithm.__init__).parameters.items()
                if p.default is not inspect.Parameter.empty}
    resolved: str | dict[str, Any] = config.hyperparams
    if not isinstance(resolved, dict) and resolved != "sb3":
        resolved = resolve_hyperparams(resolved, env_id, config.algo).hyperparams
    hyperparams = resolved if isinstance(resolved, dict) else {}
    settings: dict[str, Any] = {**defaults, **hyperparams, **config.kwargs}
    if issubclass(algorithm, OnPolicyAlgorithm):
        n_steps = int(settings["n_steps"])
        epochs = int(settings.get("n_epochs", 1))
        per_rollout = f" ({epochs} epochs each)" if "n_epochs" in defaults else ""
        return Schedule(config.algo, True, n_envs, n_steps * n_envs, epochs, 0,
                        f"once per rollout of n_steps={n_steps} x env.n_envs={n_envs} = "
                        f"{n_steps * n_envs} env steps{per_rollout}")
    frequency, unit = _train_freq(settings["train_freq"])
    if unit != "step":
        return None
    steps = frequency * n_envs
    gradient_steps = int(settings["gradient_steps"])
    return Schedule(config.algo, False, n_envs, steps, steps if gradient_steps < 0 else gradient_steps,
                    int(settings["learning_starts"]),
                    f"every train_freq={frequency} x env.n_envs={n_envs} = {steps} env steps after "
                    f"learning_starts={settings['learning_starts']} (gradient_steps={gradient_steps})")


def _train_freq(value: Any) -> tuple[int, str]:
    if isinstance(value, (list, tuple)):
        return int(value[0]), str(value[1])
    if hasattr(value, "frequency"):  # SB3's TrainFreq
        return int(value.frequency), str(value.unit.value)
    return int(value), "step"


def trainings(plan: Schedule, start: int, end: int, stops_at_end: bool,
              learning_starts: int | None = None) -> int:
    """How many times SB3 trains between ``num_timesteps`` ``start`` and ``end``.

    Args:
        plan: the algorithm's schedule.
        start: ``num_timesteps`` when ``learn`` begins.
        end: the total it runs to.
        stops_at_end: the run is stopped at ``end`` (pref-rl's loop): only collections that end
            by then are trained on; otherwise SB3 finishes the one ``end`` falls inside.
        learning_starts: the agent's (absolute) ``learning_starts``, when not the schedule's.

    Returns:
        The number of trainings (0 when ``end <= start``).
    """
    if end <= start or plan.updates_per_training == 0:  # (gradient_steps=0: SB3 never trains)
        return 0
    step = plan.steps_per_training
    last = (end - start) // step if stops_at_end else -(-(end - start) // step)
    return max(0, last - _first(plan, start, learning_starts) + 1)


def _first(plan: Schedule, start: int, learning_starts: int | None) -> int:
    """The index (from 1) of the first collection after ``start`` that is trained on."""
    if plan.on_policy:
        return 1
    threshold = plan.learning_starts if learning_starts is None else learning_starts
    return max(1, (threshold - start) // plan.steps_per_training + 1)  # the first ending past it


def _agent_plan(plan: Schedule, start: int, count: int, learning_starts: int | None = None) -> AgentPlan:
    first = start + _first(plan, start, learning_starts) * plan.steps_per_training
    return AgentPlan(plan, count, count * plan.updates_per_training, start, first)


def plan_agent(config: AgentConfig, env: EnvConfig, stops_at_budget: bool = False) -> AgentPlan | None:
    """What ``config.total_timesteps`` gives an agent trained from scratch by one ``learn``.

    Args:
        config: the agent section.
        env: the env section (its ``n_envs`` and ``id``).
        stops_at_budget: the run stops at exactly its budget (``StopAtBudget``; see ``trainings``).

    Returns:
        The plan, or None when the schedule cannot be known before the run.
    """
    plan = schedule(config, env.n_envs, env.id)
    if plan is None:
        return None
    return _agent_plan(plan, 0, trainings(plan, 0, config.total_timesteps, stops_at_budget))


def plan_prefrl(config: PrefRLConfig) -> PrefRLPlan:
    """What ``config``'s budget gives ``rlkit pref-rl`` (``rlkit.prefrl.loop`` runs it so): with
    the learned reward, ``query.every_steps`` random env steps (rounded up to whole steps of the
    envs) come first and the agent trains on the rest, stopped at the budget; each round after
    the first comes ``every_steps`` (so rounded) after the one before, the last possibly at the
    budget itself. With ``reward=env`` the agent trains on the whole budget and nothing is
    queried. (PEBBLE's exploration steps, ``query.unsupervised_steps``, are counted as the
    agent's own: it trains on them too.)

    Args:
        config: the command's config.

    Returns:
        The plan.
    """
    n_envs, budget = config.env.n_envs, config.agent.total_timesteps
    if config.reward == "env":
        return PrefRLPlan(0, plan_agent(config.agent, config.env, stops_at_budget=True), 0)
    period = -(-config.query.every_steps // n_envs) * n_envs
    random_steps = period
    plan = schedule(config.agent, n_envs, config.env.id)
    agent = None
    if plan is not None:
        explored = -(-config.query.unsupervised_steps // n_envs) * n_envs
        start = random_steps - explored  # the agent's clock starts after the seed steps
        learning_starts = plan.learning_starts + start
        explore = trainings(plan, start, random_steps, False, learning_starts) if explored else 0
        if explored:  # PEBBLE's exploration: a learn of its own, not stopped at its end
            start += -(-explored // plan.steps_per_training) * plan.steps_per_training
            learning_starts = min(learning_starts, start)
        own = trainings(plan, start, budget, True, learning_starts)
        agent = _agent_plan(plan, start, explore + own, learning_starts)
    rounds = max(0, budget - random_steps) // period
    return PrefRLPlan(random_steps, agent, rounds)


def check_agent(plan: AgentPlan | None, budget_field: str, budget: int, start: str = "") -> list[str]:
    """Refuse a plan that never trains the agent; return warnings for one that barely does.

    Args:
        plan: the agent's plan (None: unknown before the run; nothing is checked).
        budget_field: the config field of the budget (``agent.total_timesteps``).
        budget: its value.
        start: how the run spends steps before the agent's own (a clause, or empty).

    Returns:
        The warnings (empty when there are none).

    Raises:
        ConfigError: when the budget gives the agent no training at all.
    """
    if plan is None:
        return []
    sched = plan.schedule
    said = (f"{budget_field}={budget} gives the {sched.algo} agent {plan.trainings} training"
            f"{'' if plan.trainings == 1 else 's'} ({plan.updates} SB3 updates): it trains {sched.why}"
            f"{start}")
    advice = _advice(plan, budget_field, budget)
    if plan.trainings == 0:
        raise ConfigError(f"{said}, so it would never be updated and the run would report an "
                          f"untrained policy; {advice}")
    if plan.trainings < FEW_TRAININGS:
        return [f"{said}; fewer than {FEW_TRAININGS} trainings barely move a policy: {advice}"]
    return []


def _advice(plan: AgentPlan, budget_field: str, budget: int) -> str:
    sched = plan.schedule
    raise_it = f"raise {budget_field} to {plan.budget_for(FEW_TRAININGS)} for {FEW_TRAININGS} trainings"
    if plan.trainings == 0:
        raise_it = (f"raise {budget_field} to at least {plan.budget_for(1)} for one training "
                    f"({plan.budget_for(FEW_TRAININGS)} for {FEW_TRAININGS})")
    if not sched.on_policy:
        return (f"{raise_it}, or lower agent.kwargs' learning_starts (now {sched.learning_starts}) "
                "or train_freq")
    n_steps = (budget - plan.start) // (FEW_TRAININGS * sched.n_envs)
    if n_steps < 2:
        return raise_it
    return (f"{raise_it}, or shorten the rollouts: agent.kwargs={{n_steps: {n_steps}}} gives "
            f"{FEW_TRAININGS} (a batch_size of at most n_steps x env.n_envs)")


def check_prefrl(config: PrefRLConfig) -> list[str]:
    """``check_agent`` for ``rlkit pref-rl``, and with the learned reward its query rounds: a
    budget with no round after the first fit (the reward never learns from the agent's own
    behaviour) is refused unless ``query.max_pairs`` asks for no more labels anyway; fewer than
    ``FEW_REFITS`` rounds are warned about.

    Args:
        config: the command's config.

    Returns:
        The warnings.

    Raises:
        ConfigError: naming the fields to change, when the budget would train nothing.
    """
    plan = plan_prefrl(config)
    budget = config.agent.total_timesteps
    start = ("" if config.reward == "env" else
             f", after the {plan.random_steps} random env steps of the first query "
             f"(query.every_steps={config.query.every_steps})")
    warnings = check_agent(plan.agent, "agent.total_timesteps", budget, start)
    if config.reward == "env" or not _wants_more_labels(config):
        return warnings
    said = (f"agent.total_timesteps={budget} with query.every_steps={config.query.every_steps} "
            f"gives {plan.rounds_after_first} query round{'' if plan.rounds_after_first == 1 else 's'} "
            f"after the first (at step {plan.random_steps})")
    advice = (f"lower query.every_steps (e.g. {max(1, budget // (FEW_REFITS + 1))}, which also "
              "shortens the random start) or raise agent.total_timesteps")
    if plan.rounds_after_first == 0:
        raise ConfigError(f"{said}: the reward model would be fitted once, on random behaviour, and "
                          f"never refit on the agent's; {advice}")
    if plan.rounds_after_first < FEW_REFITS:
        warnings.append(f"{said}; fewer than {FEW_REFITS} refits: {advice}")
    return warnings


def _wants_more_labels(config: PrefRLConfig) -> bool:
    limit = config.query.max_pairs
    return limit is None or limit > config.query.initial_pairs


def announce(warnings: list[str], command: str) -> None:
    """Say each warning on the console (``rlkit COMMAND: warning: ...`` on stderr) and to the
    ``logging`` handlers when there are any.

    Args:
        warnings: what ``check_agent``/``check_prefrl`` returned.
        command: the command's name.
    """
    for text in warnings:
        print(f"rlkit {command}: warning: {text}", file=sys.stderr, flush=True)
        if log.hasHandlers():
            log.warning(text)


def agent_updates(agent: BaseAlgorithm) -> int:
    """The updates an SB3 agent has made (its ``_n_updates``: PPO epochs over rollouts, A2C
    rollouts, off-policy gradient steps)."""
    return int(agent._n_updates)
