"""Every reward pool M3HF's feedback builds, scored against waiting before any training (issue 37).

One command (from the repository root):
    python experiments/m3hf_pools.py [--episodes N] [--out DIR]
    python experiments/m3hf_pools.py --parser llm --base-url URL --model NAME   # the LLM arm

Scripted teams play Overcooked map A (lettuce-tomato salad, 3 agents, macro actions, 200
steps), each episode seeded, all with the same noise (an idle agent's decision replaced by a
random macro with probability ``EPSILON``): ``deliver`` (``ScriptedChef``: cooks and delivers the
salad) and the waiting teams: ``cook_and_wait`` (the chef that never delivers: chops, plates and
waits holding the dish), ``hold_and_wait_k`` (each agent fetches one item, then stands holding it;
k = 0..4 rotates who holds which of ``HELD``, so each agent holds each item in one of them; k = 0 is
the good script's assignment) and ``stand_still``. Every
function a parsed text can add to a pool is evaluated on every step of their episodes as the
trainer evaluates it (``features()`` after the step, each agent's macro in effect). A pool is a
weighted sum of functions, built as ``rlkit.m3hf.loop`` builds it (``TeamPools.update`` with the
arm's weight rule, all of a phase's specs at once), so its per-agent return is the same weighted
sum of the functions' returns. The pools:

- ``arm``: for every arm of ``experiments/configs/m3hf.yaml`` with feedback, each seed and phase,
  with "improved" True at every phase after the first and False at every one (the two extremes of
  the performance step); a simulated teacher's texts are drawn as the run draws them
  (``loop.make_source``) from the rollout of the noiseless ``hold_and_wait_0`` team (the trained policies
  a person would watch are not kept); scored at the arm's shaping scale;
- ``teacher text``: each distinct text the simulated teacher writes on any prefix of the three
  noiseless teams' rollouts, and its irrelevant texts, alone in a pool;
- ``paraphrase``: each text of ``experiments/data/m3hf_paraphrases.yaml`` alone in a pool (texts
  written without the rule parser's keyword table; their parse is also judged against the meaning
  their writer intended, ``experiments/m3hf_parse_check.py``).

A pool "pays waiting more" (at shaping scale s) when, for some agent with functions in it and
some waiting team, that agent's mean shaped return (env return + s x its pool's return) over the
episodes is higher for the waiting team than for the delivering team. Writes ``<prefix>_rows.jsonl``
(one row per team episode and per (function, team)), ``<prefix>_summary.json``, ``<prefix>.png``
and the tables of ``docs/results/m3hf.md`` between its ``<!-- m3hf-pools -->`` markers (the LLM
arm: ``m3hf_pools_llm_*`` and ``<!-- m3hf-pools-llm -->``, appended to the page the first time).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from envs.overcooked.parallel import OvercookedParallelEnv
from envs.overcooked.scripted import ScriptedChef
from envs.overcooked.scripted_teams import HoldAndWait, NeverDeliver, Noisy, StandStill, Team
from rlkit.m3hf.loop import make_source
from rlkit.m3hf.parser_llm import LLMConfig, LLMParser
from rlkit.m3hf.parser_rule import RuleParser
from rlkit.m3hf.scene import Scene
from rlkit.m3hf.sources import IRRELEVANT, FeedbackRequest, correct_advice, wrong_advice
from rlkit.m3hf.specs import FeedbackParser, RewardSpec
from rlkit.m3hf.templates import compile_term
from rlkit.m3hf.weights import TeamPools, WeightRule

ROOT = Path(__file__).resolve().parents[1]
ARMS_CONFIG = ROOT / "experiments" / "configs" / "m3hf.yaml"
PARAPHRASES = ROOT / "experiments" / "data" / "m3hf_paraphrases.yaml"
EPISODES = 30
EPSILON = 0.1
SCALES = (1.0, 0.3, 0.1)  # the paper's, and the main run's ablations
HELD = ("lettuce", "tomato", "plate_1", "onion", "plate_2")  # held in turn by each agent


Noise = Callable[[Team], Team]


def _holding(shift: int) -> Callable[[OvercookedParallelEnv, Noise], Team]:
    return lambda env, noisy: noisy(HoldAndWait(env, {a: HELD[(i + shift) % len(HELD)]
                                                     for i, a in enumerate(env.possible_agents)}))


# name -> (env, noise) -> team; the noise never delivers for the team that never delivers
TEAMS: dict[str, Callable[[OvercookedParallelEnv, Noise], Team]] = {
    "deliver": lambda env, noisy: noisy(ScriptedChef(env)),
    "cook_and_wait": lambda env, noisy: NeverDeliver(noisy(ScriptedChef(env)), env),
    **{f"hold_and_wait_{k}": _holding(k) for k in range(len(HELD))},
    "stand_still": lambda env, noisy: noisy(StandStill(env)),
}
WAITING = tuple(team for team in TEAMS if team != "deliver")
GAMMA = 0.99  # the main run's PPO discount: "discounted" measures weigh step t (from 0) by GAMMA ** t
MEASURES = ("return", "discounted")
IMPROVED = {"improving": True, "not improving": False}


@dataclass(frozen=True)
class Episodes:
    """One team's episodes, step after step: ``state`` is ``features()`` with the step as game axis."""

    team: str
    seeds: tuple[int, ...]
    state: dict[str, np.ndarray]
    actions: np.ndarray  # (steps, n_agents): each agent's macro in effect
    starts: np.ndarray  # the index of each episode's first step
    discount: np.ndarray  # (steps,) GAMMA ** (the step's index in its episode)
    env_returns: np.ndarray  # (2, episodes): the team's env return, undiscounted and discounted
    delivered: np.ndarray  # (episodes,) ended by a correct delivery
    lengths: np.ndarray


