"""The typed config of an M3HF run (``rlkit m3hf``, ``experiments/m3hf.py``); pydantic only."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidatorFunctionWrapHandler, field_validator

from envs.overcooked.config import GameConfig
from rlkit.config import StrictModel
from rlkit.errors import ConfigError, WrongTypeError
from rlkit.m3hf.examples import script_file
from rlkit.m3hf.parser_llm import LLMConfig
from rlkit.marl.config import MarlConfig


class FeedbackSettings(StrictModel):
    """Where feedback comes from: nobody (plain IPPO), a script, a simulated teacher, a terminal,
    or people on the web page of ``rlkit serve --run-dir <this run's directory>``."""

    source: Literal["none", "scripted", "simulated", "terminal", "web"] = Field(
        "terminal", description="terminal: a person watches each phase's video and types"
    )
    script: str | None = Field(None, description="YAML of texts per phase (scripted): a path, or "
                               "example:<name> for one rlkit ships (example:good)")
    script_quality: Literal["correct", "irrelevant", "wrong", "unknown"] = Field(
        "unknown", description="what the scripted texts are known to be, for reports (scripted)"
    )
    texts: dict[int, list[str]] = Field({}, description="texts per phase (scripted)")
    rates: dict[Literal["correct", "irrelevant", "wrong"], float] = Field(
        {"correct": 1.0}, description="quality mix (simulated)"
    )
    per_phase: int = Field(1, ge=1, description="texts per phase (simulated)")
    min_items: int = Field(1, ge=1, description="confirmed texts a phase waits for (web)")
    timeout_s: float = Field(3600.0, ge=0, description="then the phase goes on with what it has (web)")
    poll_s: float = Field(0.5, gt=0, description="how often the store is checked (web)")

    @field_validator("script")
    @classmethod
    def _shipped_example(cls, script: str | None) -> str | None:
        """``example:<name>`` names an example rlkit ships (a path is checked before the run)."""
        if script is not None:
            script_file(script)
        return script


class M3HFConfig(StrictModel):
    """One M3HF run; ``seed`` replaces ``marl.seed``. Budget = (phases + 1) * generation_steps."""

    seed: int = 0
    env: GameConfig = Field(GameConfig(), description="the Overcooked game (the paper's: map A, "
                            "lettuce-tomato salad, 3 agents, radius 2, 200 steps: the defaults)")
    num_games: int = Field(16, ge=1, description="games trained in parallel")
    generation_steps: int = Field(20_000, ge=1, description="env steps (of all games) per generation")
    phases: int = Field(4, ge=0, description="feedback phases after generation 0")
    marl: MarlConfig = MarlConfig()
    feedback: FeedbackSettings = FeedbackSettings()
    parser: Literal["auto", "rule", "llm"] = Field("auto", description="auto: LLM if a key/server is set")
    llm: LLMConfig = LLMConfig()
    alpha: float = Field(0.9, gt=0, le=1)
    beta: float = Field(0.1, ge=0, lt=1)
    weight_rule: Literal["reference", "compounding"] = Field(
        "reference", description="reference: reset to uniform, decay older ones once (the paper's "
        "code); compounding: stored weights decay every phase (an ablation)")
    rollback: Literal["best", "last"] = Field(
        "best", description="each generation starts from the best checkpoint so far by the "
        "performance signal (the reference), or from the last policy")
    performance: Literal["train", "eval"] = Field(
        "train", description="the ORIGINAL return that decides 'improved' and 'best': the mean over "
        "the generation's training episodes (the reference's intent), or the evaluation games'")
    shaping_scale: float = Field(1.0, ge=0, description="scale on the whole shaping sum (1 = the paper)")
    eval_games: int = Field(64, ge=1, description="games (one episode each, sampled actions) per evaluation")
    video: Literal["gif", "mp4", "none"] = "gif"
    video_fps: float = Field(5.0, gt=0)
    video_cell_px: int = Field(40, ge=4)

    @field_validator("env", mode="wrap")
    @classmethod
    def _env_placed(cls, env: Any, handler: ValidatorFunctionWrapHandler) -> GameConfig:
        """A value of the wrong type in ``env`` is a ``ConfigError`` at ``env``, as every other bad
        setting of the run (the game's own check raises ``WrongTypeError``, which pydantic does not
        place)."""
        try:
            return handler(env)
        except WrongTypeError as error:
            raise ConfigError(str(error)) from None
