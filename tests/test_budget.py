"""A training budget that would update nothing is refused before any env step, one that updates
little is warned about, the counts known before a run are the ones SB3 then makes, and the
summaries report them."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tests.tiny_envs  # noqa: F401 - registers rlkit-test/Point-v0
from rlkit.cli import main
from rlkit.config import load_config
from rlkit.errors import ConfigError
from rlkit.factories.budget import FEW_TRAININGS, check_prefrl, plan_agent, plan_prefrl
from rlkit.factories.builders import make_agent, make_venv
from rlkit.factories.configs import PrefRLConfig
from rlkit.prefrl.loop import PreferenceRL

PPO = "{n_steps: 32, batch_size: 32, n_epochs: 2}"  # rollouts of 32 x 2 envs = 64 env steps
SAC = "{learning_starts: 30, batch_size: 16, buffer_size: 1000, train_freq: 3, gradient_steps: 2}"


def point(algo: str = "ppo", kwargs: str = PPO, **extra: object) -> list[str]:
    return ["env.id=rlkit-test/Point-v0", "env.n_envs=2", f"agent.algo={algo}",
            f"agent.kwargs={kwargs}", "agent.eval_episodes=1", "query.every_steps=100",
            "query.initial_pairs=10", "query.pairs_per_round=5", "query.segment_length=5",
            "model.hidden=[8]", "model.ensemble_size=2", "trainer.max_epochs=1",
            *(f"{k}={v}" for k, v in extra.items())]


def config(algo: str = "ppo", kwargs: str = PPO, **extra: object) -> PrefRLConfig:
    return load_config(PrefRLConfig, None, point(algo, kwargs, **extra))


def test_the_issues_budget_that_never_updates_ppo_is_refused_before_a_run_directory(tmp_path, capsys):
    # SB3's PPO defaults: rollouts of 2048 x 4 envs; 10000 steps, 5000 of them random first
    argv = ["pref-rl", "env.id=rlkit-test/Point-v0", "agent.hyperparams=sb3", "agent.total_timesteps=10000",
            "query.every_steps=5000", "--run-dir", str(tmp_path / "run"), "--logger", "jsonl"]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert "agent.total_timesteps=10000 gives the ppo agent 0 trainings" in error
    assert "n_steps=2048 x env.n_envs=4 = 8192" in error and "after the 5000 random env steps" in error
    assert "raise agent.total_timesteps to at least 13192 for one training" in error  # 5000 + 8192
    assert not (tmp_path / "run").exists()  # refused when the config loaded: nothing ran
    # the same budget on the env's reward gives one rollout (10000 // 8192) ...
    assert plan_prefrl(load_config(PrefRLConfig, None, [*argv[1:5], "reward=env"])).agent.trainings == 1


def test_a_budget_without_a_second_query_round_is_refused_unless_no_more_labels_are_wanted():
    with pytest.raises(ConfigError, match=r"query.every_steps=100 gives 0 query rounds after the first "
                                          r"\(at step 100\): .*lower query.every_steps \(e.g. 42,"):
        config(**{"agent.total_timesteps": 170})  # rollouts of 64: one update, at step 164
    assert check_prefrl(config(**{"agent.total_timesteps": 170, "query.max_pairs": 10}))
    assert config(**{"agent.total_timesteps": 170, "reward": "env"}).reward == "env"  # no queries


def test_a_budget_that_updates_little_is_warned_about_on_the_console(tmp_path, capsys):
    few = config(**{"agent.total_timesteps": 292})  # 100 random, then 3 rollouts of 64, 1 more round
    warnings = check_prefrl(few)
    assert len(warnings) == 2
    assert "gives the ppo agent 3 trainings (6 SB3 updates)" in warnings[0]
    assert f"fewer than {FEW_TRAININGS} trainings" in warnings[0]
    assert "gives 1 query round after the first" in warnings[1]
    assert not check_prefrl(config(**{"agent.total_timesteps": 2000}))
    assert main(["pref-rl", *point(**{"agent.total_timesteps": 292}), "--print-config"]) == 0
    capsys.readouterr()
    assert main(["pref-rl", *point(**{"agent.total_timesteps": 292, "reward": "env"}),
                 "--run-dir", str(tmp_path / "env"), "--logger", "jsonl"]) == 0
    err = capsys.readouterr().err
    assert "rlkit pref-rl: warning: agent.total_timesteps=292 gives the ppo agent 4 trainings" in err


@pytest.mark.parametrize(("algo", "kwargs", "steps", "updates"), [
    ("ppo", PPO, 100, 2 * 2),  # not a whole number of rollouts of 64: SB3 finishes the second
    ("ppo", "{n_steps: 8, batch_size: 16, n_epochs: 3}", 64, 4 * 3),
    ("sac", SAC, 90, 10 * 2),  # collections of 3 x 2 env steps; those ending at 36..90 past 30
])
def test_the_counts_of_a_plain_learn_are_sb3s(algo, kwargs, steps, updates):
    cfg = config(algo, kwargs, **{"agent.total_timesteps": steps, "reward": "env"})
    plan = plan_agent(cfg.agent, cfg.env)
    assert plan is not None and plan.updates == updates
    agent = make_agent(cfg.agent, make_venv(cfg.env), cfg.seed)
    agent.learn(steps)
    assert agent._n_updates == updates


@pytest.mark.parametrize(("algo", "kwargs", "extra"), [
    ("ppo", PPO, {"agent.total_timesteps": 292}),  # the last rollout ends at the budget: trained on
    ("ppo", PPO, {"agent.total_timesteps": 320}),  # the last ends past it: not trained on
    ("sac", SAC, {"agent.total_timesteps": 220}),
    ("sac", SAC, {"agent.total_timesteps": 220, "query.unsupervised_steps": 40}),  # PEBBLE's start
])
def test_a_prefrl_run_makes_the_updates_planned_and_its_summary_says_so(algo, kwargs, extra):
    cfg = config(algo, kwargs, **{"query.max_pairs": 20, **extra})
    plan = plan_prefrl(cfg)
    result = PreferenceRL.from_config(cfg).learn()
    assert result.agent.num_timesteps == cfg.agent.total_timesteps
    assert plan.agent is not None and result.agent._n_updates == plan.agent.updates > 0
    assert len(result.rounds) == 1 + plan.rounds_after_first
    summary = result.summary((0.0, 0.0))
    assert summary["agent_updates"] == plan.agent.updates
    assert summary["refits"] == len(result.rounds) and summary["labels"] == len(result.dataset)
    assert summary["reward_model"]["fresh_accuracy"] == result.rounds[-1].fresh_accuracy


def env_rewards_seen(agent) -> tuple[np.ndarray, np.ndarray]:
    """The rewards in PPO's rollout buffer, and the env's own (-|x| after the step) for the same
    steps: every step whose next observation is of the same episode."""
    buffer = agent.rollout_buffer
    obs = buffer.observations
    if buffer.generator_ready:  # trained on: SB3 flattened it to (envs x steps, ...)
        obs = obs.reshape(buffer.n_envs, buffer.buffer_size, -1).swapaxes(0, 1)
    rows = buffer.buffer_size if buffer.full else buffer.pos  # a rollout cut at the budget
    same_episode = buffer.episode_starts[1:rows] == 0
    return buffer.rewards[:rows - 1][same_episode], -np.abs(obs[1:rows, :, 0])[same_episode]


def test_the_env_reward_arm_trains_the_same_agent_on_the_env_reward(tmp_path, capsys):
    overrides = point(**{"agent.total_timesteps": 320, "query.max_pairs": 20})
    runs = {}
    for reward in ("learned", "env"):
        run_dir = tmp_path / reward
        assert main(["pref-rl", *overrides, f"reward={reward}", "--run-dir", str(run_dir),
                     "--logger", "jsonl"]) == 0
        printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        runs[reward] = json.loads((run_dir / "summary.json").read_text())
        assert printed["agent_updates"] == runs[reward]["agent_updates"]
        assert printed["reward"] == reward
    learned, env = runs["learned"], runs["env"]
    assert set(learned) == set(env)  # the same fields, for a sweep's table
    assert env["labels"] == env["refits"] == 0 and env["reward_model"] is None and env["rounds"] == []
    assert learned["labels"] == 20 and learned["refits"] == 3
    assert env["env_steps"] == learned["env_steps"] == 320
    assert env["agent_updates"] == 2 * (320 // 64)  # every step the agent's, no random start
    assert learned["agent_updates"] == 2 * ((320 - 100) // 64)
    assert env["true_return"]["mean"] != learned["true_return"]["mean"]

    from rlkit.prefrl.loop import train_on_true_reward

    cfg = load_config(PrefRLConfig, None, [*overrides, "reward=env"])
    seen, true = env_rewards_seen(train_on_true_reward(cfg).agent)
    assert seen.size > 20 and np.allclose(seen, true, atol=1e-6)  # the agent was paid the env's reward
    loop = PreferenceRL.from_config(load_config(PrefRLConfig, None, overrides))
    seen, true = env_rewards_seen(loop.learn().agent)
    assert not np.allclose(seen, true, atol=1e-3)  # the learned arm's agent was paid another