def play(team: str, seeds: Sequence[int], epsilon: float = EPSILON) -> Episodes:
    """Play one episode per seed of ``team`` (``Noisy`` with ``epsilon``, RNG seeded by the seed).

    Args:
        team: a key of ``TEAMS``.
        seeds: the episodes' seeds.
        epsilon: the probability that an idle agent's decision is a random macro.

    Returns:
        The episodes' states, actions in effect and env returns.
    """
    states: list[dict[str, np.ndarray]] = []
    actions, starts, rewards, delivered, lengths = [], [], [], [], []
    for seed in seeds:
        env = OvercookedParallelEnv()
        policy = TEAMS[team](env, _noise(env, epsilon, np.random.default_rng(seed)))
        obs, infos = env.reset(seed=seed)
        starts.append(len(states))
        ended = False
        while env.agents:
            obs, reward, terminated, _, infos = env.step(policy(obs, infos))
            states.append(env.features())
            actions.append(env.actions_in_effect())
            rewards.append(reward[env.possible_agents[0]])
            ended = any(terminated.values())
        delivered.append(ended)
        lengths.append(len(states) - starts[-1])
    stacked = {key: np.stack([s[key] for s in states]) for key in states[0]}
    discount = np.concatenate([GAMMA ** np.arange(n) for n in lengths])
    episodes = Episodes(team, tuple(seeds), stacked, np.asarray(actions, dtype=np.int64), np.asarray(starts),
                        discount, np.zeros(0), np.asarray(delivered), np.asarray(lengths))
    return replace(episodes, env_returns=_sums(episodes, np.asarray(rewards, dtype=np.float64)))


def _noise(env: OvercookedParallelEnv, epsilon: float, rng: np.random.Generator) -> Noise:
    return lambda inner: Noisy(inner, env, epsilon, rng)


def _sums(episodes: Episodes, per_step: np.ndarray) -> np.ndarray:
    """Per-step values (steps, ...) summed over each episode, plain and discounted: (2, episodes, ...)."""
    weights = episodes.discount.reshape(-1, *[1] * (per_step.ndim - 1))
    return np.stack([np.add.reduceat(per_step, episodes.starts, axis=0),
                     np.add.reduceat(per_step * weights, episodes.starts, axis=0)])


def function_key(spec: RewardSpec) -> str:
    """A function's identity, whoever it is for: ``holding(item='tomato', value=1.0)``."""
    return spec.summary().split(": ", 1)[1]


def function_returns(spec: RewardSpec, episodes: Episodes, scene: Scene) -> np.ndarray:
    """Each episode's return of one function for each agent, plain and discounted: (2, episodes, n_agents)."""
    term = compile_term(spec.params, scene)
    per_step = np.stack([term(episodes.state, episodes.actions[:, i], i) for i in range(scene.n_agents)], 1)
    return _sums(episodes, per_step)


