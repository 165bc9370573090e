"""rlkit.marl: IPPO and parameter-shared PPO on PettingZoo envs and on the batched Overcooked."""

import numpy as np
import pytest
import torch
from gymnasium import spaces

import envs.overcooked as oc
from rlkit.errors import IncompatibleModelError, InvalidDataError
from rlkit.marl import (
    MarlConfig,
    MultiAgentPPO,
    OvercookedRows,
    ParallelEnvRows,
    evaluate,
    load_checkpoint,
    save_checkpoint,
)
from rlkit.marl.ppo import _sample
from rlkit.marl.stacked import StackedMlp, stackable
from rlkit.wrappers.pettingzoo_wrapper import PettingZooRewardWrapper
from tests.small_tasks import LENGTH, N_CUES, CueGame, cue_rows

ANSWERS = [[(cue + agent) % N_CUES for agent in range(2)] for cue in range(N_CUES)]
FAST = {"n_steps": 32, "batch_size": 64, "n_epochs": 4, "learning_rate": 3e-3, "ent_coef": 0.0}


def test_ippo_learns_a_task_each_agent_solves_differently():
    trainer = MultiAgentPPO(cue_rows(), MarlConfig(**FAST, seed=1))
    assert len(trainer.policies) == 2
    random_return = LENGTH / N_CUES
    stats = trainer.learn(6_000)
    # each agent's return (the env's own: no shaping here) is near the maximum of 8
    assert stats["rollout/original_return"] > 0.85 * LENGTH > 2 * random_return
    cue_for_both = np.repeat(np.eye(N_CUES, dtype=np.float32), 2, axis=0)  # 3 games x 2 agents
    actions = trainer.predict(cue_for_both, deterministic=True)
    assert actions.reshape(N_CUES, 2).tolist() == ANSWERS


def test_shared_policy_reads_the_agent_id():
    trainer = MultiAgentPPO(cue_rows(), MarlConfig(**FAST, sharing="shared", seed=1))
    assert len(trainer.policies) == 1
    assert trainer.models[0].observation_space.shape == (N_CUES + 2,)  # one-hot agent id appended
    stats = trainer.learn(6_000)
    assert stats["rollout/original_return"] > 0.85 * LENGTH
    actions = trainer.predict(np.repeat(np.eye(N_CUES, dtype=np.float32), 2, axis=0), deterministic=True)
    assert actions.reshape(N_CUES, 2).tolist() == ANSWERS


class AgentTaggedGame(CueGame):
    """The cue game whose observation also says which agent it is (to trace rows to buffers)."""

    def observation_space(self, agent: str) -> spaces.Box:
        return spaces.Box(0.0, 10.0, (N_CUES + 1,), np.float32)

    def _obs(self) -> dict[str, np.ndarray]:
        cue = super()._obs()
        return {a: np.append(cue[a], 7.0 + i) for i, a in enumerate(self.agents)}


def test_each_independent_policy_is_trained_only_on_its_own_agents_rows():
    trainer = MultiAgentPPO(ParallelEnvRows(lambda: AgentTaggedGame(3), 4), MarlConfig(**FAST))
    before = [torch.nn.utils.parameters_to_vector(p.parameters()).clone() for p in trainer.policies]
    trainer.learn(128)
    for agent, model in enumerate(trainer.models):
        buffer = model.rollout_buffer
        # SB3 flattens what it trained on to (games x n_steps) rows; rewards stay (n_steps, games)
        assert buffer.observations.shape == (4 * 32, N_CUES + 1)
        assert np.all(buffer.observations[:, -1] == 7.0 + agent)
        rewarded = buffer.rewards.swapaxes(0, 1).ravel() > 0  # its own reward: 1 for its own answer
        cues = buffer.observations[:, :N_CUES].argmax(-1)
        inside = np.tile(np.arange(32) % LENGTH != LENGTH - 1, 4)  # last steps carry the value bootstrap
        assert np.array_equal(rewarded[inside], (buffer.actions[:, 0] == (cues + agent) % N_CUES)[inside])
    after = [torch.nn.utils.parameters_to_vector(p.parameters()) for p in trainer.policies]
    assert all(not torch.equal(b, a) for b, a in zip(before, after, strict=True))
    assert not torch.equal(after[0], after[1])  # separate parameters, not one net under three names


