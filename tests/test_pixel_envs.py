"""The numpy-drawn pixel tasks: valid gymnasium envs whose frames show their state."""

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

from envs.pixels import PIXEL_ENV_IDS, Canvas, PixelPendulum, PixelPointMass, register_pixel_envs
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
