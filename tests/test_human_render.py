"""People see behaviour: simulator states recorded with each step, the queried segments rendered
from them by a background worker, and the label API showing the plot until the video is written."""

import json
import threading

import gymnasium as gym
import imageio.v2 as imageio
import numpy as np
import pytest
from PIL import Image
from stable_baselines3.common.env_util import make_vec_env

from rlkit.data import SegmentPairs, Trajectory, TrajectoryRecorder, TrajectoryStore, collect_trajectories
from rlkit.data.sim_state import STATE_KEY, RecordStates, record_states_if_mujoco
from rlkit.errors import InvalidDataError, WrongTypeError
from rlkit.human import HumanTeacher, HumanTeacherConfig, LabelStore
from rlkit.human.app import create_app
from rlkit.human.media import plot_name, shown_media
from rlkit.human.render import MujocoRenderer, ObservationRenderer, RenderQueue
from rlkit.human.settings import ServeConfig
from tests.pendulum_media import ENV, mujoco_pairs, pendulum_trajectories
from tests.web_client import client_for, login


def test_each_recorded_state_restores_the_observation_after_its_step():
    venv = make_vec_env(ENV, n_envs=2, seed=0, wrapper_class=RecordStates)
    # whole episodes: the pole falls under random actions, so each ends in a terminal state
    trajectories = collect_trajectories(venv, None, np.random.default_rng(0), n_episodes=4)
    assert all(t.terminal for t in trajectories) and len(trajectories) >= 4
    assert all(t.states is not None and t.states.shape == (len(t), 4) for t in trajectories)
    env = gym.make(ENV).unwrapped
    env.reset(seed=1)
    for trajectory in trajectories:
        for step, state in enumerate(trajectory.states):
            env.set_state(state[:2], state[2:])
            np.testing.assert_allclose(env._get_obs(), trajectory.obs[step + 1], atol=1e-5)


def test_the_recorder_keeps_states_only_when_every_step_has_one():
    appended: list[Trajectory] = []
    recorder = TrajectoryRecorder(type("Store", (), {"append": staticmethod(appended.append)})(), 2,
                                  max_length=2)
    obs, acts = np.zeros((2, 3), np.float32), np.zeros((2, 1), np.float32)
    no_done = np.zeros(2, dtype=bool)
    infos = [{STATE_KEY: np.full(4, 1.0)}, {}]  # env 1 records no state
    for step in range(2):
        recorder(obs, acts, obs + step + 1, np.ones(2), no_done, no_done, infos)
    recorded, unrecorded = appended
    np.testing.assert_array_equal(recorded.states, np.ones((2, 4)))
    assert unrecorded.states is None


def test_bad_states_and_envs_without_a_mujoco_state_are_refused():
    obs, acts, rews = np.zeros((3, 2), np.float32), np.zeros((2, 1), np.float32), np.zeros(2, np.float32)
    with pytest.raises(InvalidDataError, match=r"states must be floats of shape \(2, state size\)"):
        Trajectory(obs, acts, rews, states=np.zeros((3, 4)))
    with pytest.raises(InvalidDataError, match="states holds NaN or inf .first at step 1."):
        Trajectory(obs, acts, rews, states=np.array([[0.0], [np.nan]]))
    with pytest.raises(WrongTypeError, match="Pendulum-v1 has no MuJoCo state"):
        RecordStates(gym.make("Pendulum-v1"))
    pendulum = gym.make("Pendulum-v1")
    assert record_states_if_mujoco(pendulum) is pendulum  # its segments are shown as plots
    assert isinstance(record_states_if_mujoco(gym.make(ENV)), RecordStates)
    with pytest.raises(InvalidDataError, match="nq \\+ nv = 4 numbers a step, got shape \\(2, 3\\)"):
        MujocoRenderer(ENV)(np.zeros((2, 3)))


def test_the_renderer_draws_each_state_as_the_env_sees_it():
    trajectory = pendulum_trajectories()[0]
    renderer = MujocoRenderer(ENV, width=48, height=40)
    frames = renderer(trajectory.states)
    renderer.close()
    assert frames.shape == (len(trajectory), 40, 48, 3) and frames.dtype == np.uint8
    assert all(frame.std() > 5 for frame in frames)  # a scene, not a blank frame
    tilted = trajectory.states[-1].copy()
    tilted[1] += 0.5  # the pole's hinge
    assert np.abs(MujocoRenderer(ENV, width=48, height=40)(tilted[None])[0].astype(int)
                  - frames[-1]).sum() > 1000


