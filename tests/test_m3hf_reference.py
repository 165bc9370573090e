"""M3HF's mechanics as the reference implementation runs them: rollback to the best policies,
the performance signal, the paper's time penalty, a global shaping scale, and deliveries counted
in the evaluation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import envs.overcooked as oc
from rlkit.errors import InvalidDataError
from rlkit.m3hf import RewardSpec, Scene
from rlkit.m3hf import loop as m3hf_loop
from rlkit.m3hf.shaping import PoolShaper
from rlkit.m3hf.templates import compile_term
from rlkit.m3hf.weights import TeamPools
from rlkit.marl import load_checkpoint
from rlkit.marl.evaluate import evaluate
from rlkit.marl.rows import OvercookedRows
from rlkit.runners.m3hf import run_m3hf
from tests.tiny_runs import tiny_config


def spec(template: str, agents: object = "all", **params: object) -> RewardSpec:
    return RewardSpec.model_validate({"template": template, "agents": agents, "params": params})


def parameters(trainer) -> list[torch.Tensor]:
    return [torch.nn.utils.parameters_to_vector(p.parameters()).detach().clone() for p in trainer.policies]


class FallingEvaluation:
    """Generation 0 evaluates best, every later one worse: the best policy is always generation 0's."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, trainer, rows, seed=0):
        metrics = evaluate(trainer, rows, seed=seed)
        self.calls += 1
        return metrics | {"eval/original_return": -float(self.calls)}


class RecordingLoads:
    def __init__(self) -> None:
        self.loaded: list[tuple[str, list[torch.Tensor]]] = []

    def __call__(self, path, rows, logger=None, device=None):
        trainer = load_checkpoint(path, rows, logger, device)
        self.loaded.append((path.name, parameters(trainer)))
        return trainer


@pytest.mark.parametrize("rollback", ["best", "last"])
def test_each_generation_starts_from_the_best_policy_so_far(tmp_path, monkeypatch, rollback) -> None:
    monkeypatch.setattr(m3hf_loop, "evaluate", FallingEvaluation())
    monkeypatch.setattr(m3hf_loop, "load_checkpoint", loads := RecordingLoads())
    config = tiny_config(video="none", phases=3, performance="eval", rollback=rollback)
    state = run_m3hf(config, tmp_path)

    assert state["best"]["generation"] == 0
    assert [row["env_steps"] for row in state["history"]] == [64, 128, 192, 256]  # steps spent, in order
    rows = OvercookedRows(oc.OvercookedVecEnv(2, keep_features=True, recipe="tomato", max_steps=20))
    generation0 = parameters(load_checkpoint(tmp_path / "checkpoints" / "gen_000", rows))
    if rollback == "last":
        assert loads.loaded == []
        return
    # phase 1 trains on from generation 0 itself; phases 2 and 3 go back to it
    assert [name for name, _ in loads.loaded] == ["best", "best"]
    for _, loaded in loads.loaded:
        assert all(torch.equal(a, b) for a, b in zip(loaded, generation0, strict=True))


def test_a_rolled_back_run_resumes_exactly(tmp_path, monkeypatch) -> None:
    config = tiny_config(video="none", phases=3, performance="eval")
    monkeypatch.setattr(m3hf_loop, "evaluate", FallingEvaluation())
    unbroken = run_m3hf(config, tmp_path / "unbroken")
    monkeypatch.setattr(m3hf_loop, "evaluate", falling := FallingEvaluation())
    run_m3hf(config.model_copy(update={"phases": 2}), tmp_path / "stopped")
    falling.calls = 3  # the evaluations the stopped run already made
    resumed = run_m3hf(config, tmp_path / "stopped")
    assert resumed["history"] == unbroken["history"]


def test_improved_compares_the_last_two_generations_by_the_performance_signal(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(m3hf_loop, "evaluate", FallingEvaluation())
    state = run_m3hf(tiny_config(video="none", phases=2, performance="eval"), tmp_path)
    assert [row["performance"] for row in state["history"]] == [-1.0, -2.0, -3.0]
    assert [row["improved"] for row in state["history"]] == [None, None, False]


def test_the_paper_time_penalty_grows_with_the_episode_step() -> None:
    scene = Scene.from_env(oc.parallel_env(layout="A", n_agents=3))
    venv = oc.OvercookedVecEnv(2, layout="A", n_agents=3)
    venv.reset()
    for _ in range(3):
        venv.step(np.zeros(venv.num_envs, dtype=np.int64))
    state = venv.features()
    assert state["step"].tolist() == [3, 3]
    linear = compile_term(spec("time_penalty", rate=0.2, growth="linear").params, scene)
    constant = compile_term(spec("time_penalty", rate=0.2).params, scene)
    np.testing.assert_allclose(linear(state, np.zeros(2), 0), [-0.6, -0.6])
    np.testing.assert_allclose(constant(state, np.zeros(2), 0), [-0.2, -0.2])
    env = oc.parallel_env(layout="A", n_agents=3)
    env.reset(seed=0)
    env.step({agent: 0 for agent in env.agents})
    assert int(env.features()["step"]) == 1


def test_the_shaping_scale_multiplies_every_agents_sum() -> None:
    scene = Scene.from_env(oc.parallel_env(layout="A", n_agents=3))
    pools = TeamPools.empty(3).update([spec("time_penalty", rate=0.5), spec("action", [0], action="right")],
                                      improved=None)
    venv = oc.OvercookedVecEnv(2, layout="A", n_agents=3)
    venv.reset()
    state, actions = venv.features(), np.full((2, 3), 10)
    full = PoolShaper(pools, scene)(state, actions)
    np.testing.assert_allclose(PoolShaper(pools, scene, scale=0.3)(state, actions), 0.3 * full)
    assert not np.allclose(full, 0)
    np.testing.assert_allclose(PoolShaper(pools, scene, scale=0.0)(state, actions), 0.0)
    with pytest.raises(InvalidDataError, match="scale must be finite"):
        PoolShaper(pools, scene, scale=float("nan"))


def test_the_evaluation_counts_the_games_the_env_ended_itself() -> None:
    class Stay:
        def predict(self, obs, deterministic=False):
            return np.zeros(len(obs), dtype=np.int64)

    rows = OvercookedRows(oc.OvercookedVecEnv(4, recipe="tomato", max_steps=5))
    metrics = evaluate(Stay(), rows)  # nobody moves: every game hits the time limit
    assert metrics["eval/terminated"] == 0.0
    assert metrics["eval/episode_length"] == 5.0