@dataclass(frozen=True)
class Pool:
    """One team of pools as the loop would hold it, where it comes from, and its shaping scale."""

    name: str
    group: str
    texts: tuple[tuple[int, str, str], ...]  # (phase, text, quality)
    pools: TeamPools
    scale: float = 1.0
    quality: str = ""
    also: tuple[str, ...] = ()  # other arms, seeds or phases that build the same pools


class Parsed:
    """Each text parsed once (an LLM is asked once per text), with who parsed it."""

    def __init__(self, parser: FeedbackParser, scene: Scene) -> None:
        self.parser, self.scene = parser, scene
        self.cache: dict[str, tuple[list[RewardSpec], str]] = {}

    def __call__(self, text: str) -> list[RewardSpec]:
        if text not in self.cache:
            recorded = getattr(self.parser, "parse_recorded", None)
            if recorded is not None:
                decision = recorded(text, self.scene)
                self.cache[text] = (decision.specs, decision.parser)
            else:
                self.cache[text] = (self.parser.parse(text, self.scene), "rule")
        return self.cache[text][0]


def _built(phases: Sequence[Sequence[RewardSpec]], rule: WeightRule, improved: bool,
           n_agents: int) -> list[TeamPools]:
    """The pools after each phase: ``improved`` None at phase 1 (one generation so far), then fixed."""
    pools, out = TeamPools.empty(n_agents, rule), []
    for k, specs in enumerate(phases):
        pools = pools.update(list(specs), None if k == 0 else improved)
        out.append(pools)
    return out


def arm_pools(parsed: Parsed, stand_in: list[dict[str, np.ndarray]]) -> list[Pool]:
    """Every arm's pools after every phase (seeds of a simulated teacher apart; same pools merged)."""
    from experiments.m3hf import M3HFExperimentConfig, arm_config, arm_seeds
    from rlkit.config import load_config

    config = load_config(M3HFExperimentConfig, ARMS_CONFIG)
    out: dict[str, Pool] = {}
    for arm, settings in config.arms.items():
        if settings.feedback.source == "none":
            continue
        scripted = settings.feedback.source == "scripted"
        for seed in arm_seeds(config, arm)[: 1 if scripted else None]:
            run = arm_config(config, arm, seed)
            texts = []
            for phase in range(1, run.phases + 1):
                source = make_source(run, phase)
                assert source is not None
                request = FeedbackRequest(phase, parsed.scene, None, stand_in, None)
                texts.append([(phase, item.text, item.quality) for item in source.feedback(request)])
            rule = WeightRule(run.alpha, run.beta, run.weight_rule)
            for word, improved in IMPROVED.items():
                phases = [[spec for _, text, _ in phase_texts for spec in parsed(text)]
                          for phase_texts in texts]
                built = _built(phases, rule, improved, parsed.scene.n_agents)
                for k, pools in enumerate(built):
                    if k == 0 and not improved:
                        continue  # phase 1 has no performance step: the same pools either way
                    where = "" if scripted else f" seed {seed}"
                    name = f"{arm}{where}: phase {k + 1}" + ("" if k == 0 else f", {word}")
                    key = json.dumps(pools.to_json(), sort_keys=True) + f"@{run.shaping_scale}"
                    seen = tuple(t for phase_texts in texts[: k + 1] for t in phase_texts)
                    if key in out:
                        out[key] = replace(out[key], also=(*out[key].also, name))
                    else:
                        out[key] = Pool(name, "arm", seen, pools, run.shaping_scale)
    return list(out.values())


def _steps(episodes: Episodes) -> list[dict[str, np.ndarray]]:
    """The episodes' states one by one, as ``FeedbackRequest.states`` holds them."""
    return [{key: value[t] for key, value in episodes.state.items()} for t in range(len(episodes.actions))]


