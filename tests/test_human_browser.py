"""A person in headless Chromium (Debian's, driven by Playwright) labels pairs by clicks and keys,
survives a SIGKILL of the server and reads the dashboard (the M3HF page: test_human_browser_m3hf.py).
Screenshots go to ``RLKIT_SCREENSHOTS`` when it is set (that is how ``docs/screenshots`` was made)."""

import os
import re
import signal
import threading
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
from stable_baselines3.common.env_util import make_vec_env

from rlkit.data import SegmentPairs, TrajectoryStore, collect_trajectories
from rlkit.human import HumanTeacher, HumanTeacherConfig, LabelStore
from rlkit.human.dashboard import DashboardLogger
from rlkit.human.media import render_pairs
from rlkit.human.render import ObservationRenderer
from rlkit.human.server import free_port, start_server_process
from rlkit.human.settings import ServeConfig
from tests.browser_pages import log_in, screenshot, watch_errors
from tests.fake_data import make_trajectories
from tests.pendulum_media import mujoco_pairs
from tests.web_client import open_phase

pytestmark = [pytest.mark.browser, pytest.mark.server]
KEY_VALUES = {"1": 1.0, "2": 0.8, "3": 0.5, "4": 0.2, "5": 0.0, "s": None}


def twenty_pairs_of_eight_segments(tmp_path: Path) -> tuple[LabelStore, np.ndarray]:
    trajectories = make_trajectories()
    segments = [(t, 0, 10) for t in range(6)] + [(0, 15, 10), (1, 15, 10)]
    left, right = zip(*list(combinations(segments, 2))[:20], strict=True)
    pairs = SegmentPairs(trajectories, np.array(left), np.array(right))
    store = LabelStore(tmp_path)
    return store, store.add_queries(pairs, media=render_pairs(pairs, tmp_path / "media"))


def current_pair(page) -> int:
    return int(page.get_attribute("body", "data-query-id"))


def wait_for_status(page, text: str) -> None:
    page.wait_for_function(f"() => document.getElementById('status').textContent === '{text}'")


def label_by(page, how: str) -> tuple[int, float | None]:
    """Answer the shown pair by a key (``"3"``, ``"s"``) or a click (``"click:3"``, ``"click:skip"``)."""
    pair = current_pair(page)
    key = how.removeprefix("click:")
    if not how.startswith("click:"):
        page.keyboard.press(key)
    elif key == "skip":
        page.click("#skip")
    else:
        page.click(f'button.level[data-key="{key}"]')
    wait_for_status(page, f"{'skipped' if key in ('s', 'skip') else 'saved'} pair {pair}")
    return pair, KEY_VALUES["s" if key == "skip" else key]


def test_a_person_labels_20_pairs_by_clicks_and_keys_across_a_server_sigkill(tmp_path, browser):
    store, ids = twenty_pairs_of_eight_segments(tmp_path)
    port = free_port()
    config = ServeConfig(run_dir=str(tmp_path), port=port)
    server = start_server_process(config)
    page = browser.new_page(viewport={"width": 1000, "height": 700})
    try:
        log_in(page, f"http://127.0.0.1:{port}/", "alice")
        page.wait_for_function("() => document.body.dataset.queryId")
        assert current_pair(page) == ids[0]
        # Both segment videos load, loop and play.
        page.wait_for_function("() => [...document.querySelectorAll('.media video')]"
                               ".every(v => v.readyState >= 2 && !v.paused && v.loop)")
        assert page.inner_text("button.level >> nth=0") == "1 A much better"
        page.wait_for_selector("#right-legend li")  # a plot: a legend of its lines and an axis
        legend = page.locator("#left-legend li").all_inner_texts()
        assert [item.split()[0] for item in legend] == ["obs[0]", "obs[1]", "obs[2]"]
        assert re.fullmatch(r"obs\[0\] -?\d\.\d\d … -?\d\.\d\d", legend[0].strip())  # its range
        assert page.locator("#left-legend .axis span").all_inner_texts() == ["0", "5", "9"]
        screenshot(page, tmp_path, "label_queue.png")
        given = dict(label_by(page, how) for how in ("click:1", "5", "3", "click:skip"))
        undone_pair, _ = label_by(page, "2")
        page.keyboard.press("u")
        wait_for_status(page, f"undid pair {undone_pair}")
        assert current_pair(page) == undone_pair
        given.update(label_by(page, how) for how in ("click:4", "1", "4", "s", "2", "3"))
        assert page.inner_text("#progress") == "10 labelled · 10 to go"

        os.kill(server.pid, signal.SIGKILL)
        server.join()
        shown = current_pair(page)
        page.keyboard.press("1")  # the server is gone: the page says so and keeps the pair
        page.wait_for_function("() => document.getElementById('status').textContent.startsWith('error')")
        assert current_pair(page) == shown
        server = start_server_process(config)
        page.reload()
        page.wait_for_function("() => document.body.dataset.queryId")
        assert current_pair(page) == shown and page.inner_text("#progress") == "10 labelled · 10 to go"
        given.update(label_by(page, how) for how in ("1", "2", "3", "4", "5", "click:5", "s", "3", "2", "1"))
        page.wait_for_selector("#done", state="visible")
        assert page.inner_text("#progress") == "20 labelled · 0 to go"

        logger = DashboardLogger(store)  # what a trainer using HumanTeacher would log
        for step, (accuracy, ret) in enumerate(((0.58, -1210), (0.66, -905), (0.71, -640), (0.77, -420))):
            logger.log({"reward/held_out_accuracy": accuracy, "eval/true_return": ret}, step * 10_000)
        page.goto(f"http://127.0.0.1:{port}/dashboard")
        assert page.locator("svg polyline").count() == 2
        row = page.inner_text("#annotators tr >> nth=1")
        assert row.split("\t")[:3] == ["alice", "17", "3"]
        screenshot(page, tmp_path, "dashboard.png")
    finally:
        server.kill()
        server.join()
    labels = {r.query_id: (None if np.isnan(r.value) else r.value) for r in store.live_labels()}
    assert labels == given and sorted(labels) == list(ids)


