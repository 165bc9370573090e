"""The numpy-drawn pixel tasks: valid gymnasium envs whose frames show their state."""

import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

from envs.pixels import (
    PIXEL_ENV_IDS,
    Canvas,
    PixelPendulum,
    PixelPointMass,
    StackFrames,
    make_pixel_env,
    register_pixel_envs,
)
from rlkit.errors import ConfigError


@pytest.fixture(scope="module", autouse=True)
def registered():
    register_pixel_envs()


@pytest.mark.parametrize("env_id", PIXEL_ENV_IDS)
def test_the_tasks_pass_gymnasium_and_sb3_checkers(env_id):
    env = gymnasium.make(env_id).unwrapped
    check_env(env, skip_render_check=True)
    sb3_check_env(env, warn=False)
    frame, info = env.reset(seed=0)
    assert frame.dtype == np.uint8 and frame.shape == (64, 64, 3)
    assert "state" in info


@pytest.mark.parametrize("env_id", PIXEL_ENV_IDS)
def test_a_seed_gives_the_same_frames_and_rewards(env_id):
    def rollout(seed):
        env = gymnasium.make(env_id)
        frames, rewards = [env.reset(seed=seed)[0]], []
        env.action_space.seed(seed)
        for _ in range(20):
            frame, reward, *_ = env.step(env.action_space.sample())
            frames.append(frame)
            rewards.append(reward)
        return np.stack(frames), np.array(rewards)

    frames, rewards = rollout(3)
    again, rewards_again = rollout(3)
    other, _ = rollout(4)
    assert np.array_equal(frames, again) and np.array_equal(rewards, rewards_again)
    assert not np.array_equal(frames, other)
    assert len({f.tobytes() for f in frames}) > 5  # the scene moves


def _centroid(frame: np.ndarray, colour) -> np.ndarray:
    rows, cols = np.nonzero((frame == np.array(colour, dtype=np.uint8)).all(axis=-1))
    return np.array([cols.mean(), rows.mean()])


def test_the_pendulum_frame_shows_the_angle():
    env = PixelPendulum(size=64)
    env.reset(seed=0)
    centre = np.array([31.5, 31.5])
    for theta, direction in [(0.0, (0, -1)), (np.pi, (0, 1)), (np.pi / 2, (1, 0))]:
        env.inner.state = np.array([theta, 0.0])
        offset = _centroid(env.render(), (220, 120, 60)) - centre
        assert offset @ np.array(direction) > 8, (theta, offset)  # rows grow downwards


def test_the_pendulum_keeps_pendulum_v1s_dynamics_and_reward():
    pixels, plain = PixelPendulum(), gymnasium.make("Pendulum-v1").unwrapped
    _, info = pixels.reset(seed=1)
    plain.reset(seed=0)
    plain.state = info["state"].copy()
    for action in np.linspace(-2, 2, 15):
        _, reward, *_ , info = pixels.step(np.array([action], dtype=np.float32))
        _, expected, *_ = plain.step(np.array([action], dtype=np.float32))
        assert reward == pytest.approx(expected)
        assert np.allclose(info["state"], plain.state)


def test_the_point_mass_moves_where_it_is_pushed_and_is_drawn_there():
    env = PixelPointMass(size=64)
    _, info = env.reset(seed=0)
    start = info["state"][:2].copy()
    for _ in range(10):
        frame, reward, _, _, info = env.step(np.array([1.0, 0.0]))
    position, target = info["state"][:2], info["state"][4:6]
    assert position[0] > start[0] + 0.1 and position[1] == pytest.approx(start[1])
    assert reward == pytest.approx(-np.linalg.norm(position - target) - 0.01)
    # pixel column grows with x, row shrinks with y (world y up)
    drawn = _centroid(frame, (230, 200, 70))
    expected = np.array([(position[0] + 1.1) / 2.2 * 64 - 0.5, (1.1 - position[1]) / 2.2 * 64 - 0.5])
    assert np.abs(drawn - expected).max() < 1.5


def test_frames_are_fresh_arrays_not_the_canvas():
    env = PixelPointMass()
    first, _ = env.reset(seed=0)
    kept = first.copy()
    env.step(np.array([1.0, 1.0]))
    assert np.array_equal(first, kept)


def test_a_tiny_canvas_is_refused():
    with pytest.raises(ConfigError, match="at least 8x8"):
        Canvas(4, 1.0)


def test_stacked_frames_are_channel_first_oldest_first_and_reset_fills_every_slot():
    raw, stacked = PixelPointMass(size=16), StackFrames(PixelPointMass(size=16), k=3)
    assert stacked.observation_space.shape == (9, 16, 16)
    frames = [raw.reset(seed=5)[0]]
    obs, _ = stacked.reset(seed=5)
    assert obs.dtype == np.uint8 and obs.shape == (9, 16, 16)
    assert np.array_equal(obs, np.concatenate([frames[0].transpose(2, 0, 1)] * 3))
    previous = obs
    for step in range(4):
        action = np.array([1.0, -0.5]) * (step + 1) / 4
        frames.append(raw.step(action)[0])
        obs = stacked.step(action)[0]
        window = [frames[max(i, 0)] for i in range(len(frames) - 3, len(frames))]
        assert np.array_equal(obs, np.concatenate([f.transpose(2, 0, 1) for f in window]))
        assert not np.shares_memory(obs, previous)  # each observation is a fresh array
        previous = obs
    assert not np.array_equal(frames[-1], frames[-2])  # the steps above did move the scene


def test_a_stack_of_one_is_the_transposed_frame():
    env = StackFrames(PixelPendulum(size=16), k=1)
    frame = PixelPendulum(size=16).reset(seed=2)[0]
    assert np.array_equal(env.reset(seed=2)[0], frame.transpose(2, 0, 1))


@pytest.mark.parametrize("env_id", PIXEL_ENV_IDS)
def test_a_stacked_task_passes_the_checkers_and_rebuilds_from_its_spec(env_id):
    env = make_pixel_env(env_id, frame_stack=3, size=32)
    assert env.observation_space.shape == (9, 32, 32)
    with warnings.catch_warnings():  # it is a wrapped env on purpose: the stack is what we check
        warnings.filterwarnings("ignore", message=".*different from the unwrapped")
        check_env(env, skip_render_check=True)
    sb3_check_env(env, warn=False)
    assert gymnasium.make(env.spec).observation_space.shape == (9, 32, 32)


@pytest.mark.parametrize("k", [0, -1, 2.0, True])
def test_a_bad_stack_size_is_refused(k):
    with pytest.raises(ConfigError, match="k must be an integer >= 1"):
        StackFrames(PixelPointMass(size=16), k=k)


def test_stacking_needs_uint8_channel_last_frames():
    with pytest.raises(ConfigError, match=r"uint8 frames of shape \(H, W, C\)"):
        StackFrames(gymnasium.make("Pendulum-v1"), k=3)
