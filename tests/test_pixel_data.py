"""Stacked pixel observations in the trajectory store: each frame kept once, stacks as views."""

import json

import numpy as np
import pytest
from stable_baselines3.common.env_util import make_vec_env

from envs.pixels import PixelPointMass, StackFrames
from rlkit.data import (
    SegmentPairs,
    Trajectory,
    TrajectoryStore,
    collect_trajectories,
    gather,
    sample_segments,
    segment_returns,
)
from rlkit.data.frames import frames_of_stacks, stacked_view
from rlkit.errors import ConfigError, FileFormatError, InvalidDataError
from rlkit.feedback import FIVE, PreferenceDataset
from rlkit.persistence.arrays import load_npz, save_npz

K, C, H, W = 3, 3, 5, 4


def stacked_trajectory(length: int, rng: np.random.Generator, k: int = K) -> Trajectory:
    """Random uint8 frames stacked channel-first, oldest first, as StackFrames makes them."""
    frames = rng.integers(0, 256, size=(length + k, C, H, W), dtype=np.uint8)
    obs = np.stack([frames[t : t + k].reshape(k * C, H, W) for t in range(length + 1)])
    acts = rng.normal(size=(length, 2)).astype(np.float32)
    return Trajectory(obs=obs, acts=acts, rews=rng.normal(size=length).astype(np.float32),
                      terminal=bool(length % 2), states=rng.normal(size=(length, 4)))


@pytest.fixture
def trajectories():
    rng = np.random.default_rng(0)
    return [stacked_trajectory(n, rng) for n in (7, 12, 3, 9)]


def stacked_store(trajectories) -> TrajectoryStore:
    store = TrajectoryStore(frame_stack=K)
    store.extend(trajectories)
    return store


def assert_same_trajectories(store: TrajectoryStore, trajectories) -> None:
    assert len(store) == len(trajectories)
    for kept, original in zip(store, trajectories, strict=True):
        assert kept.obs.dtype == np.uint8 and kept.obs.shape == original.obs.shape
        np.testing.assert_array_equal(kept.obs, original.obs)
        np.testing.assert_array_equal(kept.acts, original.acts)
        np.testing.assert_array_equal(kept.rews, original.rews)
        np.testing.assert_array_equal(kept.states, original.states)
        assert kept.terminal == original.terminal


def test_stacked_trajectories_come_back_exactly(trajectories):
    store = stacked_store(trajectories)
    assert_same_trajectories(store, trajectories)
    assert store.obs_shape == (K * C, H, W) and store.frame_stack == K
    assert store.frames.shape == (sum(len(t) + K for t in trajectories), C, H, W)


def test_observations_are_read_only_strided_views_of_the_frames(trajectories):
    store = stacked_store(trajectories)
    obs = store[1].obs
    assert np.shares_memory(obs, store.frames) and np.shares_memory(obs[5], store.frames)
    assert obs.strides == (C * H * W, H * W, W, 1)  # one frame a row: no copy per observation
    assert not obs.flags.writeable
    with pytest.raises(ValueError):
        obs[0, 0, 0, 0] = 1
    # the second trajectory's frames start after the first's 7 + K
    first = len(trajectories[0]) + K
    np.testing.assert_array_equal(store.frames[first : first + K].reshape(K * C, H, W), obs[0])


def test_gathered_windows_equal_those_of_an_unstacked_store(trajectories):
    stacked, plain = stacked_store(trajectories), TrajectoryStore()
    plain.extend(trajectories)
    index = sample_segments(plain, 40, 3, np.random.default_rng(1))
    index[:2] = [[1, 0, 12], [2, 0, 3]]  # whole trajectories: first and last observations too
    got = stacked.gather_steps(index[:, 0], index[:, 1], index[:, 2])
    expected = plain.gather_steps(index[:, 0], index[:, 1], index[:, 2])
    assert got.keys() == expected.keys()
    for name in expected:
        np.testing.assert_array_equal(got[name], expected[name], err_msg=name)
    assert got["obs"].shape == (40, 12, K * C, H, W) and got["obs"].flags.writeable


