"""AIL losses against hand-computed values, and the AIRL shaping structure."""

import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlkit.ail import (
    DiscriminatorConfig,
    airl_logits,
    build_discriminator,
    gail_reward,
    gradient_penalty,
    logistic_loss,
    maxent_irl_loss,
)
from rlkit.errors import InvalidDataError


def t(*values: float) -> torch.Tensor:
    return torch.tensor(values)


def test_logistic_loss_matches_hand_computation():
    assert logistic_loss(t(0.0), t(0.0)).item() == pytest.approx(2 * math.log(2))
    expected = math.log(1 + math.exp(-2)) + math.log(1 + math.exp(-1))
    assert logistic_loss(t(2.0), t(-1.0)).item() == pytest.approx(expected, rel=1e-6)
    # means over each side, not over the union
    expected = (math.log(1 + math.exp(-1)) + math.log(1 + math.exp(-3))) / 2 + math.log(2)
    assert logistic_loss(t(1.0, 3.0), t(0.0)).item() == pytest.approx(expected, rel=1e-6)
    assert math.isfinite(logistic_loss(t(-1000.0), t(1000.0)).item())  # no overflow


def test_generator_rewards_and_maxent_loss():
    assert gail_reward(t(0.0)).item() == pytest.approx(math.log(2))  # -log(1 - 1/2)
    d = 1 / (1 + math.exp(-1.5))
    assert gail_reward(t(1.5), "positive").item() == pytest.approx(-math.log(1 - d), rel=1e-6)
    assert gail_reward(t(1.5), "logit").item() == pytest.approx(math.log(d) - math.log(1 - d))
    assert airl_logits(t(2.0), t(-0.5)).item() == pytest.approx(2.5)
    assert maxent_irl_loss(t(5.0), t(1.0, 3.0)).item() == pytest.approx(-3.0)
    with pytest.raises(ValueError, match="gail_reward"):
        gail_reward(t(0.0), "bogus")  # type: ignore[arg-type]


@pytest.mark.parametrize(("weight_norm", "expected"), [(2.0, 1.0), (1.0, 0.0), (3.0, 4.0)])
def test_gradient_penalty_of_a_linear_score(weight_norm, expected):
    w = torch.tensor([0.6, 0.8]) * weight_norm  # the gradient everywhere; its norm is weight_norm
    def score(batch):
        return batch["obs"] @ w
    expert = {"obs": torch.randn(8, 2), "dones": torch.zeros(8)}
    agent = {"obs": torch.randn(8, 2), "dones": torch.zeros(8)}
    penalty = gradient_penalty(score, expert, agent, torch.Generator().manual_seed(0))
    assert penalty.item() == pytest.approx(expected, abs=1e-4)


def test_airl_score_is_reward_plus_potential_shaping():
    env = gym.make("Pendulum-v1")
    config = DiscriminatorConfig(loss="airl", state_only=True, gamma=0.9, hidden=(16,))
    disc = build_discriminator(config, env.observation_space, env.action_space, seed=0)
    obs = torch.randn(6, 3)
    batch = {"obs": obs[:-1], "acts": torch.zeros(5, 1), "next_obs": obs[1:],
             "dones": torch.tensor([0, 0, 0, 0, 1.0])}
    g = disc.reward_net(obs[:-1], None, None, None)
    h = disc.shaping_net(obs, None, None, None)
    f = disc.score(batch).detach()
    not_done = 1 - batch["dones"]
    torch.testing.assert_close(f, (g + 0.9 * not_done * h[1:] - h[:-1]).detach())
    # along an episode the shaping telescopes: sum gamma^t f_t = sum gamma^t g_t - h(s_0)
    # (the last step is terminal, so h(s_T) drops out)
    discount = 0.9 ** torch.arange(5.0)
    assert (discount * f).sum().item() == pytest.approx(
        ((discount * g).sum() - h[0]).item(), abs=1e-5)


def test_config_errors_name_the_field():
    with pytest.raises(InvalidDataError, match="DiscriminatorConfig.loss"):
        DiscriminatorConfig(loss="wgan")  # type: ignore[arg-type]
    with pytest.raises(InvalidDataError, match="DiscriminatorConfig.reward_clip"):
        DiscriminatorConfig(reward_clip=-1.0)
    env = gym.make("Pendulum-v1")
    disc = build_discriminator(DiscriminatorConfig(loss="airl"), env.observation_space,
                               env.action_space)
    batch = {"obs": torch.zeros(2, 3), "acts": torch.zeros(2, 1), "next_obs": torch.zeros(2, 3),
             "dones": torch.zeros(2)}
    with pytest.raises(InvalidDataError, match="log_pi"):
        disc.loss(batch, batch)
    assert np.isfinite(disc.generator_reward(np.zeros((2, 3)), np.zeros((2, 1)),
                                             np.zeros((2, 3)), np.zeros(2, bool))).all()