def teacher_text_pools(parsed: Parsed, rollouts: Sequence[Episodes]) -> list[Pool]:
    """Each text the simulated teacher writes on a prefix of a rollout (its first, most useful,
    correct text; every wrong one) and each irrelevant text, alone in a phase-1 pool."""
    texts: dict[str, str] = {}
    for episodes in rollouts:
        states = _steps(episodes)
        for t in range(1, len(states) + 1):
            texts.setdefault(correct_advice(parsed.scene, states[:t])[0], "correct")
            for text in wrong_advice(parsed.scene, states[:t]):
                texts.setdefault(text, "wrong")
    texts |= dict.fromkeys(IRRELEVANT, "irrelevant")
    return [_single(parsed, text, quality, "teacher text", text) for text, quality in texts.items()]


def paraphrase_pools(parsed: Parsed, items: Sequence[dict[str, Any]]) -> list[Pool]:
    """Each paraphrase alone in a phase-1 pool (the reference weight rule's defaults)."""
    return [_single(parsed, item["text"], item["quality"], "paraphrase", f"{item['id']}: {item['text']}")
            for item in items]


def _single(parsed: Parsed, text: str, quality: str, group: str, name: str) -> Pool:
    pools = TeamPools.empty(parsed.scene.n_agents, WeightRule()).update(parsed(text), None)
    return Pool(name, group, ((1, text, quality),), pools, 1.0, quality)


def pool_return(pools: TeamPools, functions: dict[str, dict[str, np.ndarray]], team: str) -> np.ndarray:
    """Each episode's pool return of ``team`` for each agent at scale 1: (2, episodes, n_agents), plain
    and discounted."""
    first = next(iter(functions.values()))[team]
    out = np.zeros_like(first)
    for i, pool in enumerate(pools.pools):
        for entry in pool.entries:
            out[..., i] += entry.weight * functions[function_key(entry.spec)][team][..., i]
    return out


def score(pool: Pool, functions: dict[str, dict[str, np.ndarray]],
          teams: dict[str, Episodes]) -> dict[str, Any]:
    """A pool's summary: its functions and weights per agent, and for each scale, waiting team and
    agent with functions, the paired difference (deliver - waiting) of the shaped return."""
    from experiments.stats import Spread  # by name: a script puts the repo root on sys.path first

    agents = {i: [[function_key(e.spec), round(e.weight, 6)] for e in p.entries]
              for i, p in enumerate(pool.pools.pools) if p.entries}
    returns = {team: pool_return(pool.pools, functions, team) for team in teams} if agents else {}
    scales = (pool.scale,) if pool.group == "arm" else SCALES
    margins: dict[str, Any] = {}  # measure -> scale -> {"worst": spread, "by_team": smallest mean}
    pays: dict[str, Any] = {}  # measure -> scale -> [who is paid more for waiting]
    for m, measure in enumerate(MEASURES):
        margins[measure], pays[measure] = {}, {}
        for scale in (0.0, *scales):  # scale 0: the env reward alone
            found: list[dict[str, Any]] = []
            spreads = {}
            for team in WAITING:
                for i in agents:
                    shaped = {name: teams[name].env_returns[m] + scale * returns[name][m, :, i]
                              for name in ("deliver", team)}
                    spread = spreads[team, i] = Spread.of(list(shaped["deliver"] - shaped[team]))
                    if spread.mean < 0:
                        found.append({"agent": i, "team": team, "margin": spread.mean,
                                      "resolved": bool(spread.high < 0)})
            if spreads:
                (team, i), spread = min(spreads.items(), key=lambda item: item[1].mean)
                margins[measure][str(scale)] = {
                    "worst": {"team": team, "agent": i} | spread.as_dict(),
                    "by_team": {t: round(min(s.mean for (u, _), s in spreads.items() if u == t), 3)
                                for t in WAITING}}
            if scale:
                pays[measure][str(scale)] = found
    return {"name": pool.name, "also": list(pool.also), "group": pool.group, "quality": pool.quality,
            "scale": pool.scale,
            "texts": [list(t) for t in pool.texts], "agents": {str(i): f for i, f in agents.items()},
            "margins": margins, "pays_waiting_more": pays,
            "flagged": bool(pays["return"][str(pool.scale)]),
            "flagged_discounted": bool(pays["discounted"][str(pool.scale)])}


