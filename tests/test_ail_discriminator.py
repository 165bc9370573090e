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
