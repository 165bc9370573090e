"""The M3HF phase loop: train, pause, show a rollout, take feedback, reshape each agent's reward.

Generation 0 trains IPPO on the env reward. Each phase k = 1..``phases`` then: goes back to the
best policies so far (``rollback=best``, the reference's rule; ``last`` trains on), rolls them out
in one game and renders it to a video (logged), asks a ``FeedbackSource`` for texts, parses them
into ``RewardSpec``s, updates every agent's pool (``weights.WeightRule``, told whether the ORIGINAL
return improved between the last two generations), and resumes training with the pools as a
``PoolShaper`` on the env reward. "Performance" (which decides "improved" and "best") is the mean
ORIGINAL return over the generation's training episodes (``performance=train``) or over the
evaluation games (``eval``); every generation is also evaluated on ``eval_games`` fresh games, and
the best generation (``best_generation``) has its policies kept in ``checkpoints/best``. A
generation's row (``generations.jsonl``) counts the PPO updates its training made, per learner
(``agent_updates``: ``MultiAgentPPO.updates`` after its ``learn`` less before).

With a logger, each phase's texts, the specs parsed from them and who parsed them (``rule``,
``llm``, ``fallback``: the LLM failed) are a table ``m3hf/feedback/phase_NNN`` (W&B; a line per
text on the console), and each generation's checkpoint is a version of the W&B artifact
``checkpoint-<run directory's name>``, tagged ``gen_NNN`` (and ``best``).

The run directory is the run's memory. A phase's artefacts (checkpoint, pools, feedback, video)
are written first and ``state.json`` last, atomically, so a run killed at any point restarts at
the last completed generation with its pools and RNG states, and continues as if never stopped.
A run resumed with other settings than it was started with (bar ``phases``: more phases may be
added) is refused, each changed setting named (``rlkit.persistence.resume_config``, ``m3hf``).
``state.json`` (format ``rlkit.m3hf.run``), committed and read through
``rlkit.persistence.run_state`` (command ``m3hf``), holds the SHA-256 of that generation's pools file
and checkpoint header (which covers its policies), so a damaged one is refused by name on resume.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from envs.overcooked.parallel import OvercookedParallelEnv
from envs.overcooked.vector import OvercookedVecEnv
from envs.overcooked.video import record_episode
from rlkit.errors import ConfigError, FileFormatError
from rlkit.logging import Logger, log_artifacts, log_table
from rlkit.logging.local import rewind_metrics
from rlkit.m3hf.parser_llm import LLMParser, make_parser
from rlkit.m3hf.parser_rule import RuleParser, clean_text
from rlkit.m3hf.run_config import M3HFConfig
from rlkit.m3hf.scene import Scene
from rlkit.m3hf.shaping import PoolShaper
from rlkit.m3hf.sources import (
    Feedback,
    FeedbackRequest,
    FeedbackSource,
    Quality,
    ScriptedSource,
    SimulatedSource,
    TerminalSource,
)
from rlkit.m3hf.specs import FeedbackParser, RewardSpec
from rlkit.m3hf.weights import TeamPools, WeightRule
from rlkit.marl import MultiAgentPPO, OvercookedRows, load_checkpoint, save_checkpoint
from rlkit.marl.evaluate import evaluate
from rlkit.persistence import atomic_open, atomic_write_json, tag
from rlkit.persistence.run_state import commit, read_point

log = logging.getLogger(__name__)
STATE_KIND = "rlkit.m3hf.run"
STATE_FORMAT = tag(STATE_KIND)
STATE_FILE = "state.json"
_STATE_FIELDS: dict[str, type | tuple[type, ...]] = {
    "completed": int, "history": list, "best": (dict, type(None)),
}
# config.performance -> the field of a generation's row that "best" and "improved" compare
MEASURES = {"train": "train_original_return", "eval": "original_return"}
MEASURE_TEXT = {
    "train_original_return": "the mean original return of the generation's training episodes",
    "original_return": "the mean original return of the generation's evaluation games",
}
FEEDBACK_COLUMNS = ("text", "quality", "parser", "decision", "specs")


def best_generation(history: list[dict[str, Any]], performance: str) -> dict[str, Any]:
    """The best generation of a run: the one whose ``performance`` measure is highest, that
    measure being the mean ORIGINAL (environment) return, never the shaped one, of
    ``train``: the generation's training episodes (``train_original_return``), or ``eval``: its
    ``eval_games`` evaluation games (``original_return``). Ties go to the earliest generation;
    one without a value (NaN: no training episode ended in it) is never best while another has
    one. ``checkpoints/best`` holds its policies, and ``rollback=best`` starts from them.

    Args:
        history: the generations' rows, in order (``generations.jsonl``), at least one.
        performance: ``config.performance``, ``"train"`` or ``"eval"``.

    Returns:
        ``{"generation", "measure" (the row field compared), "performance" (its value)}``.
    """
    measure = MEASURES[performance]
    values = np.array([row[measure] for row in history], dtype=np.float64)
    index = int(np.argmax(np.where(np.isnan(values), -np.inf, values)))
    return {"generation": history[index]["generation"], "measure": measure,
            "performance": float(values[index])}


def best_line(best: dict[str, Any]) -> str:
    """The best generation said in words: ``best: generation 1 by train_original_return (the mean
    original return of the generation's training episodes) = -2.00``."""
    measure = best["measure"]
    return (f"best: generation {best['generation']} by {measure} ({MEASURE_TEXT[measure]}) "
            f"= {best['performance']:.2f}")


def make_source(config: M3HFConfig, phase: int) -> FeedbackSource | None:
    """The configured source; a simulated teacher's RNG is fixed by (seed, phase), so resumes agree."""
    settings = config.feedback
    if settings.source == "none":
        return None
    if settings.source == "terminal":
        return TerminalSource()
    if settings.source == "web":
        raise ConfigError("feedback.source=web needs the run's label store: "
                          "rlkit.runners.m3hf.make_web_source builds it")
    if settings.source == "simulated":
        rng = np.random.default_rng([config.seed, phase])
        rates: dict[Quality, float] = {quality: rate for quality, rate in settings.rates.items()}
        return SimulatedSource(rates, settings.per_phase, rng)
    if settings.script is not None:
        return ScriptedSource.from_yaml(settings.script, settings.script_quality)
    return ScriptedSource(settings.texts, settings.script_quality)


def make_feedback_parser(config: M3HFConfig) -> FeedbackParser:
    if config.parser == "rule":
        return RuleParser()
    return LLMParser(config.llm) if config.parser == "llm" else make_parser(config.llm)


class M3HFRun:
    """A run directory and the loop over its phases; ``run()`` starts or resumes it."""

    def __init__(
        self,
        config: M3HFConfig,
        run_dir: str | Path,
        logger: Logger | None = None,
        source: FeedbackSource | None = None,
        parser: FeedbackParser | None = None,
    ) -> None:
        """``source``/``parser`` override the configured ones (tests, a custom interface)."""
        self.config, self.run_dir, self.logger = config, Path(run_dir), logger
        self._source, self.parser = source, parser or make_feedback_parser(config)
        if source is None and config.feedback.source == "web":
            raise ConfigError("feedback.source=web: pass the web page's source and parser in "
                              "(rlkit.runners.m3hf.run_m3hf makes them on the run's label store)")
        env = config.env.model_dump()
        self.venv = OvercookedVecEnv(config.num_games, keep_features=True, **env)
        self.rows = OvercookedRows(self.venv)
        self.eval_rows = OvercookedRows(OvercookedVecEnv(config.eval_games, keep_features=True, **env))
        self.scene = Scene.from_env(self.venv)
        self.marl = config.marl.replace(seed=config.seed)

    # ------------------------------------------------------------------ paths
    def _checkpoint(self, generation: int) -> Path:
        return self.run_dir / "checkpoints" / f"gen_{generation:03d}"

    def _pools(self, generation: int) -> Path:
        return self.run_dir / "pools" / f"gen_{generation:03d}.json"

    # ------------------------------------------------------------------ the loop
    def run(self) -> dict[str, Any]:
        """Run (or resume) every phase; returns the final state (history of every generation)."""
        state = self._load_state()
        if state is None:
            trainer = MultiAgentPPO(self.rows, self.marl, self.logger)
            rule = WeightRule(self.config.alpha, self.config.beta, self.config.weight_rule)
            pools = TeamPools.empty(self.venv.n_agents, rule)
            state = {
                "config": self.config.model_dump(mode="json"),  # the API key never dumps
                "completed": -1,
                "history": [],
                "best": None,
            }
            self._train_generation(trainer, pools, state, [])
        else:
            trainer = load_checkpoint(self._checkpoint(state["completed"]), self.rows, self.logger,
                                      device=self.marl.device)
            pools = _load_pools(self._pools(state["completed"]))
            state["best"] = best_generation(state["history"], self.config.performance)
            # the killed generation's rows are logged again as it is trained again
            dropped = rewind_metrics(self.run_dir, after_step=state["history"][-1]["env_steps"])
            log.info("resuming %s after generation %d (%d metric rows after it dropped)",
                     self.run_dir, state["completed"], dropped)
        for phase in range(state["completed"] + 1, self.config.phases + 1):
            trainer = self._rolled_back(trainer, state)
            feedback = self._ask(trainer, phase, state)
            specs = self._parse(feedback, phase, trainer.num_timesteps)
            returns = [row["performance"] for row in state["history"]]
            improved = None if len(returns) < 2 else bool(returns[-1] > returns[-2])
            pools = pools.update(specs, improved)
            self._train_generation(trainer, pools, state, feedback, improved)
        return state

    def _rolled_back(self, trainer: MultiAgentPPO, state: dict[str, Any]) -> MultiAgentPPO:
        """With ``rollback=best`` the next generation starts from the best checkpoint so far (the
        person then watches that policy); its step counter goes on from the steps spent so far."""
        best = state["best"]
        if self.config.rollback == "last" or best["generation"] == state["completed"]:
            return trainer
        log.info("generation %d starts from generation %d's policy (the best so far by %s)",
                 state["completed"] + 1, best["generation"], MEASURES[self.config.performance])
        rolled = load_checkpoint(self.run_dir / "checkpoints" / "best", self.rows, self.logger,
                                 device=self.marl.device)
        rolled.num_timesteps = state["history"][-1]["env_steps"]
        return rolled

    def _train_generation(
        self,
        trainer: MultiAgentPPO,
        pools: TeamPools,
        state: dict[str, Any],
        feedback: list[Feedback],
        improved: bool | None = None,
    ) -> None:
        generation = pools.generation
        shaped = any(pool.entries for pool in pools.pools)
        shaper = PoolShaper(pools, self.scene, self.config.shaping_scale) if shaped else None
        self.rows.shaper = self.eval_rows.shaper = shaper
        first_episode, updates_before = len(trainer.original_returns), trainer.updates()
        trainer.learn(self.config.generation_steps)
        metrics = evaluate(trainer, self.eval_rows, seed=self.config.seed)
        episodes = trainer.original_returns[first_episode:]
        row_eval = metrics["eval/original_return"]
        train_return = float(np.mean(episodes)) if episodes else float("nan")
        row = {
            "generation": generation,
            "env_steps": trainer.num_timesteps,
            "original_return": metrics["eval/original_return"],
            "shaped_return": metrics["eval/shaped_return"],
            "episode_length": metrics["eval/episode_length"],
            "delivered": metrics["eval/terminated"],
            "train_original_return": train_return,
            "train_episodes": len(episodes),
            "agent_updates": {name: n - updates_before[name] for name, n in trainer.updates().items()},
            "performance": train_return if self.config.performance == "train" else row_eval,
            "feedback": len(feedback),
            "feedback_quality": dict(Counter(item.quality for item in feedback)),
            "improved": improved,
            "pool_sizes": [len(pool.entries) for pool in pools.pools],
            "weights": [pool.weights.round(4).tolist() for pool in pools.pools],
        }
        save_checkpoint(trainer, self._checkpoint(generation))
        pools.save(self._pools(generation))
        state["history"].append(row)
        state["best"] = best_generation(state["history"], self.config.performance)
        is_best = state["best"]["generation"] == generation
        if is_best:
            save_checkpoint(trainer, self.run_dir / "checkpoints" / "best")
        log_artifacts(self.logger, {f"checkpoint-{self.run_dir.resolve().name}":
                                    ("model", [self._checkpoint(generation)])},
                      aliases=[f"gen_{generation:03d}", *(["best"] if is_best else [])])
        state["completed"] = generation
        with atomic_open(self.run_dir / "generations.jsonl", "w") as handle:
            handle.writelines(json.dumps(r) + "\n" for r in state["history"])
        if self.logger is not None:  # before state.json: a run killed in between logs it again, once
            scalars = {key: float(value) for key, value in row.items() if isinstance(value, int | float)}
            self.logger.log({f"m3hf/{key}": value for key, value in scalars.items()}, trainer.num_timesteps)
        # last: the generation is now complete; its pools and checkpoint are covered by checksums
        commit(self.run_dir / STATE_FILE, STATE_KIND, "m3hf", state["config"],
               {key: value for key, value in state.items() if key != "config"},
               covers=[self._pools(generation), self._checkpoint(generation) / "meta.json"])
        log.info("generation %d: original return %.2f", generation, row["original_return"])

    def _ask(self, trainer: MultiAgentPPO, phase: int, state: dict[str, Any]) -> list[Feedback]:
        """Pause: roll out one game, render it, and collect the source's feedback."""
        source = self._source or make_source(self.config, phase)
        if source is None:
            return []
        states: list[dict[str, np.ndarray]] = []
        env = OvercookedParallelEnv(**self.config.env.model_dump(), cell_px=self.config.video_cell_px)
        agents = env.possible_agents

        def policy(obs: dict[str, np.ndarray], infos: dict[str, Any]) -> dict[str, int]:
            states.append(env.features())
            actions = trainer.predict(np.stack([obs[a] for a in agents]))
            return {a: int(action) for a, action in zip(agents, actions, strict=True) if a in obs}

        video_path = None
        if self.config.video == "none":
            _play(env, policy)
        else:
            video_path = self.run_dir / "videos" / f"phase_{phase:03d}.{self.config.video}"
            video_path.parent.mkdir(parents=True, exist_ok=True)
            record_episode(env, policy, video_path, self.config.video_fps)
            if self.logger is not None:
                fps = int(self.config.video_fps)
                self.logger.log_video("m3hf/rollout", video_path, trainer.num_timesteps, fps)
        states.append(env.features())
        last_return = state["history"][-1]["original_return"]
        request = FeedbackRequest(phase, self.scene, video_path, states, last_return)
        feedback = source.feedback(request)
        if not feedback:  # e.g. nobody confirmed anything on the web page before feedback.timeout_s
            log.warning("phase %d: no feedback came; training goes on with the pools as they were", phase)
        return feedback

    def _parse(self, feedback: list[Feedback], phase: int, step: int) -> list[RewardSpec]:
        """Every text through the parser; what each became (and, for the LLM parser, every attempt
        and whether it fell back) is written to ``feedback/`` and logged as the phase's table."""
        records, specs, rows = [], [], []
        recorded = getattr(self.parser, "parse_recorded", None)
        for item in feedback:
            if recorded is not None:  # the decision's own record: its texts valid Unicode
                decision = recorded(item.text, self.scene)
                parsed = decision.specs
                record: dict[str, Any] = decision.to_json() | {"quality": item.quality}
            else:
                parsed = self.parser.parse(item.text, self.scene)
                record = {"text": clean_text(item.text), "quality": item.quality,
                          "specs": [spec.model_dump(mode="json") for spec in parsed]}
            specs += parsed
            records.append(record)
            rows.append([item.text, item.quality, record.get("parser", _parser_name(self.parser)),
                         record.get("reason") or "-", "; ".join(spec.summary() for spec in parsed) or "-"])
            log.info("phase %d feedback %r (%s) -> %d spec(s)", phase, item.text, item.quality, len(parsed))
        atomic_write_json(self.run_dir / "feedback" / f"phase_{phase:03d}.json", records)
        log_table(self.logger, f"m3hf/feedback/phase_{phase:03d}", FEEDBACK_COLUMNS, rows, step)
        return specs

    def _load_state(self) -> dict[str, Any] | None:
        path = self.run_dir / STATE_FILE
        if not path.is_file():
            return None
        point = read_point(path, STATE_KIND, "m3hf", self.config.model_dump(mode="json"), _STATE_FIELDS,
                           where=self.run_dir)  # and the files it covers
        state = {**point.state, "config": point.config}
        rows_ok = all(isinstance(row, dict) and isinstance(row.get("original_return"), int | float)
                      for row in state["history"])
        if not rows_ok or state["completed"] < 0 or len(state["history"]) != state["completed"] + 1:
            raise FileFormatError(f"{path}: completed={state['completed']} with "
                                  f"{len(state['history'])} generations of history")
        return state


def resumable(run_dir: str | Path, config: M3HFConfig) -> bool:
    """Whether ``run_dir`` holds an M3HF run that ``config`` goes on from (before the directory
    is used again); a run with other settings is refused, naming them."""
    path = Path(run_dir) / STATE_FILE
    if not path.is_file():
        return False
    read_point(path, STATE_KIND, "m3hf", config.model_dump(mode="json"), _STATE_FIELDS, verify=False,
               where=run_dir)
    return True


def _load_pools(path: Path) -> TeamPools:
    try:
        return TeamPools.load(path)
    except (OSError, UnicodeDecodeError, RecursionError) as error:  # not readable as a pools file
        raise FileFormatError(f"{path}: not a readable pools file ({error})") from None


def _parser_name(parser: FeedbackParser) -> str:
    """``RuleParser`` -> ``rule``; a parser of another kind by its class name."""
    return "rule" if isinstance(parser, RuleParser) else type(parser).__name__


def _play(env: OvercookedParallelEnv, policy: Any) -> None:
    obs, infos = env.reset()
    while env.agents:
        obs, _, _, _, infos = env.step(policy(obs, infos))
