"""The DMControl pixel tasks (envs.dmc): registered with ``import envs`` without importing
dm_control, valid gymnasium envs of uint8 frames, seeded, with the reference's action repeat and
episode length, and clear errors when the extra or the renderer is missing.

Rendering costs ~40 ms a frame with software EGL: each test renders a handful of small frames."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import envs  # noqa: F401  (registers the ids)
from envs.dmc import DMC_ENV_IDS, DMC_TASKS, EGL_PACKAGES, DMCPixels
from envs.pixels import make_pixel_env
from rlkit.errors import ConfigError, InvalidDataError
from rlkit.extras import MissingExtraError

ROOT = Path(__file__).resolve().parents[1]
SIZE = 16  # small frames: the tests check shapes and seeding, not pictures

needs_dm_control = pytest.mark.skipif(
    any(importlib.util.find_spec(module) is None for module in ("dm_control", "shimmy")),
    reason="the dmc extra (dm_control, shimmy) is not installed")


def rollout(env: gymnasium.Env, seed: int, steps: int) -> tuple[np.ndarray, np.ndarray]:
    frames = [env.reset(seed=seed)[0]]
    rng = np.random.default_rng(seed)
    rewards = []
    for _ in range(steps):
        frame, reward, *_ = env.step(rng.uniform(-1, 1, env.action_space.shape).astype(np.float32))
        frames.append(frame)
        rewards.append(reward)
    return np.stack(frames), np.array(rewards)


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "PYOPENGL_PLATFORM")}
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**environ, **env},
                          capture_output=True, text=True, timeout=120)


def test_import_envs_registers_the_ids_and_loads_no_dm_control():
    result = run_python(
        "import os, sys, gymnasium, envs\n"
        f"assert all(i in gymnasium.registry for i in {DMC_ENV_IDS!r})\n"
        "assert not any(m.startswith(('dm_control', 'shimmy')) for m in sys.modules)\n"
        "assert 'MUJOCO_GL' not in os.environ\n"
        "print('fine')")
    assert result.stdout.strip() == "fine", result.stderr
    assert DMC_ENV_IDS == ("rlkit/dmc-cheetah-run-pixels-v0", "rlkit/dmc-walker-walk-pixels-v0",
                           "rlkit/dmc-walker-run-pixels-v0")
    assert all(gymnasium.spec(i).max_episode_steps == 500 for i in DMC_ENV_IDS)  # 1,000 / repeat 2


@needs_dm_control
@pytest.mark.parametrize("env_id", DMC_ENV_IDS)
def test_each_task_passes_the_checker_and_steps_frames(env_id):
    env = gymnasium.make(env_id, size=SIZE, render_mode="rgb_array")
    check_env(env.unwrapped)
    assert env.action_space == gymnasium.spaces.Box(-1, 1, (6,), np.float32)
    assert env.observation_space == gymnasium.spaces.Box(0, 255, (SIZE, SIZE, 3), np.uint8)
    assert env.unwrapped.camera_id == 0 and env.unwrapped.action_repeat == 2
    frame, info = env.reset(seed=0)
    assert frame.dtype == np.uint8 and frame.shape == (SIZE, SIZE, 3) and info["state"].ndim == 1
    frame, reward, terminated, truncated, info = env.step(env.action_space.sample())
    assert frame.dtype == np.uint8 and frame.shape == (SIZE, SIZE, 3) and frame.std() > 0
    assert isinstance(reward, float) and not terminated and not truncated
    assert np.array_equal(env.render(), frame)
    env.close()


@needs_dm_control
def test_the_default_frame_is_the_references_84x84_and_stacks_channel_first():
    assert gymnasium.make(DMC_ENV_IDS[0]).reset(seed=0)[0].shape == (84, 84, 3)
    stacked = make_pixel_env(DMC_ENV_IDS[1], frame_stack=3, size=SIZE, render_mode="rgb_array")
    first, _ = stacked.reset(seed=0)
    assert first.shape == (9, SIZE, SIZE) and first.dtype == np.uint8
    assert np.array_equal(first[-3:], np.transpose(stacked.render(), (2, 0, 1)))


@needs_dm_control
@pytest.mark.parametrize("env_id", DMC_ENV_IDS)
def test_a_seed_gives_the_same_frames(env_id):
    env = gymnasium.make(env_id, size=SIZE)
    frames, rewards = rollout(env, seed=3, steps=3)
    again, rewards_again = rollout(env, seed=3, steps=3)
    other, _ = rollout(env, seed=4, steps=3)
    assert np.array_equal(frames, again) and np.array_equal(rewards, rewards_again)
    assert not np.array_equal(frames[0], other[0])  # the initial pose is random per seed
    assert len({f.tobytes() for f in frames}) > 1  # the body moves


@needs_dm_control
def test_an_action_is_repeated_and_its_rewards_summed():
    domain, task = DMC_TASKS["rlkit/dmc-walker-walk-pixels-v0"]
    twice = DMCPixels(domain, task, size=SIZE, action_repeat=2)
    once = DMCPixels(domain, task, size=SIZE, action_repeat=1)
    twice.reset(seed=1)
    once.reset(seed=1)
    for action in np.random.default_rng(0).uniform(-1, 1, (3, 6)).astype(np.float32):
        frame, reward, *_, info = twice.step(action)
        steps = [once.step(action) for _ in range(2)]
        assert reward == pytest.approx(steps[0][1] + steps[1][1], abs=1e-12) and steps[1][1] > 0
        assert np.array_equal(frame, steps[1][0])  # one frame, after the last repeat
        assert np.array_equal(info["state"], steps[1][4]["state"])


@needs_dm_control
def test_an_episode_is_the_suites_1000_control_steps():
    # a repeat of 300: 300, 600, 900, then the last 100 control steps end the episode
    env = DMCPixels("cheetah", "run", size=8, action_repeat=300)
    env.reset(seed=0)
    ends = [env.step(np.zeros(6, np.float32))[2:4] for _ in range(4)]
    assert ends == [(False, False)] * 3 + [(False, True)]


@needs_dm_control
def test_bad_settings_are_config_errors():
    with pytest.raises(ConfigError, match="no dm_control suite task cheetah_fly"):
        DMCPixels("cheetah", "fly")
    with pytest.raises(ConfigError, match="action_repeat must be a positive integer"):
        DMCPixels("cheetah", "run", action_repeat=0)
    with pytest.raises(ConfigError, match="at least 8x8"):
        DMCPixels("cheetah", "run", size=4)
    with pytest.raises(ConfigError, match="offscreen buffer"):
        DMCPixels("cheetah", "run", size=4096)
    env = DMCPixels("walker", "walk", size=8)
    env.reset(seed=0)
    with pytest.raises(InvalidDataError, match=r"action of shape \(5,\)"):
        env.step(np.zeros(5, np.float32))
    assert DMCPixels("quadruped", "run", size=8).camera_id == 2  # the reference's zoomed camera


@pytest.mark.parametrize("blocked", [("dm_control",), ("shimmy", "shimmy.dm_control_compatibility")])
def test_a_missing_extra_names_it(monkeypatch, blocked):
    for module in blocked:
        monkeypatch.setitem(sys.modules, module, None)  # as if it were not installed
    with pytest.raises(MissingExtraError, match=r"pip install 'rlkit\[dmc\]'"):
        gymnasium.make(DMC_ENV_IDS[0])


@needs_dm_control
def test_a_renderer_that_cannot_start_names_the_system_packages():
    # MUJOCO_GL is unset, so envs.dmc picks egl; PyOpenGL bound to another platform stops EGL
    result = run_python(
        "import gymnasium, envs\n"
        "from rlkit.errors import ConfigError\n"
        "try:\n"
        "    gymnasium.make('rlkit/dmc-cheetah-run-pixels-v0')\n"
        "except ConfigError as error:\n"
        "    print(error)\n", PYOPENGL_PLATFORM="osmesa")
    assert "MUJOCO_GL=egl" in result.stdout and " ".join(EGL_PACKAGES) in result.stdout, result.stderr