def test_no_page_logs_a_script_error_before_or_after_the_login(tmp_path, browser):
    twenty_pairs_of_eight_segments(tmp_path)
    open_phase(tmp_path)  # the M3HF page shows a phase waiting for feedback
    port = free_port()
    server = start_server_process(ServeConfig(run_dir=str(tmp_path), port=port))
    page = browser.new_page(viewport={"width": 1000, "height": 700})
    errors = watch_errors(page)
    base = f"http://127.0.0.1:{port}"
    try:
        for path in ("/", "/m3hf", "/dashboard"):  # the login form (label and M3HF) and the dashboard
            page.goto(base + path)
            page.wait_for_load_state("networkidle")
        assert page.locator("#login").count() == 0  # the dashboard needs no login
        log_in(page, base + "/", "dora")
        page.wait_for_function("() => document.body.dataset.queryId")
        for path in ("/m3hf", "/dashboard"):
            page.goto(base + path)
            page.wait_for_load_state("networkidle")
        page.goto(base + "/m3hf")
        page.wait_for_selector("#phase[data-ready]")
    finally:
        server.kill()
        server.join()
    assert errors == []


def test_the_csp_refuses_eval_so_playwright_waits_are_written_as_functions(tmp_path, browser):
    """The Content-Security-Policy (``script-src 'self'``, no ``'unsafe-eval'``) refuses strings
    evaluated as code. Playwright's ``wait_for_function`` evaluates a *bare expression* again with
    ``eval`` at every poll, which the CSP blocks; a *function* is evaluated once, by DevTools (which
    the CSP does not govern), and then only called. So waits here are functions: the app keeps its
    strict CSP, and a test sees the page exactly as a person's browser does (no ``bypass_csp``)."""
    twenty_pairs_of_eight_segments(tmp_path)
    port = free_port()
    server = start_server_process(ServeConfig(run_dir=str(tmp_path), port=port))
    page = browser.new_page()
    sync_api = pytest.importorskip("playwright.sync_api")
    try:
        page.goto(f"http://127.0.0.1:{port}/")
        # false at the first poll, so Playwright polls again: the CSP stops that eval (no timeout)
        with pytest.raises(sync_api.Error, match="unsafe-eval"):
            page.wait_for_function("window.later === 1", timeout=20_000)
        page.evaluate("() => { window.later = 0; setTimeout(() => { window.later = 1; }, 300); }")
        page.wait_for_function("() => window.later === 1", timeout=20_000)
    finally:
        server.kill()
        server.join()


PIXEL_SPREAD = """() => [...document.querySelectorAll('.media video')].map((video) => {
  const canvas = document.createElement('canvas');
  canvas.width = video.videoWidth;
  canvas.height = video.videoHeight;
  const context = canvas.getContext('2d');
  context.drawImage(video, 0, 0);
  const pixels = context.getImageData(0, 0, canvas.width, canvas.height).data;
  let sum = 0, squares = 0;
  for (let i = 0; i < pixels.length; i += 4) { sum += pixels[i + 1]; squares += pixels[i + 1] ** 2; }
  const n = pixels.length / 4;
  return {width: video.videoWidth, spread: Math.sqrt(squares / n - (sum / n) ** 2)};
})"""
PLAYING = ("() => [...document.querySelectorAll('.media video')].every(v => v.readyState >= 2 && !v.paused"
           " && v.loop && !v.src.endsWith('.plot.webm'))")


