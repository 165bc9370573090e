"""Trajectories, the store, segments and rollouts."""

import numpy as np
import pytest
from stable_baselines3.common.env_util import make_vec_env

from rlkit.data import (
    SegmentPairs,
    Trajectory,
    TrajectoryRecorder,
    TrajectoryStore,
    collect_trajectories,
    gather,
    sample_pairs,
    sample_segments,
)
from rlkit.errors import FileFormatError, InvalidDataError
from tests.fake_data import make_trajectory


def test_trajectory_rejects_mismatched_and_non_finite_arrays():
    rng = np.random.default_rng(0)
    good = make_trajectory(5, rng)
    with pytest.raises(InvalidDataError, match="obs must have"):
        Trajectory(obs=good.obs[:-1], acts=good.acts, rews=good.rews)
    bad_rews = good.rews.copy()
    bad_rews[3] = np.nan
    with pytest.raises(InvalidDataError, match="rews holds NaN or inf \\(first at step 3\\)"):
        Trajectory(obs=good.obs, acts=good.acts, rews=bad_rews)
    assert list(make_trajectory(4, rng, terminal=True).dones) == [False, False, False, True]


def test_store_gathers_windows_exactly_as_slices_of_the_trajectories():
    rng = np.random.default_rng(1)
    trajs = [make_trajectory(n, rng, terminal=(n == 7)) for n in (10, 7, 12)]
    store = TrajectoryStore()
    store.extend(trajs)
    batch = gather(store, np.array([[1, 2, 5], [2, 0, 3], [0, 9, 1]]))
    assert batch.obs.shape == (3, 5, 3)
    np.testing.assert_array_equal(batch.obs[0], trajs[1].obs[2:7])
    np.testing.assert_array_equal(batch.next_obs[0], trajs[1].obs[3:8])
    np.testing.assert_array_equal(batch.acts[1, :3], trajs[2].acts[:3])
    # the window ending at the last step of the terminal trajectory is done there, and only there
    assert batch.dones[0].tolist() == [False, False, False, False, True]
    assert not batch.dones[2].any()  # last step of a non-terminal trajectory
    # padding beyond a window's length is masked and carries no reward
    assert batch.mask[1].tolist() == [True, True, True, False, False]
    assert batch.rews[1, 3:].sum() == 0
    np.testing.assert_allclose(batch.returns(), [trajs[1].rews[2:7].sum(), trajs[2].rews[:3].sum(),
                                                 trajs[0].rews[9]], rtol=1e-6)


def test_myopic_return_weights_late_steps_more():
    rng = np.random.default_rng(2)
    store = TrajectoryStore()
    store.append(make_trajectory(4, rng))
    batch = gather(store, np.array([[0, 0, 3]]))
    r = store[0].rews[:3]
    assert batch.returns(0.5)[0] == pytest.approx(0.25 * r[0] + 0.5 * r[1] + r[2], rel=1e-6)


def test_store_rejects_trajectories_of_other_spaces():
    rng = np.random.default_rng(3)
    store = TrajectoryStore()
    store.append(make_trajectory(3, rng))
    other = Trajectory(obs=np.zeros((4, 5), np.float32), acts=np.zeros((3, 2), np.float32),
                       rews=np.zeros(3, np.float32))
    with pytest.raises(InvalidDataError, match="spaces differ"):
        store.append(other)


def test_store_save_load_round_trip_and_damage(tmp_path):
    rng = np.random.default_rng(4)
    store = TrajectoryStore()
    store.extend([make_trajectory(n, rng, terminal=True) for n in (3, 6)])
    path = store.save(tmp_path / "trajs")
    loaded = TrajectoryStore.load(path)
    np.testing.assert_array_equal(loaded[1].obs, store[1].obs)
    assert loaded.terminal.tolist() == [True, True]
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(FileFormatError, match="damaged"):
        TrajectoryStore.load(path)


def test_segment_sampling_is_uniform_over_valid_windows_and_never_overruns():
    rng = np.random.default_rng(5)
    store = TrajectoryStore()
    store.extend([make_trajectory(n, rng) for n in (4, 10, 3)])  # lengths 4 and 3 too short / tight
    segments = sample_segments(store, 20000, 4, rng)
    traj, start, length = segments.T
    assert set(traj) == {0, 1}  # trajectory 2 is shorter than the window
    assert (start + length <= store.lengths[traj]).all()
    # trajectory 0 has 1 valid start, trajectory 1 has 7: shares 1/8 and 7/8
    assert np.mean(traj == 0) == pytest.approx(1 / 8, abs=0.01)
    with pytest.raises(InvalidDataError, match="no trajectory is at least 11 steps"):
        sample_segments(store, 1, 11, rng)


def test_pairs_must_have_equal_lengths_and_lie_inside_the_store():
    rng = np.random.default_rng(6)
    store = TrajectoryStore()
    store.append(make_trajectory(10, rng))
    with pytest.raises(InvalidDataError, match="different lengths \\(3 vs 4\\)"):
        SegmentPairs(store, np.array([[0, 0, 3]]), np.array([[0, 1, 4]]))
    with pytest.raises(InvalidDataError, match="runs past the end"):
        SegmentPairs(store, np.array([[0, 8, 3]]), np.array([[0, 0, 3]]))
    with pytest.raises(InvalidDataError, match="trajectory id out of range"):
        SegmentPairs(store, np.array([[1, 0, 3]]), np.array([[0, 0, 3]]))
    assert len(sample_pairs(store, 7, 5, rng)) == 7


