"""Where feedback comes from each phase, behind one interface: a person, a script, or a simulated teacher.

``FeedbackSource.feedback(request) -> list[Feedback]``. A ``FeedbackRequest`` carries what a
person would see (the rollout video's path) and what a simulated teacher reads instead (the
env's true state at every step of the rollout, ``features()`` without the game axis):

- ``TerminalSource``: prints the video path, reads typed lines until an empty one;
- ``ScriptedSource``: texts per phase from a YAML file (``{phases: {1: [...], 2: [...]}}`` or a
  list whose first item is phase 1);
- ``SimulatedSource``: writes correct, irrelevant or wrong feedback at configurable rates from
  the true state (what the recipe still needs, who is nearest, who stood still), seeded, each text
  labelled with its quality so an experiment can report what the team was told.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import yaml

from rlkit.errors import ConfigError, FileFormatError, InvalidDataError
from rlkit.m3hf.examples import script_file
from rlkit.m3hf.scene import Scene

Quality = Literal["correct", "irrelevant", "wrong", "unknown"]
QUALITIES: tuple[Quality, ...] = ("correct", "irrelevant", "wrong")


@dataclass(frozen=True)
class Feedback:
    """One piece of free text, and how good it is when the source knows (a simulated teacher).

    Attributes:
        text: the feedback, as written.
        quality: ``"correct"``, ``"irrelevant"`` or ``"wrong"`` when the source knows, else
            ``"unknown"``.
    """

    text: str
    quality: Quality = "unknown"


@dataclass(frozen=True)
class FeedbackRequest:
    """What a source is shown at the end of generation ``generation``'s training.

    Attributes:
        generation: the generation (phase) just trained, from 1.
        scene: the game's names and layout, to describe the agents and what they handle.
        video_path: the rollout's video, what a person watches (None: no video).
        states: the rollout's ``features()`` per step, without the game axis: what a simulated
            teacher reads.
        original_return: the rollout's return under the env's own reward, when known.
    """

    generation: int
    scene: Scene
    video_path: Path | None = None
    states: Sequence[Mapping[str, np.ndarray]] = ()  # the rollout's features() per step, no game axis
    original_return: float | None = None


@runtime_checkable
class FeedbackSource(Protocol):
    """Where a phase's feedback comes from: ``feedback(request)`` gives its texts (none: no
    feedback this phase)."""

    def feedback(self, request: FeedbackRequest) -> list[Feedback]: ...


class TerminalSource:
    """A person at a terminal: shown the video path, types feedback, ends with an empty line.

    The lines typed are joined into one ``Feedback``; end of input ends it too.

    Args:
        read_line: reads one line after a prompt (``input``).
        show: shows a line to the person (``print``).
    """

    def __init__(self, read_line: Callable[[str], str] = input, show: Callable[[str], None] = print) -> None:
        self._read, self._show = read_line, show

    def feedback(self, request: FeedbackRequest) -> list[Feedback]:
        summary = "" if request.original_return is None else f" (return {request.original_return:.1f})"
        self._show(f"Generation {request.generation}{summary}: watch {request.video_path or '(no video)'}")
        agents = ", ".join(
            f"{n} = {c}" for n, c in zip(request.scene.agent_names, request.scene.agent_colours, strict=True)
        )
        self._show(f"Agents: {agents}. Type feedback, one or more lines; an empty line ends.")
        lines = []
        while True:
            try:
                line = self._read("> ").strip()
            except EOFError:
                break
            if not line:
                break
            lines.append(line)
        return [Feedback(" ".join(lines))] if lines else []


class ScriptedSource:
    """Fixed texts per phase (phase = generation, from 1); phases without texts give none.

    Args:
        phases: the texts of each phase, by generation >= 1; each text non-empty.
        quality: the quality every text is reported with.

    Raises:
        ConfigError: on a phase below 1 or not an int, or texts that are not a list of
            non-empty strings.
    """

    def __init__(self, phases: Mapping[int, Sequence[str]], quality: Quality = "unknown") -> None:
        for phase, texts in phases.items():
            if isinstance(phase, bool) or not isinstance(phase, int) or phase < 1:
                raise ConfigError(f"phases: keys must be generations >= 1, got {phase!r}")
            if isinstance(texts, str) or not all(isinstance(t, str) and t.strip() for t in texts):
                raise ConfigError(f"phases.{phase}: must be a list of non-empty texts, got {texts!r}")
        self.phases = {phase: list(texts) for phase, texts in phases.items()}
        self.quality = quality

    @classmethod
    def from_yaml(cls, path: str | os.PathLike[str], quality: Quality = "unknown") -> ScriptedSource:
        """``phases: {1: [text, ...], ...}``, ``phases: [[...], [...]]`` or the bare mapping / list,
        from a path or a shipped example (``example:good``: ``rlkit.m3hf.examples``)."""
        data: Any = yaml.safe_load(script_file(os.fspath(path)).read_text(encoding="utf-8"))
        if isinstance(data, dict) and "phases" in data:
            data = data["phases"]
        if isinstance(data, list):
            data = {k + 1: [texts] if isinstance(texts, str) else texts for k, texts in enumerate(data)}
        if not isinstance(data, dict):
            raise FileFormatError(
                f"{path}: expected phases as a mapping or a list, got {type(data).__name__}"
            )
        return cls({_phase(key, path): texts or [] for key, texts in data.items()}, quality)

    def feedback(self, request: FeedbackRequest) -> list[Feedback]:
        return [Feedback(text, self.quality) for text in self.phases.get(request.generation, [])]


def _phase(key: Any, path: Any) -> int:
    try:
        return int(key)
    except (TypeError, ValueError):
        raise FileFormatError(f"{path}: phase {key!r} is not a generation number") from None


IRRELEVANT = (
    "The kitchen looks nice today.",
    "I like the colours in this video.",
    "Hmm, interesting to watch.",
    "What is the music in the background?",
    "The floor tiles are a nice touch.",
)


@dataclass
class SimulatedSource:
    """A teacher of mixed quality that reads the true state instead of watching the video.

    Each text is correct, irrelevant or wrong with probabilities ``rates`` (normalised), drawn
    from ``rng``; ``per_phase`` texts per phase. Correct advice names the next missing step of the
    recipe for the agent nearest to it (get and chop a food, plate it, take the dish to the
    delivery; "faster" once delivered) or tells a motionless agent to move; wrong advice pushes
    the opposite (stay away from a needed food, stop chopping, fetch a food not in the recipe).

    Attributes:
        rates: the weight of each quality (``"correct"``, ``"irrelevant"``, ``"wrong"``), each
            >= 0 with a positive sum; a quality left out has weight 0.
        per_phase: texts per phase, >= 1.
        rng: draws each text's quality and which irrelevant or wrong text is said.

    Raises:
        ConfigError: on an unknown quality, negative or all-zero rates, or ``per_phase`` below 1.
    """

    rates: Mapping[Quality, float] = field(default_factory=lambda: {"correct": 1.0})
    per_phase: int = 1
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))

    def __post_init__(self) -> None:
        unknown = set(self.rates) - set(QUALITIES)
        if unknown:
            raise ConfigError(f"rates: unknown qualities {sorted(unknown)}; use {QUALITIES}")
        values = np.array([self.rates.get(q, 0.0) for q in QUALITIES], dtype=np.float64)
        if not np.all(np.isfinite(values)) or values.min() < 0 or values.sum() <= 0:
            raise ConfigError(f"rates must be >= 0 with a positive sum, got {dict(self.rates)}")
        if self.per_phase < 1:
            raise ConfigError(f"per_phase must be >= 1, got {self.per_phase}")
        self._probabilities = values / values.sum()

    def feedback(self, request: FeedbackRequest) -> list[Feedback]:
        if not request.states:
            raise InvalidDataError("SimulatedSource needs the rollout's states (FeedbackRequest.states)")
        correct = correct_advice(request.scene, request.states)[0]  # the most useful thing to say
        wrong = wrong_advice(request.scene, request.states)
        out = []
        for _ in range(self.per_phase):
            quality: Quality = QUALITIES[int(self.rng.choice(len(QUALITIES), p=self._probabilities))]
            if quality == "irrelevant":
                text = str(self.rng.choice(IRRELEVANT))
            else:
                text = correct if quality == "correct" else wrong[int(self.rng.integers(len(wrong)))]
            out.append(Feedback(text, quality))
        return out


def _nearest_agent(scene: Scene, state: Mapping[str, np.ndarray], entity: str) -> int:
    positions = np.asarray(state["positions"])
    agents = [scene.entity_index[a] for a in scene.agent_names]
    distances = np.abs(positions[agents] - positions[scene.entity_index[entity]]).sum(axis=-1)
    return int(np.argmin(distances))


def correct_advice(scene: Scene, states: Sequence[Mapping[str, np.ndarray]]) -> list[str]:
    """Useful texts, the most useful first: the recipe's next missing step, then idle agents."""
    final = states[-1]
    holding, chops = np.asarray(final["holding"]), np.asarray(final["chops"])
    on_plate = np.any(np.asarray(final["plate_contents"]), axis=0)
    advice = []
    if any(bool(np.asarray(s["delivered"])) for s in states):
        advice.append("Well done, everyone. Be faster!")
    for food in scene.recipe_foods:
        item = scene.item_names.index(food)
        agent = _nearest_agent(scene, final, food)
        if chops[item] < scene.chops_needed:
            held = (holding == item).any()
            advice.append(
                f"Agent {agent} should chop the {food}."
                if held
                else f"Agent {agent} should pick up the {food} and chop it."
            )
        elif not on_plate[item]:
            advice.append(f"Agent {agent}, put the {food} on the plate.")
    if not advice:
        plate = next(p for p in scene.item_names if scene.entity_kinds[p] == "plate")
        advice.append(f"Agent {_nearest_agent(scene, final, plate)} should go to the delivery window.")
    first = np.asarray(states[0]["positions"])
    for agent, name in enumerate(scene.agent_names):
        index = scene.entity_index[name]
        if all(np.array_equal(np.asarray(s["positions"])[index], first[index]) for s in states):
            advice.append(f"Agent {agent}, stop standing still.")
    return advice


def wrong_advice(scene: Scene, states: Sequence[Mapping[str, np.ndarray]]) -> list[str]:
    """Misleading texts: avoid what the recipe needs, stop chopping, fetch what it does not need."""
    final = states[-1]
    advice = []
    for food in scene.recipe_foods:
        advice.append(f"Agent {_nearest_agent(scene, final, food)} should stay away from the {food}.")
    advice.append("Everyone, stop chopping.")
    ingredients = [i for i in scene.item_names if scene.entity_kinds[i] == "ingredient"]
    for food in ingredients:
        if food not in scene.recipe_foods:
            advice.append(f"Agent {_nearest_agent(scene, final, food)} should pick up the {food}.")
    return advice