def test_a_failed_render_is_named_and_the_worker_goes_on(tmp_path, caplog):
    calls = []

    def renderer(states: np.ndarray) -> np.ndarray:  # fails on 3-step segments
        calls.append(len(states))
        if len(states) == 3:
            raise RuntimeError("no GL context")
        return np.full((len(states), 8, 8, 3), 200, np.uint8)

    queue = RenderQueue(renderer)
    queue.submit(tmp_path / "a.webm", np.zeros((3, 2)))
    queue.submit(tmp_path / "b.webm", np.zeros((4, 2)))
    queue.submit(tmp_path / "b.webm", np.zeros((4, 2)))  # asked again before it is done: once
    assert queue.wait(60) and queue.pending == 0
    assert queue.failed == ["a.webm"] and "could not render a.webm" in caplog.text
    assert calls == [3, 4] and len(imageio.mimread(tmp_path / "b.webm")) == 4
    assert shown_media(tmp_path, "seg-1-0-3.webm") == ("", True)
    queue.submit(tmp_path / "seg-1-0-3.webm", np.zeros((3, 2)))  # fails: the page stops waiting for it
    assert queue.wait(60) and shown_media(tmp_path, "seg-1-0-3.webm") == ("", False)
    queue.close()
    with pytest.raises(InvalidDataError, match="closed"):
        queue.submit(tmp_path / "c.webm", np.zeros((1, 2)))


def test_shown_media_stands_the_plot_in_for_a_video_not_yet_written(tmp_path):
    segment = np.array([3, 0, 5])
    assert shown_media(tmp_path, "seg-3-0-5.webm") == ("", True)
    (tmp_path / plot_name(segment)).write_bytes(b"x")
    assert shown_media(tmp_path, "seg-3-0-5.webm") == ("seg-3-0-5.plot.webm", True)
    (tmp_path / "seg-3-0-5.webm").write_bytes(b"x")
    assert shown_media(tmp_path, "seg-3-0-5.webm") == ("seg-3-0-5.webm", False)
    assert shown_media(tmp_path, "l0.gif") == ("l0.gif", False)  # not a segment video: as it is
    assert shown_media(tmp_path, "") == ("", False)


def test_the_label_api_shows_plots_while_the_worker_renders_then_the_videos(tmp_path):
    gate = threading.Event()
    teacher, pairs, ids = mujoco_pairs(tmp_path, gate)
    client = client_for(create_app(teacher.store, ServeConfig(run_dir=str(tmp_path))))
    login(client, "ann")
    first = client.get("/api/queue/next").json()["query"]
    assert first["id"] == ids[0] and first["rendering"]
    assert (first["left_media"], first["right_media"]) == ("seg-0-0-6.plot.webm", "seg-1-2-6.plot.webm")
    assert client.get(f"/media/{first['left_media']}").status_code == 200
    assert teacher.renders.pending == 3  # seg-0-0-6 is in both pairs: rendered once

    gate.set()
    assert teacher.renders.wait(120) and not teacher.renders.failed
    media = client.get(f"/api/queries/{ids[0]}/media").json()
    assert media == {"left_media": "seg-0-0-6.webm", "right_media": "seg-1-2-6.webm", "rendering": False}
    frames = imageio.mimread(tmp_path / "media" / "seg-0-0-6.webm")
    assert len(frames) == 6 and frames[0].shape == (64, 64, 3) and frames[0].std() > 5
    assert client.get("/api/queries/999/media").status_code == 404
    assert client.get("/api/queries/0/media").status_code == 422
    anonymous = client_for(create_app(teacher.store, ServeConfig(run_dir=str(tmp_path))))
    assert anonymous.get(f"/api/queries/{ids[0]}/media").status_code == 401
    # asked again (a resumed trainer): the written videos are kept, nothing is rendered again
    written = (tmp_path / "media" / "seg-0-0-6.webm").stat().st_mtime_ns
    gate.clear()
    teacher.label(pairs)
    assert teacher.renders.pending == 0
    assert (tmp_path / "media" / "seg-0-0-6.webm").stat().st_mtime_ns == written