def test_collect_random_rollouts_on_a_vec_env_splits_terminal_from_truncated():
    venv = make_vec_env("CartPole-v1", n_envs=3, seed=0)
    rng = np.random.default_rng(0)
    trajectories = collect_trajectories(venv, None, rng, n_episodes=6)
    assert len(trajectories) >= 6
    for t in trajectories:
        # a random CartPole episode falls over (terminal) long before the 500-step limit
        assert t.terminal and len(t) < 500
        assert t.rews.sum() == len(t)
    pieces = collect_trajectories(venv, lambda obs: np.zeros(len(obs), int), rng, n_steps=100,
                                  max_length=5)
    assert sum(len(t) for t in pieces) == 100
    assert max(len(t) for t in pieces) <= 5


def test_collect_from_an_sb3_policy_matches_its_actions():
    from stable_baselines3 import PPO

    venv = make_vec_env("Pendulum-v1", n_envs=2, seed=1)
    model = PPO("MlpPolicy", venv, n_steps=64, batch_size=64, seed=0)
    trajectories = collect_trajectories(venv, model, np.random.default_rng(0), n_steps=50,
                                        deterministic=True)
    t = trajectories[0]
    expected = model.predict(t.obs[:-1], deterministic=True)[0]
    np.testing.assert_allclose(t.acts, expected, rtol=1e-5)
    assert not t.terminal  # Pendulum only truncates


def test_recorder_closes_trajectories_at_episode_ends_and_cuts_long_ones():
    from rlkit.data import TrajectoryRecorder

    store = TrajectoryStore()
    recorder = TrajectoryRecorder(store, n_envs=2, max_length=3)
    obs = np.zeros((2, 3), np.float32)
    acts = np.zeros((2, 2), np.float32)
    for step in range(4):
        ended = np.array([step == 1, False])  # env 0 ends its episode at step 1 (terminal)
        recorder(obs + step, acts, obs + step + 1, np.array([1.0, 2.0]), ended, ended, [{}, {}])
    # env 0: a terminal 2-step episode; env 1: a 3-step cut (non-terminal); the rest still open
    assert [len(t) for t in store] == [2, 3]
    assert store[0].terminal and not store[1].terminal
    np.testing.assert_array_equal(store[0].obs[:, 0], [0, 1, 2])
    assert store[1].rews.tolist() == [2.0, 2.0, 2.0]
    truncated = TrajectoryStore()
    recorder = TrajectoryRecorder(truncated, n_envs=1)
    recorder(obs[:1], acts[:1], obs[:1], np.ones(1), np.array([True]), np.array([False]), [{}])
    assert not truncated[0].terminal  # a time-limit end is not a terminal state


def with_states(trajectory: Trajectory, width: int, offset: float) -> Trajectory:
    steps = len(trajectory.acts)
    states = offset + np.arange(steps * width, dtype=np.float64).reshape(steps, width)
    return Trajectory(trajectory.obs, trajectory.acts, trajectory.rews, trajectory.terminal,
                      states=states)


def test_the_store_keeps_simulator_states_through_appends_saves_and_chunks(tmp_path):
    rng = np.random.default_rng(5)
    trajectories = [with_states(make_trajectory(n, rng), 4, 100.0 * i) for i, n in enumerate((3, 5, 2))]
    store = TrajectoryStore()
    store.extend(trajectories[:2])
    store.extend(trajectories[2:])
    for i, trajectory in enumerate(trajectories):
        np.testing.assert_array_equal(store[i].states, trajectory.states)
    np.testing.assert_array_equal(TrajectoryStore.load(store.save(tmp_path / "all"))[2].states,
                                  trajectories[2].states)
    chunks = [store.save(tmp_path / "a", 0, 2), store.save(tmp_path / "b", 2, 3)]
    joined = TrajectoryStore.load_chunks(chunks)
    for i, trajectory in enumerate(trajectories):
        np.testing.assert_array_equal(joined[i].states, trajectory.states)


def test_a_store_mixing_trajectories_with_and_without_states_keeps_none():
    rng = np.random.default_rng(6)
    store = TrajectoryStore()
    store.extend([with_states(make_trajectory(3, rng), 4, 0.0), make_trajectory(4, rng)])
    assert store[0].states is None and store[1].states is None
    wider = TrajectoryStore()
    wider.extend([with_states(make_trajectory(3, rng), 4, 0.0)])
    wider.extend([with_states(make_trajectory(3, rng), 6, 0.0)])  # another env's state width
    assert wider[0].states is None


def test_a_recorders_open_trajectories_are_handed_over_and_recorded_on():
    """What a run resumed mid-episode records on from (rlkit.persistence.env_state)."""
    rng = np.random.default_rng(0)
    steps = [(rng.normal(size=(2, 3)).astype(np.float32), rng.normal(size=(2, 1)).astype(np.float32),
              rng.normal(size=2)) for _ in range(7)]
    stores = [TrajectoryStore(), TrajectoryStore()]
    first, second = (TrajectoryRecorder(store, n_envs=2, max_length=5) for store in stores)
    ends = np.zeros(2, bool)
    for index, (obs, acts, rews) in enumerate(steps):
        if index == 3:  # mid-trajectory: the second recorder goes on from the first's state
            state = first.episode_state()
            assert state is not None and state["obs.0"].shape == (3, 3)
            second.load_episode_state(state)
        recorder = first if index < 3 else second
        recorder(obs, acts, obs + 1, rews, ends, ends, [{}, {}])
        if index >= 3:
            first(obs, acts, obs + 1, rews, ends, ends, [{}, {}])
    for key, value in stores[0].arrays().items():
        np.testing.assert_array_equal(stores[1].arrays()[key], value, err_msg=key)
    assert len(stores[0]) == 2
