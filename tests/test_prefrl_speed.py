"""What makes pref-rl run at the speed of its agent (issue 14) without changing what it computes:
query candidates scored once per distinct step, PPO's rewards computed once per rollout (the steps
before a mid-rollout refit labelled with the reward they were taken under), and a run that is
the same for the same seed."""

import numpy as np
import pytest
import torch

from rlkit.data import SegmentPairs, Trajectory, TrajectoryStore, sample_segments
from rlkit.errors import ConfigError
from rlkit.prefrl import PreferenceRL
from rlkit.prefrl.query import preference_probabilities
from rlkit.reward import RewardEnsemble, RewardNet, RewardNetSpec
from rlkit.reward.numpy_rewards import TorchRewardFn
from tests.tiny_runs import small_config


@pytest.fixture
def store() -> TrajectoryStore:
    """Trajectories of 12 to 40 steps, every other one ending in a true termination."""
    rng = np.random.default_rng(0)
    store = TrajectoryStore()
    for i, length in enumerate(rng.integers(12, 41, size=10)):
        store.append(Trajectory(rng.normal(size=(length + 1, 4)).astype(np.float32),
                                rng.uniform(-1, 1, size=(length, 2)).astype(np.float32),
                                np.zeros(length, np.float32), terminal=bool(i % 2)))
    return store


def mixed_pairs(store: TrajectoryStore, n: int) -> SegmentPairs:
    """Overlapping pairs of 3 to 10 steps (equal within a pair), ends of trajectories included."""
    rng = np.random.default_rng(1)
    lengths = rng.integers(3, 11, size=n)
    left = np.concatenate([sample_segments(store, 1, int(k), rng) for k in lengths])
    right = np.concatenate([sample_segments(store, 1, int(k), rng) for k in lengths])
    return SegmentPairs(store, left, right)


class CountingReward:
    """A numpy reward reading every input (``dones`` too); counts the steps it is asked about."""

    def __init__(self, weight: float) -> None:
        self.weight, self.rows = weight, 0

    def __call__(self, obs, acts, next_obs, dones):
        self.rows += len(obs)
        return (self.weight * obs[:, 0] + acts[:, 1] - next_obs[:, 2] + 3.0 * dones
                ).astype(np.float32)


def reference_probabilities(members, pairs: SegmentPairs) -> np.ndarray:
    """Each pair's segments gathered whole and summed over their real steps, member by member."""
    left, right = pairs.gather()

    def returns(member, batch) -> np.ndarray:
        n, length = batch.mask.shape
        flat = [a.reshape(n * length, *a.shape[2:])
                for a in (batch.obs, batch.acts, batch.next_obs, batch.dones)]
        rewards = np.asarray(member(*flat), np.float64).reshape(n, length)
        return np.where(batch.mask, rewards, 0.0).sum(axis=1)

    deltas = np.stack([returns(m, left) - returns(m, right) for m in members])
    return 1.0 / (1.0 + np.exp(-deltas))


def test_candidates_are_scored_once_per_distinct_step(store: TrajectoryStore) -> None:
    pairs = mixed_pairs(store, 300)
    members = [CountingReward(1.0), CountingReward(-2.0)]
    expected = reference_probabilities(members, pairs)
    steps = {(int(t), int(s) + k) for t, s, n in np.concatenate([pairs.left, pairs.right])
             for k in range(n)}
    for chunk in (1, 7, 4096):
        for member in members:
            member.rows = 0
        np.testing.assert_allclose(preference_probabilities(members, pairs, chunk), expected,
                                   rtol=1e-12, atol=1e-12)
        assert [m.rows for m in members] == [len(steps)] * 2  # not 2 x 300 x ~6.5 segment steps
    assert len(steps) <= store.n_steps < 2 * pairs.left[:, 2].sum()  # the segments overlap
    with pytest.raises(ConfigError, match="chunk_steps must be >= 1"):
        preference_probabilities(members, pairs, 0)


def test_a_torch_ensemble_scores_as_its_members_do(store: TrajectoryStore) -> None:
    pairs = mixed_pairs(store, 200)
    spec = RewardNetSpec("mlp", (4,), (2,), hidden=(16, 16), inputs=("obs", "act", "next_obs", "done"))
    model = RewardEnsemble([RewardNet(spec, seed=i) for i in range(3)])
    expected = reference_probabilities([TorchRewardFn(m) for m in model.members], pairs)
    for chunk in (5, 4096):
        np.testing.assert_allclose(preference_probabilities(model, pairs, chunk), expected,
                                   rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(preference_probabilities(model.members[0], pairs), expected[:1],
                               rtol=1e-5, atol=1e-6)


def test_ppo_steps_are_labelled_with_the_reward_they_were_taken_under_before_each_refit() -> None:
    loop = PreferenceRL.from_config(small_config("ppo"))  # rounds every 200 steps, rollouts of 128
    relabeller = loop.relabeller
    assert relabeller is not None
    seen: list[tuple[int, int, int]] = []
    fit = loop.trainer.fit

    def spied(*args, **kwargs):
        seen.append((loop.agent.num_timesteps, relabeller.n_unlabelled, relabeller.n_labelled))
        return fit(*args, **kwargs)

    loop.trainer.fit = spied  # type: ignore[method-assign]
    loop.learn()
    assert [timestep for timestep, _, _ in seen] == [200, 400, 600]
    assert all(waiting == 0 for _, waiting, _ in seen)  # none paid by the refit model
    assert any(labelled > 0 for _, _, labelled in seen)  # a round fell inside a rollout
    assert np.isnan(loop.result.episodes.learned_returns).all()  # not known when episodes end


def test_a_ppo_run_is_the_same_for_the_same_seed() -> None:
    runs = []
    for _ in range(2):  # one after the other: the agent samples from torch's global RNG
        runs.append(PreferenceRL.from_config(small_config("ppo")))
        runs[-1].learn()
    first, second = runs
    np.testing.assert_array_equal(first.dataset.labels, second.dataset.labels)
    np.testing.assert_array_equal(first.dataset.pairs.left, second.dataset.pairs.left)
    for a, b in zip(first.model.state_dict().values(), second.model.state_dict().values(),
                    strict=True):
        assert torch.equal(a, b)
    for a, b in zip(first.agent.policy.parameters(), second.agent.policy.parameters(), strict=True):
        assert torch.equal(a, b)
    np.testing.assert_array_equal(first.agent.rollout_buffer.rewards,
                                  second.agent.rollout_buffer.rewards)
