"""Pictures and text of the kitchen, image observations, and episode videos."""

from __future__ import annotations

from pathlib import Path

import imageio.v2 as imageio
import imageio.v3 as iio
import numpy as np
import pytest

import envs.overcooked as oc
from envs.overcooked.render import AGENT_COLOURS

PX = 80


def centre(frame: np.ndarray, row: int, col: int, dy: float = 0.5, dx: float = 0.5) -> tuple[int, ...]:
    return tuple(int(v) for v in frame[int((row + dy) * PX), int((col + dx) * PX)])


def test_rgb_frame_marks_agents_in_their_colours_and_items_by_colour() -> None:
    env = oc.parallel_env(render_mode="rgb_array")
    env.reset()
    frame = env.render()
    assert frame.shape == (7 * PX, 7 * PX, 3) and frame.dtype == np.uint8
    # agent 0 green at (1,2), agent 1 rose at (1,4), agent 2 blue at (5,2) (below the index dots)
    for (row, col), colour in zip([(1, 2), (1, 4), (5, 2)], AGENT_COLOURS.values(), strict=True):
        assert centre(frame, row, col, dy=0.6) == colour
    assert centre(frame, 0, 5) == (220, 40, 40)  # tomato
    assert centre(frame, 1, 6) == (110, 190, 60)  # lettuce
    assert centre(frame, 2, 6) == (150, 80, 170)  # onion
    assert centre(frame, 5, 6) == (248, 248, 248)  # plate 1
    nine = oc.parallel_env(layout="C9", render_mode="rgb_array", cell_px=20)
    nine.reset()
    assert nine.render().shape == (180, 180, 3)


def test_chopping_changes_only_the_knife_cell() -> None:
    env = oc.parallel_env(recipe="tomato", macro_actions=False, render_mode="rgb_array")
    env.reset()
    moves = {"r": 0, "d": 1, "l": 2, "u": 3, "s": 4}
    for a0, a1 in zip("d" + "s" * 6, "ru" + "llll" + "l", strict=True):  # tomato onto knife 1
        env.step({"agent_0": moves[a0], "agent_1": moves[a1], "agent_2": 4})
    before = env.render()
    env.step({"agent_0": 4, "agent_1": 2, "agent_2": 4})  # one chop on knife 1 at (1,0)
    after = env.render()
    changed = np.argwhere((before != after).any(axis=2))
    assert changed.size and changed[:, 0].min() >= PX and changed[:, 0].max() < 2 * PX
    assert changed[:, 1].max() < PX  # all inside cell (1,0)
    assert (after[PX : 2 * PX, :PX] == 255).all(axis=2).any()  # a white cut across the tomato


def test_ansi_and_human_text() -> None:
    env = oc.parallel_env(render_mode="ansi", macro_actions=False)
    env.reset()
    env.step({"agent_0": 4, "agent_1": 0, "agent_2": 4})
    env.step({"agent_0": 4, "agent_1": 3, "agent_2": 4})
    text = env.render()
    lines = text.splitlines()
    assert lines[0] == "layout A  recipe lettuce-tomato  step 2/200"
    assert lines[1:8] == ["#######", "K.0..1L", "K.....O", "D.....#", "#.....#", "#.2...P", "#####P#"]
    assert "agent_1 at (1, 5) holding tomato (chopped 0/3)" in lines
    assert "tomato (chopped 0/3) held by agent_1" in lines
    human = oc.parallel_env(render_mode="human")
    human.reset()
    assert human.render() is None
    with pytest.warns(UserWarning, match="render_mode=None"):
        assert oc.parallel_env().render() is None


def test_video_helper_writes_mp4_and_gif(tmp_path: Path) -> None:
    env = oc.parallel_env(cell_px=16)
    result = oc.record_episode(env, oc.ScriptedChef(env), tmp_path / "episode.mp4", fps=5)
    assert result["delivered"] and result["steps"] == 25
    assert iio.imread(result["path"]).shape == (26, 7 * 16, 7 * 16, 3)  # reset + one per step
    gif = oc.write_video([env.rgb_frame(), np.zeros_like(env.rgb_frame())], tmp_path / "two.gif", fps=2)
    assert [f.shape[:2] for f in imageio.mimread(gif)] == [(112, 112)] * 2
    assert not list(tmp_path.glob(".*partial*"))  # written atomically
    with pytest.raises(ValueError, match=".gif or .mp4"):
        oc.write_video([env.rgb_frame()], tmp_path / "x.avi")
    with pytest.raises(ValueError, match="no frames"):
        oc.write_video([], tmp_path / "x.gif")