def test_original_and_shaped_returns_are_reported_separately_through_the_reward_wrapper():
    bonus = {"player_0": 0.5, "player_1": -1.0}

    def make() -> PettingZooRewardWrapper:
        fns = {a: (lambda o, a_, n, d, b=b: np.full(len(o), b)) for a, b in bonus.items()}
        return PettingZooRewardWrapper(CueGame(), fns, mode="add")

    trainer = MultiAgentPPO(ParallelEnvRows(make, 4), MarlConfig(**FAST, seed=3))
    stats = trainer.learn(128)
    original = stats["rollout/original_return"]
    for agent, b in bonus.items():
        assert stats[f"rollout/shaped_return/{agent}"] - original == pytest.approx(b * LENGTH, abs=LENGTH)
    assert stats["rollout/shaped_return"] == pytest.approx(
        np.mean([stats[f"rollout/shaped_return/{a}"] for a in bonus])
    )


class ConstantShaper:
    """Per-agent constants; records what it was given."""

    def __init__(self, terms: list[float]) -> None:
        self.terms = np.asarray(terms, dtype=np.float32)
        self.calls: list[tuple[dict, np.ndarray]] = []

    def __call__(self, state, actions):
        self.calls.append((state, actions.copy()))
        return np.broadcast_to(self.terms, actions.shape)


def test_overcooked_shaper_terms_are_added_once_per_step_to_the_team_reward():
    venv = oc.OvercookedVecEnv(4, layout="A", recipe="tomato", n_agents=3, max_steps=10, keep_features=True)
    shaper = ConstantShaper([1.0, 2.0, -3.0])
    trainer = MultiAgentPPO(OvercookedRows(venv, shaper), MarlConfig(n_steps=20, batch_size=40, n_epochs=1))
    stats = trainer.learn(80)
    assert len(shaper.calls) == 20
    state, actions = shaper.calls[0]
    assert actions.shape == (4, 3) and state["positions"].shape[0] == 4
    original = stats["rollout/original_return"]
    assert original < 0  # the team's own reward: step penalties (and maybe wrong deliveries)
    for agent, term in zip(["agent_0", "agent_1", "agent_2"], shaper.terms, strict=True):
        assert stats[f"rollout/shaped_return/{agent}"] == pytest.approx(original + 10 * term, abs=1e-4)


def test_overcooked_shaper_sees_the_final_state_of_a_finished_game():
    venv = oc.OvercookedVecEnv(1, layout="A", recipe="tomato", n_agents=2, max_steps=3, keep_features=True)
    seen: list[np.ndarray] = []

    def shaper(state, actions):
        seen.append(state["positions"][0, -2:].copy())  # both agents' cells
        return np.zeros(actions.shape)

    rows = OvercookedRows(venv, shaper)
    rows.reset(seed=0)
    start = venv.features()["positions"][0, -2:].copy()
    right = venv.action_names.index("right")
    for _ in range(3):
        step = rows.step(np.full(2, right))
    assert step.dones.all() and step.truncated.all()
    assert not np.array_equal(seen[-1], start)  # after the last move, not the reset kitchen
    assert np.array_equal(venv.features()["positions"][0, -2:], start)


def test_shaper_without_kept_features_is_refused():
    with pytest.raises(InvalidDataError, match="keep_features=True"):
        OvercookedRows(oc.OvercookedVecEnv(2), ConstantShaper([0.0, 0.0, 0.0]))


def test_same_seed_same_run_and_global_rngs_do_not_matter():
    def run(noise: bool) -> torch.Tensor:
        trainer = MultiAgentPPO(cue_rows(2), MarlConfig(**FAST, seed=7))
        if noise:
            torch.rand(5)
            np.random.rand(5)
        trainer.learn(128)
        return torch.cat([torch.nn.utils.parameters_to_vector(p.parameters()) for p in trainer.policies])

    assert torch.equal(run(False), run(True))