def test_a_mujoco_pair_shows_its_plots_while_rendering_then_both_videos_play_in_step(tmp_path, browser):
    port = free_port()
    server = start_server_process(ServeConfig(run_dir=str(tmp_path), port=port))
    gate = threading.Event()
    teacher, _, ids = mujoco_pairs(tmp_path, gate)  # rendering waits for the gate
    page = browser.new_page(viewport={"width": 1000, "height": 700})
    errors = watch_errors(page)
    try:
        log_in(page, f"http://127.0.0.1:{port}/", "carol")
        page.wait_for_function("() => document.body.dataset.queryId")
        page.wait_for_selector("#rendering", state="visible")
        sources = page.eval_on_selector_all(".media video", "vs => vs.map(v => v.src.split('/').pop())")
        assert sources == ["seg-0-0-6.plot.webm", "seg-1-2-6.plot.webm"]

        gate.set()  # the worker renders; the page picks the videos up without a reload
        page.wait_for_selector("#rendering", state="hidden", timeout=120_000)
        page.wait_for_function(PLAYING)
        sources = page.eval_on_selector_all(".media video", "vs => vs.map(v => v.src.split('/').pop())")
        assert sources == ["seg-0-0-6.webm", "seg-1-2-6.webm"]
        for video in page.evaluate(PIXEL_SPREAD):  # rendered frames of the scene, not blank ones
            assert video["width"] == 64 and video["spread"] > 5
        page.wait_for_timeout(1500)  # a loop and more: B stays on A's clock
        times = page.eval_on_selector_all(".media video", "vs => vs.map(v => v.currentTime)")
        assert abs(times[0] - times[1]) < 0.25
        screenshot(page, tmp_path, "label_queue_mujoco.png")

        pair, _ = label_by(page, "1")
        assert pair == ids[0] and current_pair(page) == ids[1]
        page.wait_for_function(PLAYING)  # rendered ahead: the next pair's videos are there at once
        assert page.is_hidden("#rendering")
    finally:
        server.kill()
        server.join()
        teacher.renders.close()
    assert errors == []


def pendulum_pairs(tmp_path: Path) -> tuple[HumanTeacher, np.ndarray]:
    """Two Pendulum-v1 pairs of 30 random-torque steps asked of people, drawn as the env draws."""
    venv = make_vec_env("Pendulum-v1", n_envs=2, seed=0)
    store = TrajectoryStore()
    store.extend(collect_trajectories(venv, None, np.random.default_rng(0), n_steps=200, max_length=50))
    pairs = SegmentPairs(store, np.array([[0, 0, 30], [2, 10, 30]]), np.array([[1, 5, 30], [3, 0, 30]]))
    teacher = HumanTeacher(LabelStore(tmp_path), HumanTeacherConfig(wait=False, fps=10),
                           media_dir=tmp_path / "media", renderer=ObservationRenderer("Pendulum-v1"))
    teacher.label(pairs)
    assert teacher.renders.wait(120) and not teacher.renders.failed
    return teacher, teacher.store.add_queries(pairs)


TIMES = "() => [...document.querySelectorAll('.media video')].map(v => v.currentTime)"


def test_a_pendulum_pair_plays_its_rendered_frames_under_one_play_pause_and_scrub_control(tmp_path, browser):
    pytest.importorskip("pygame", reason="classic control draws with pygame (the human extra's)")
    teacher, ids = pendulum_pairs(tmp_path)
    port = free_port()
    server = start_server_process(ServeConfig(run_dir=str(tmp_path), port=port))
    page = browser.new_page(viewport={"width": 1000, "height": 760})
    errors = watch_errors(page)
    try:
        log_in(page, f"http://127.0.0.1:{port}/", "erin")
        page.wait_for_function(PLAYING)
        sources = page.eval_on_selector_all(".media video", "vs => vs.map(v => v.src.split('/').pop())")
        assert sources == ["seg-0-0-30.webm", "seg-1-5-30.webm"] and current_pair(page) == ids[0]
        for video in page.evaluate(PIXEL_SPREAD):  # the pendulum drawn, not a plot or a blank
            assert video["width"] == 256 and video["spread"] > 5
        assert page.locator("#left-legend li").count() == 0  # frames: no plot legend
        page.wait_for_timeout(1200)
        screenshot(page, tmp_path, "pendulum_pair.png")

        page.click("#play")  # one button pauses both
        page.wait_for_function("() => [...document.querySelectorAll('.media video')].every(v => v.paused)")
        assert page.inner_text("#play") == "p play"
        page.eval_on_selector("#scrub", "s => { s.value = '750'; s.dispatchEvent(new Event('input')); }")
        page.wait_for_function("() => [...document.querySelectorAll('.media video')]"
                               ".every(v => Math.abs(v.currentTime - 0.75 * v.duration) < 0.15)")
        page.keyboard.press("p")  # and the key plays both again, in step
        page.wait_for_function(PLAYING)
        page.wait_for_timeout(800)
        left, right = page.evaluate(TIMES)
        assert abs(left - right) < 0.25

        page.click('button.level[data-key="2"]')
        wait_for_status(page, f"saved pair {ids[0]}")
        assert current_pair(page) == ids[1]
        # the button that answered pair 1 does not look chosen for pair 2
        assert page.evaluate("() => document.activeElement === document.body")
    finally:
        server.kill()
        server.join()
        teacher.renders.close()
    assert errors == []
