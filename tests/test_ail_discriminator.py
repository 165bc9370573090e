"""Trained alone, each discriminator kind separates expert from random transitions."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlkit.ail import DiscriminatorConfig, Transitions, build_discriminator


def pendulum_transitions(rng: np.random.Generator, n: int, expert: bool) -> Transitions:
    """Random states; the 'expert' always pushes +2, the random agent acts uniformly."""
    theta, speed = rng.uniform(-np.pi, np.pi, n), rng.uniform(-8, 8, n)
    obs = np.stack([np.cos(theta), np.sin(theta), speed], axis=1).astype(np.float32)
    acts = (np.full((n, 1), 2.0) if expert else rng.uniform(-2, 2, (n, 1))).astype(np.float32)
    return Transitions(obs, acts, obs + 0.01, np.zeros(n, bool))


@pytest.mark.parametrize("loss", ["gail", "airl", "maxent"])
def test_discriminator_separates_expert_from_random(loss):
    rng = np.random.default_rng(0)
    env = gym.make("Pendulum-v1")
    config = DiscriminatorConfig(loss=loss, hidden=(32, 32), lr=3e-3, reward_clip=10.0)
    disc = build_discriminator(config, env.observation_space, env.action_space, seed=0)
    optimizer = torch.optim.Adam(disc.parameters(), lr=config.lr)
    expert, agent = pendulum_transitions(rng, 2000, True), pendulum_transitions(rng, 2000, False)
    zeros = torch.zeros(128)  # AIRL with a uniform-ish generator: log pi is a constant
    for _ in range(300):
        e, a = expert.sample(rng, 128).to_torch("cpu"), agent.sample(rng, 128).to_torch("cpu")
        total, _ = disc.loss(e, a, zeros, zeros)
        optimizer.zero_grad()
        total.backward()
        optimizer.step()
    test_expert, test_agent = pendulum_transitions(rng, 1000, True), pendulum_transitions(rng, 1000, False)
    r_expert = disc.generator_reward(test_expert.obs, test_expert.acts, test_expert.next_obs,
                                     test_expert.dones)
    r_agent = disc.generator_reward(test_agent.obs, test_agent.acts, test_agent.next_obs,
                                    test_agent.dones)
    threshold = np.log(2) if loss == "gail" else 0.0  # D = 1/2 for GAIL's -log(1 - D)
    if loss == "maxent":
        threshold = (r_expert.mean() + r_agent.mean()) / 2
    accuracy = ((r_expert > threshold).mean() + (r_agent < threshold).mean()) / 2
    assert accuracy > 0.9
    if loss == "maxent":  # the raw reward is clipped to +-reward_clip
        assert max(np.abs(r_expert).max(), np.abs(r_agent).max()) <= 10.0


def test_state_only_discriminator_ignores_actions():
    env = gym.make("Pendulum-v1")
    disc = build_discriminator(DiscriminatorConfig(state_only=True), env.observation_space,
                               env.action_space, seed=0)
    assert disc.reward_net.spec.inputs == ("obs",)
    obs = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    no_done = np.zeros(4, bool)
    np.testing.assert_array_equal(
        disc.generator_reward(obs, np.full((4, 1), -2.0), obs, no_done),
        disc.generator_reward(obs, np.full((4, 1), 2.0), obs, no_done),
    )


def test_apec_reward_step_scales_the_maxent_loss_by_the_horizon_and_pays_the_next_state():
    """The reference's reward loss is (E_agent[r] - E_expert[r]) * 1000 (apec_mjc/f_div.py:101),
    and its SAC is paid r(s') (rl_alg/sac.py:480): both pinned on a linear r with known weights."""
    env = gym.make("Pendulum-v1")
    config = DiscriminatorConfig(loss="maxent", state_only=True, hidden=(), loss_scale=1000.0,
                                 reward_on="next_obs")
    disc = build_discriminator(config, env.observation_space, env.action_space, seed=0)
    layer = next(m for m in disc.reward_net.modules() if isinstance(m, torch.nn.Linear))
    with torch.no_grad():
        layer.weight.copy_(torch.tensor([[1.0, 2.0, 3.0]]))
        layer.bias.zero_()
    expert_obs = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], np.float32)  # r = 1, 2
    agent_obs = np.array([[0.0, 0.0, 1.0]], np.float32)  # r = 3
    acts = np.zeros((2, 1), np.float32)
    expert = Transitions(expert_obs, acts, expert_obs, np.zeros(2, bool)).to_torch("cpu")
    agent = Transitions(agent_obs, acts[:1], agent_obs, np.zeros(1, bool)).to_torch("cpu")
    loss, _ = disc.loss(expert, agent)
    assert float(loss.detach()) == pytest.approx(1000.0 * (3.0 - 1.5))
    # the generator's reward reads s' (next_obs), never s
    reward = disc.generator_reward(expert_obs, acts, agent_obs[[0, 0]], np.zeros(2, bool))
    assert reward.tolist() == pytest.approx([3.0, 3.0])
    on_s = build_discriminator(config.replace(reward_on="obs"), env.observation_space,
                               env.action_space, seed=0)
    on_s.load_state_dict(disc.state_dict())
    assert on_s.generator_reward(expert_obs, acts, agent_obs[[0, 0]], np.zeros(2, bool)).tolist() \
        == pytest.approx([1.0, 2.0])
    with pytest.raises(Exception, match="reward_on"):
        DiscriminatorConfig(loss="maxent", state_only=False, reward_on="next_obs")