def test_resume_from_checkpoint_continues_with_identical_actions(tmp_path):
    config = MarlConfig(**FAST, seed=5)
    trainer = MultiAgentPPO(cue_rows(2), config)
    trainer.learn(64)
    # one iteration of 32 steps x 2 games, 4 epochs, for each agent's PPO
    assert list(trainer.updates().values()) == [4, 4] == [m._n_updates for m in trainer.models]
    save_checkpoint(trainer, tmp_path / "ckpt")
    stats_at_save = trainer.episode_stats()
    trainer.learn(128)

    resumed = load_checkpoint(tmp_path / "ckpt", cue_rows(2))
    assert resumed.num_timesteps == 64 and resumed.config == config
    assert resumed.episode_stats() == stats_at_save
    assert resumed.updates() == {name: 4 for name in trainer.updates()}  # the count is restored
    resumed.learn(128)
    assert resumed.episode_stats() == trainer.episode_stats()
    assert resumed.updates() == trainer.updates() == {name: 4 + 2 * 4 for name in trainer.updates()}
    for model, again in zip(trainer.models, resumed.models, strict=True):
        assert np.array_equal(model.rollout_buffer.actions, again.rollout_buffer.actions)
        for a, b in zip(model.policy.state_dict().values(), again.policy.state_dict().values(), strict=True):
            assert torch.equal(a, b)
    obs = np.random.default_rng(0).random((4, N_CUES), dtype=np.float32)
    assert np.array_equal(trainer.predict(obs), resumed.predict(obs))  # sampled, same RNG state


def test_checkpoint_refuses_another_env_and_is_replaced_whole(tmp_path):
    trainer = MultiAgentPPO(cue_rows(2), MarlConfig(**FAST))
    path = save_checkpoint(trainer, tmp_path / "ckpt")
    save_checkpoint(trainer, path)  # overwrite in place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]
    with pytest.raises(IncompatibleModelError, match="agent_names"):
        load_checkpoint(path, ParallelEnvRows(lambda: CueGame(3), 2))


def test_stacked_rollout_heads_equal_each_sb3_policy():
    trainer = MultiAgentPPO(ParallelEnvRows(lambda: AgentTaggedGame(3), 2), MarlConfig(**FAST))
    trainer.learn(64)  # weights moved away from their initialisation
    stacked = StackedMlp(trainer.policies)
    obs = torch.as_tensor(np.random.default_rng(0).random((3, 5, N_CUES + 1), dtype=np.float32))
    logits, values = stacked(obs)
    for agent, policy in enumerate(trainer.policies):
        distribution = policy.get_distribution(obs[agent])
        # torch's Categorical keeps normalised logits (log-probabilities)
        torch.testing.assert_close(logits[agent].log_softmax(-1), distribution.distribution.logits)
        torch.testing.assert_close(values[agent], policy.predict_values(obs[agent]).squeeze(-1))
    assert not stackable(trainer.policies[:1])  # one policy: nothing to stack


def test_evaluate_reports_original_and_shaped_returns_of_one_episode_per_game():
    venv = oc.OvercookedVecEnv(3, layout="A", recipe="tomato", n_agents=3, max_steps=12, keep_features=True)
    rows = OvercookedRows(venv, ConstantShaper([1.0, 2.0, 0.0]))
    trainer = MultiAgentPPO(rows, MarlConfig(n_steps=8, batch_size=8, n_epochs=1))
    result = evaluate(trainer, rows)
    assert result["eval/episode_length"] == 12  # nobody delivers a salad by chance in 12 steps
    # shaping adds 1 + 2 + 0 per step over 3 agents: 1 per agent on average, for 12 steps
    assert result["eval/shaped_return"] == pytest.approx(result["eval/original_return"] + 12, abs=1e-4)
    assert result["eval/original_return"] <= -1.2  # the step penalty, at least


def test_actions_drawn_from_logits_on_the_cpu_are_sb3s_own_draw():
    trainer = MultiAgentPPO(cue_rows(2), MarlConfig(**FAST, sharing="shared"))
    trainer.learn(64)  # weights moved away from their initialisation
    policy = trainer.policies[0]
    rows = np.random.default_rng(0).random((64, N_CUES), dtype=np.float32)
    obs = torch.as_tensor(trainer._policy_obs(rows))
    with torch.no_grad(), torch.random.fork_rng(devices=[]):
        torch.manual_seed(3)
        expected = policy(obs)
        torch.manual_seed(3)
        drawn = _sample(policy, obs)
    assert len(set(expected[0].tolist())) > 1  # a real draw, not one certain action
    for mine, sb3 in zip(drawn, expected, strict=True):
        assert torch.equal(mine, sb3)