class Dot(gym.Env):
    """A custom env: a dot at ``state`` on a line, drawn by rgb_array rendering when asked."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, render_mode: str | None = None, draws: bool = True) -> None:
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.render_mode = render_mode
        self.state = 0.0
        if not draws:  # an env that cannot say which state an observation is: plots
            self.metadata = {"render_modes": [], "render_fps": 10}

    def state_from_observation(self, obs: np.ndarray) -> float:
        return float(obs[0])

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.state = 0.0
        return np.array([self.state], np.float32), {}

    def step(self, action):
        self.state = float(np.clip(self.state + 0.5 * action[0], -1, 1))
        return np.array([self.state], np.float32), 0.0, False, False, {}

    def render(self) -> np.ndarray:
        frame = np.zeros((20, 40, 3), np.uint8)
        frame[:, int(round((float(np.ravel(self.state)[0]) + 1) * 19.5))] = 255
        return frame


class PlainDot(Dot):
    """No state_from_observation: its ``state`` is its observation, which a probe checks."""

    state_from_observation = None


class HiddenDot(PlainDot):
    """Observes twice its state: nothing says how to draw an observation, so it is plotted."""

    def step(self, action):
        obs, *rest = super().step(action)
        return obs * 2, *rest


gym.register("test_render/Dot-v0", entry_point=Dot)
gym.register("test_render/PlainDot-v0", entry_point=PlainDot)
gym.register("test_render/HiddenDot-v0", entry_point=HiddenDot)


def pendulum_v1_steps(n_steps: int = 12) -> tuple[TrajectoryStore, np.ndarray]:
    """Pendulum-v1 under random torques, one trajectory, and the frame it drew after each step."""
    pytest.importorskip("pygame", reason="classic control draws with pygame (the human extra's)")
    env = gym.make("Pendulum-v1", render_mode="rgb_array")
    obs, _ = env.reset(seed=0)
    env.action_space.seed(0)
    observations, acts, frames = [obs], [], []
    for _ in range(n_steps):
        act = env.action_space.sample()
        obs, *_ = env.step(act)
        observations.append(obs)
        acts.append(act)
        frames.append(env.render())
    env.close()
    store = TrajectoryStore()
    store.append(Trajectory(np.array(observations), np.array(acts), np.zeros(n_steps, np.float32)))
    return store, np.array(frames)


def test_a_pendulum_segment_is_drawn_from_its_observations_as_the_env_drew_it():
    store, drawn = pendulum_v1_steps()
    renderer = ObservationRenderer("Pendulum-v1", height=100)
    rows = renderer.inputs(store, np.array([0, 3, 6]))
    np.testing.assert_allclose(rows[:, 3], store[0].acts[3:9, 0])  # the torque, drawn as an arrow
    frames = renderer(rows)
    renderer.close()
    assert frames.shape == (6, 100, 100, 3) and frames.dtype == np.uint8
    def scaled(frame: np.ndarray) -> np.ndarray:
        return np.asarray(Image.fromarray(frame).resize((100, 100), Image.Resampling.BILINEAR), dtype=int)

    for step, frame in enumerate(frames, start=3):  # the env's own frame after that step, scaled
        assert np.abs(frame - scaled(drawn[step])).mean() < 0.5
        other = scaled(drawn[step - 3])
        assert np.abs(frame - other).mean() > 2  # a different step looks different
    assert renderer.observation_names == ("cos θ", "sin θ", "angular velocity θ̇")


def test_pref_rl_renders_mujoco_and_drawable_envs_as_video_and_plots_the_others():
    from rlkit.factories.configs import EnvConfig
    from rlkit.runners.prefrl import segment_renderer

    renderer = segment_renderer(EnvConfig(id="InvertedPendulum-v5", n_envs=1))
    assert isinstance(renderer, MujocoRenderer) and renderer.env_id == "InvertedPendulum-v5"
    pytest.importorskip("pygame", reason="classic control draws with pygame (the human extra's)")
    pendulum = segment_renderer(EnvConfig(id="Pendulum-v1", n_envs=1))
    assert isinstance(pendulum, ObservationRenderer) and pendulum.env_id == "Pendulum-v1"
    dot = segment_renderer(EnvConfig(id="test_render/Dot-v0", n_envs=1))
    assert isinstance(dot, ObservationRenderer) and dot.observation_names is None
    frames = dot(np.array([[-1.0, 0.0], [1.0, 0.0]]))  # a custom env's own state_from_observation
    assert frames.shape == (2, 256, 512, 3)
    assert frames[0, :, :10].max() == 255 and frames[1, :, :10].max() == 0
    assert segment_renderer(EnvConfig(id="test_render/Dot-v0", n_envs=1, kwargs={"draws": False})) is None
    plain = segment_renderer(EnvConfig(id="test_render/PlainDot-v0", n_envs=1))
    assert isinstance(plain, ObservationRenderer)
    np.testing.assert_array_equal(plain(np.array([[-1.0, 0.0], [1.0, 0.0]])), frames)  # drawn alike
    assert segment_renderer(EnvConfig(id="test_render/HiddenDot-v0", n_envs=1)) is None
    with pytest.raises(InvalidDataError, match="Dot-v0 cannot be drawn from its observations"):
        ObservationRenderer("test_render/Dot-v0", draws=False)


def test_people_see_a_pendulum_pair_as_video_and_its_stand_in_plot_names_its_lines(tmp_path):
    store, _ = pendulum_v1_steps(20)
    pairs = SegmentPairs(store, np.array([[0, 0, 8]]), np.array([[0, 10, 8]]))
    teacher = HumanTeacher(LabelStore(tmp_path), HumanTeacherConfig(wait=False, fps=5),
                           media_dir=tmp_path / "media", renderer=ObservationRenderer("Pendulum-v1"))
    teacher.label(pairs)
    assert teacher.renders.wait(60) and not teacher.renders.failed
    frames = imageio.mimread(tmp_path / "media" / "seg-0-0-8.webm")
    assert len(frames) == 8 and frames[0].shape == (256, 256, 3) and frames[0].std() > 5
    legend = json.loads((tmp_path / "media" / "seg-0-10-8.plot.json").read_text())
    assert legend["names"] == ["cos θ", "sin θ", "angular velocity θ̇"] and legend["steps"] == 8
    assert legend["colours"][0] == "#1f77b4" and legend["low"][0] <= legend["high"][0]
    teacher.renders.close()


@pytest.mark.parametrize(("env_id", "state_size"), [("InvertedPendulum-v5", 4), ("Pendulum-v1", None)])
def test_pref_rl_with_people_renders_the_queried_segments_of_mujoco_and_classic_envs(
        tmp_path, env_id, state_size):
    """MuJoCo: the loop records qpos + qvel and renders from them; Pendulum: nothing recorded, its
    segments are drawn from their observations."""
    from rlkit.config import load_config
    from rlkit.factories.configs import PrefRLConfig
    from rlkit.runners.prefrl import build_preference_rl

    if state_size is None:
        pytest.importorskip("pygame", reason="classic control draws with pygame (the human extra's)")
    config = load_config(PrefRLConfig, None, [
        f"env.id={env_id}", "env.n_envs=2", "agent.algo=ppo", "agent.hyperparams=sb3",
        "agent.kwargs={n_steps: 64, batch_size: 64, n_epochs: 1}", "agent.total_timesteps=260",
        "query.every_steps=100", "query.initial_pairs=2", "query.max_pairs=2",
        "query.candidates_per_query=1", "query.segment_length=5", "model.hidden=[8]",
        "trainer.max_epochs=1", "teacher.kind=human", "teacher.human.wait=false",
    ])
    loop = build_preference_rl(config, run_dir=tmp_path)
    loop.learn()
    assert all((t.states is None) if state_size is None else (t.states.shape[1] == state_size)
               for t in loop.store)
    assert loop.teacher.renders.wait(timeout_s=120) and not loop.teacher.renders.failed
    videos = sorted(p.name for p in (tmp_path / "media").glob("seg-*.webm") if ".plot." not in p.name)
    assert len(videos) == len({tuple(s) for s in np.concatenate([loop.dataset.pairs.left,
                                                                   loop.dataset.pairs.right])})