def evaluate(pools: Sequence[Pool], teams: dict[str, Episodes], scene: Scene) -> tuple[
        list[dict[str, Any]], dict[str, dict[str, np.ndarray]]]:
    """Every function of every pool on every team's episodes, then every pool's summary."""
    functions: dict[str, dict[str, np.ndarray]] = {}
    for pool in pools:
        for agent_pool in pool.pools.pools:
            for entry in agent_pool.entries:
                key = function_key(entry.spec)
                if key not in functions:
                    functions[key] = {team: function_returns(entry.spec, ep, scene)
                                      for team, ep in teams.items()}
    return [score(pool, functions, teams) for pool in pools], functions


def rows(teams: dict[str, Episodes], functions: dict[str, dict[str, np.ndarray]]) -> list[dict[str, Any]]:
    """The measurements: one row per team episode, one per (function, team) with every episode's
    return for every agent (episodes in the team's seed order)."""
    out: list[dict[str, Any]] = [
        {"kind": "episode", "team": team, "seed": seed, "env_return": round(float(r), 4),
         "env_return_discounted": round(float(rd), 4), "steps": int(n), "delivered": bool(d)}
        for team, ep in teams.items()
        for seed, r, rd, n, d in zip(ep.seeds, *ep.env_returns, ep.lengths, ep.delivered, strict=True)]
    out += [{"kind": "function", "function": key, "team": team, "seeds": list(teams[team].seeds),
             "returns": np.round(values[0], 4).tolist(),
             "returns_discounted": np.round(values[1], 4).tolist()}
            for key, per_team in functions.items() for team, values in per_team.items()]
    return out


def make_parser(args: argparse.Namespace) -> FeedbackParser:
    """The rule parser, or ``LLMParser`` on ``--base-url`` (falling back to the rule parser on
    failure, recorded per text)."""
    if args.parser == "rule":
        return RuleParser()
    if not args.base_url:
        raise SystemExit("--parser llm needs --base-url (an OpenAI-compatible server) and --model")
    return LLMParser(LLMConfig(model=args.model, base_url=args.base_url))


def main(argv: Sequence[str] | None = None) -> int:
    from experiments.m3hf_parse_check import judge_all, load_paraphrases
    from experiments.m3hf_pools_report import write_outputs

    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=EPISODES, help="episodes per team (seeds 0..N-1)")
    parser.add_argument("--epsilon", type=float, default=EPSILON, help="the teams' noise")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results")
    parser.add_argument("--page", default=str(ROOT / "docs" / "results" / "m3hf.md"),
                        help="the page whose marked section gets the tables ('none': no page)")
    parser.add_argument("--parser", choices=("rule", "llm"), default="rule")
    parser.add_argument("--base-url", default=None, help="the OpenAI-compatible server (--parser llm)")
    parser.add_argument("--model", default="gpt-4o-mini", help="the model name the server knows")
    args = parser.parse_args(argv)
    env = OvercookedParallelEnv()
    scene = Scene.from_env(env)
    parsed = Parsed(make_parser(args), scene)
    seeds = list(range(args.episodes))
    teams = {team: play(team, seeds, args.epsilon) for team in TEAMS}
    noiseless = {team: play(team, [0], 0.0) for team in TEAMS}
    items = load_paraphrases(PARAPHRASES)
    stand_in = _steps(noiseless["hold_and_wait_0"])
    pools = (arm_pools(parsed, stand_in) + teacher_text_pools(parsed, list(noiseless.values()))
             + paraphrase_pools(parsed, items))
    summaries, functions = evaluate(pools, teams, scene)
    judged = judge_all(items, parsed, scene.n_agents)
    prefix = "m3hf_pools" if args.parser == "rule" else "m3hf_pools_llm"
    settings = {"episodes": args.episodes, "epsilon": args.epsilon, "scales": list(SCALES), "gamma": GAMMA,
                "parser": args.parser, "model": args.model if args.parser == "llm" else None,
                "base_url": args.base_url,
                "fallbacks": sum(p == "fallback" for _, p in parsed.cache.values())}
    page = None if args.page == "none" else Path(args.page)
    write_outputs(args.out, prefix, page, settings, teams, rows(teams, functions), summaries, judged)
    flagged = [s["name"] for s in summaries if s["flagged"]]
    print(f"{len(summaries)} pools, {len(flagged)} pay waiting more at their scale; "
          f"written under {args.out} ({prefix}_*)")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `experiments` by name
    from rlkit.scale.command import exit_status

    sys.exit(exit_status(main, Path(__file__).name))