def test_memory_is_the_frames_once_about_one_kth_of_the_stacks(trajectories):
    store, plain = stacked_store(trajectories), TrajectoryStore()
    plain.extend(trajectories)
    frames_bytes = sum((len(t) + K) * C * H * W for t in trajectories)
    assert store.frames.nbytes == frames_bytes
    assert store.nbytes - store.frames.nbytes == plain.nbytes - plain.frames.nbytes  # the rest alike
    stacked_bytes = sum(t.obs.nbytes for t in trajectories)
    assert frames_bytes < stacked_bytes / K * 1.25  # 1/k plus each trajectory's k - 1 first frames


def test_appending_after_reading_keeps_earlier_views_and_adds_the_new(trajectories):
    store = stacked_store(trajectories[:2])
    early = store[0].obs
    kept = early.copy()
    store.extend(trajectories[2:])
    assert_same_trajectories(store, trajectories)
    np.testing.assert_array_equal(early, kept)  # the earlier view still reads its frames
    copied = TrajectoryStore(frame_stack=K)
    copied.extend(store)  # a store's own views append like any stacks (as merging datasets does)
    assert_same_trajectories(copied, trajectories)
    assert not np.shares_memory(copied.frames, store.frames)


def test_save_load_and_chunks_keep_the_frames_and_the_stack(trajectories, tmp_path):
    store = stacked_store(trajectories)
    path = store.save(tmp_path / "pixels")
    saved = load_npz(path)
    assert "obs" not in saved and int(saved["frame_stack"]) == K
    assert saved["frames"].nbytes == store.frames.nbytes  # the file holds each frame once
    loaded = TrajectoryStore.load(path)
    assert loaded.frame_stack == K
    assert_same_trajectories(loaded, trajectories)
    chunks = [store.save(tmp_path / "a", 0, 1), store.save(tmp_path / "b", 1, 4)]
    joined = TrajectoryStore.load_chunks(chunks)
    assert joined.frame_stack == K
    assert_same_trajectories(joined, trajectories)
    assert_same_trajectories(TrajectoryStore.from_arrays(store.arrays(1, 3)), trajectories[1:3])


def test_a_preference_dataset_of_pixel_trajectories_saves_and_loads(trajectories, tmp_path):
    store = stacked_store(trajectories)
    dataset = PreferenceDataset(store, scale=FIVE)
    index = sample_segments(store, 4, 3, np.random.default_rng(2))
    dataset.append(SegmentPairs(store, index[:2], index[2:]), np.array([0.0, 1.0]), source="test")
    loaded = PreferenceDataset.load(dataset.save(tmp_path / "prefs")[0])
    assert loaded.store.frame_stack == K
    assert_same_trajectories(loaded.store, trajectories)


def header_format(path) -> str:
    return json.loads(bytes(load_npz(path)["_header"]))["format"]


def test_every_store_is_format_2_and_another_version_is_refused_by_name(trajectories, tmp_path):
    """Frames in place of obs came with /2 (an rlkit before frame stacks says the file is newer
    instead of naming a missing ``obs``); single observations are /2 too, and a /1 file is refused."""
    stacked = stacked_store(trajectories).save(tmp_path / "pixels")
    assert header_format(stacked) == "rlkit.trajectories/2"
    plain = TrajectoryStore()
    plain.extend(trajectories)
    assert header_format(plain.save(tmp_path / "plain")) == "rlkit.trajectories/2"
    arrays = load_npz(stacked)
    for version, says in ((1, "an old version this rlkit no longer reads"), (3, "written by a newer rlkit")):
        found = f"rlkit.trajectories/{version}"
        tagged = np.frombuffer(json.dumps({"format": found}).encode(), dtype=np.uint8)
        save_npz(tmp_path / f"v{version}.npz", {**arrays, "_header": tagged})
        with pytest.raises(FileFormatError, match=rf"v{version}.npz: format is '{found}', {says}"):
            TrajectoryStore.load(tmp_path / f"v{version}.npz")


def test_a_store_of_single_frames_writes_the_arrays_it_always_wrote(tmp_path):
    rng = np.random.default_rng(3)
    store = TrajectoryStore()
    store.append(stacked_trajectory(4, rng))
    assert np.shares_memory(store.frames, store[0].obs) and store[0].obs.flags.writeable  # as ever
    assert set(load_npz(store.save(tmp_path / "plain"))) == {
        "_header", "obs", "acts", "rews", "lengths", "terminal", "states"}


def test_stacks_that_do_not_overlap_are_refused_naming_the_step():
    rng = np.random.default_rng(4)
    good = stacked_trajectory(6, rng)
    obs = good.obs.copy()
    obs[5, 0, 2, 1] ^= 1  # the oldest frame of obs[5] is no longer the middle frame of obs[4]
    bad = Trajectory(obs=obs, acts=good.acts, rews=good.rews)
    store = TrajectoryStore(frame_stack=K)
    with pytest.raises(InvalidDataError, match=r"at step 4, obs\[5\]'s oldest 6 channels"):
        store.append(bad)
    assert len(store) == 0  # nothing half-added
    obs = good.obs.copy()
    obs[6, -C:] = 0  # the newest frame may be anything
    store.append(Trajectory(obs=obs, acts=good.acts, rews=good.rews))
    with pytest.raises(InvalidDataError, match="not stacks of 2 frames"):
        TrajectoryStore(frame_stack=2).append(good)  # 9 channels do not split into 2 frames


@pytest.mark.parametrize("k", [0, 1.5, True, "3"])
def test_a_bad_frame_stack_is_refused(k):
    with pytest.raises(ConfigError, match="frame_stack must be an integer >= 1"):
        TrajectoryStore(frame_stack=k)


def test_damaged_frame_files_are_refused_by_name(trajectories, tmp_path):
    arrays = dict(stacked_store(trajectories).arrays())
    with pytest.raises(FileFormatError, match="frames need frame_stack"):
        TrajectoryStore.from_arrays({**arrays, "frame_stack": np.array([3, 3])})
    with pytest.raises(FileFormatError, match="frames or terminal rows do not match"):
        TrajectoryStore.from_arrays({**arrays, "frame_stack": np.array(2)})
    with pytest.raises(FileFormatError, match="both obs and frames"):
        TrajectoryStore.from_arrays({**arrays, "obs": arrays["frames"]})
    plain = TrajectoryStore()
    plain.extend(trajectories)
    chunks = [stacked_store(trajectories).save(tmp_path / "a"), plain.save(tmp_path / "b")]
    with pytest.raises(FileFormatError, match="different frame stacks"):
        TrajectoryStore.load_chunks(chunks)


def test_the_strided_view_is_each_window_of_k_frames():
    frames = np.arange(6 * 2 * 3, dtype=np.uint8).reshape(6, 2, 3)
    view = stacked_view(frames, 3)
    assert view.shape == (4, 6, 3)
    for i in range(4):
        np.testing.assert_array_equal(view[i], frames[i : i + 3].reshape(6, 3))
    np.testing.assert_array_equal(frames_of_stacks(np.ascontiguousarray(view), 3), frames)
    with pytest.raises(InvalidDataError, match="C-contiguous"):
        stacked_view(frames[:, :, ::2], 3)


def test_rollouts_of_a_stacked_pixel_env_store_once_per_frame():
    venv = make_vec_env(lambda: StackFrames(PixelPointMass(size=16), k=K), n_envs=2, seed=0)
    trajectories = collect_trajectories(venv, None, n_steps=30, rng=np.random.default_rng(5),
                                        max_length=12)  # cut pieces start mid-stack
    store = TrajectoryStore(frame_stack=K)
    store.extend(trajectories)
    assert_same_trajectories(store, trajectories)
    assert store.frames.shape == (sum(len(t) + K for t in trajectories), C, 16, 16)


@pytest.mark.parametrize("gamma", [1.0, 0.9])
def test_segment_returns_gather_rewards_only_and_equal_the_batch_returns(trajectories, gamma):
    store = stacked_store(trajectories)
    index = sample_segments(store, 30, 3, np.random.default_rng(6))
    index[0] = [1, 4, 8]  # windows of different lengths
    np.testing.assert_allclose(segment_returns(store, index, gamma), gather(store, index).returns(gamma))
    only = store.gather_steps(index[:, 0], index[:, 1], index[:, 2], fields=("rews", "mask"))
    assert set(only) == {"rews", "mask"}
    with pytest.raises(InvalidDataError, match="unknown fields"):
        store.gather_steps(index[:, 0], index[:, 1], index[:, 2], fields=("frames",))
