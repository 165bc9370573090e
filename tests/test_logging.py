"""Logging backends, the SB3 bridge, W&B groups and artifacts, and TensorBoard videos.
(The progress display: tests/test_progress.py.)"""

from __future__ import annotations

import glob
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image
from rich.console import Console
from stable_baselines3 import PPO
from stable_baselines3.common.logger import HumanOutputFormat
from stable_baselines3.common.logger import Logger as Sb3Logger

from rlkit.errors import InvalidDataError
from rlkit.logging import (
    ConsoleLogger,
    JsonlLogger,
    Logger,
    MultiLogger,
    Sb3LogBridge,
    TensorBoardLogger,
    attach_to_sb3,
    console_view,
    log_table,
    make_logger,
    resolve_wandb_mode,
    wandb_labels,
)
from tests.log_records import Collect, read_wandb_records


def moving_frames(n: int = 4) -> np.ndarray:
    frames = np.zeros((n, 8, 8, 3), dtype=np.uint8)
    for t in range(n):
        frames[t, :, t] = 255  # each frame differs, so the GIF keeps all of them
    return frames


def test_jsonl_logger_writes_one_flushed_strict_json_line_per_call(tmp_path: Path) -> None:
    logger = JsonlLogger(tmp_path)
    logger.log({"loss": np.float32(0.5), "acc": torch.tensor(0.75), "n": 3}, step=10)
    logger.log({"loss": float("nan")}, step=20)
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()  # read before close: flushed
    records = [json.loads(line) for line in lines]
    assert records[0].pop("wall_time") > 0
    assert records[0] == {"step": 10, "loss": 0.5, "acc": 0.75, "n": 3}
    assert records[1]["loss"] is None and "NaN" not in lines[1]
    logger.log_config({"lr": 3e-4, "env": "Hopper-v5"})
    assert json.loads((tmp_path / "config.json").read_text()) == {"lr": 3e-4, "env": "Hopper-v5"}
    logger.log_video("eval/rollout", moving_frames(), step=30, fps=10)
    media = json.loads((tmp_path / "media.jsonl").read_text())
    assert media["kind"] == "video" and Path(media["path"]).name == "eval_rollout-30.gif"
    with pytest.raises(InvalidDataError, match="'label'"):
        logger.log({"label": "good"}, step=40)
    with pytest.raises(InvalidDataError, match="reserved"):
        logger.log({"step": 1.0}, step=40)
    logger.close()


def test_console_logger_prints_one_compact_line(tmp_path: Path) -> None:
    out = io.StringIO()
    logger = ConsoleLogger(Console(file=out, width=40))
    logger.log({"train/loss": 0.123456, "episodes": 7, "time/fps": 1234}, step=2048)
    assert out.getvalue() == "step     2048  train/loss=0.1235  episodes=7  time/fps=1234\n"  # not cut at 40


def test_console_logger_summarises_the_config_in_one_short_line(tmp_path: Path) -> None:
    out = io.StringIO()
    config = {"command": "pref-rl", "env": {"id": "Hopper-v5", "n_envs": 4, "kwargs": {}},
              "agent": {"algo": "sac", "total_timesteps": 1000, "kwargs": {"gamma": 0.9}},
              "trainer": {"lr": 0.001, "loss": "ordinal"}, "seed": 3}
    ConsoleLogger(Console(file=out, width=40), run_dir=tmp_path).log_config(config)
    assert out.getvalue().strip() == (
        "rlkit pref-rl  env.id=Hopper-v5  agent.algo=sac  agent.total_timesteps=1000  seed=3  "
        f"(full config: {tmp_path / 'config.yaml'})")


def test_tensorboard_logger_writes_scalars_images_and_config(tmp_path: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    image_path = tmp_path / "plot.png"
    Image.fromarray(np.full((6, 5, 3), 200, dtype=np.uint8)).save(image_path)
    logger = TensorBoardLogger(tmp_path)
    logger.log({"loss": 1.5}, step=1)
    logger.log({"loss": 0.5}, step=2)
    logger.log_image("plot", image_path, step=2)
    logger.log_config({"seed": 3})
    log_table(logger, "feedback", ("text", "specs"), [["a | b", "agent 0: success()"]], step=2)
    logger.close()
    events = EventAccumulator(str(tmp_path / "tensorboard"))
    events.Reload()
    assert [(e.step, e.value) for e in events.Scalars("loss")] == [(1, 1.5), (2, 0.5)]
    assert events.Images("plot")[0].width == 5
    assert "config/text_summary" in events.Tags()["tensors"]
    (table,) = events.Tensors("feedback/text_summary")
    assert (table.step, table.tensor_proto.string_val[0].decode()) == (
        2, "| text | specs |\n| --- | --- |\n| a \\| b | agent 0: success() |")


@pytest.mark.parametrize("given", ["frames", "mp4"])
def test_tensorboard_shows_a_video_as_an_animated_image_not_a_path(tmp_path: Path, given: str) -> None:
    """M3HF's rollout videos reach TensorBoard as video (a GIF in its image panel, as add_video
    writes), whether logged as frames or as the MP4 file the loop recorded."""
    import imageio.v3 as iio
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    frames = moving_frames(6)
    video: Any = frames
    if given == "mp4":
        video = tmp_path / "phase_001.mp4"
        iio.imwrite(video, np.repeat(np.repeat(frames, 2, axis=1), 2, axis=2), fps=5)
    logger = TensorBoardLogger(tmp_path)
    logger.log_video("m3hf/rollout", video, step=7, fps=5)
    logger.close()
    events = EventAccumulator(str(tmp_path / "tensorboard"), size_guidance={"images": 0})
    events.Reload()
    assert events.Tags()["tensors"] == []  # no "video: <path>" text any more
    (image,) = events.Images("m3hf/rollout")
    assert image.step == 7 and image.encoded_image_string.startswith(b"GIF8")
    decoded = iio.imread(image.encoded_image_string, index=None, extension=".gif")
    assert len(decoded) == 6 and (image.width, image.height) == decoded.shape[2:0:-1]
    if given == "frames":
        assert (decoded[..., :3] == frames).all()


def test_multi_logger_fans_out_and_writes_frames_to_one_file(tmp_path: Path) -> None:
    first, second = Collect(), Collect()
    multi = MultiLogger([first, second], tmp_path / "media")
    assert isinstance(multi, Logger) and isinstance(JsonlLogger(tmp_path), Logger)
    multi.log({"x": 1.0}, step=5)
    multi.log_video("episode", moving_frames(5), step=5, fps=5)
    multi.close()
    assert first.calls == second.calls
    video_path = first.calls[1][1][1]
    assert isinstance(video_path, Path) and video_path.parent == tmp_path / "media"
    import imageio.v3 as iio

    assert iio.imread(video_path, index=None).shape == (5, 8, 8, 3)
    assert first.calls[-1] == ("close", None)
    with pytest.raises(InvalidDataError, match="uint8"):
        multi.log_video("bad", moving_frames().astype(np.float32), step=6, fps=5)


def test_make_logger_builds_named_backends_and_rejects_unknown(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="'mlflow'"):
        make_logger(tmp_path, backends=("jsonl", "mlflow"))
    logger = make_logger(tmp_path / "run", backends=("jsonl", "console"), config={"seed": 1})
    assert [type(b).__name__ for b in logger.loggers] == ["JsonlLogger", "ConsoleLogger"]
    logger.log({"loss": 2.0}, step=1)
    logger.close()
    assert json.loads((tmp_path / "run" / "config.json").read_text()) == {"seed": 1}
    assert json.loads((tmp_path / "run" / "metrics.jsonl").read_text())["loss"] == 2.0


def test_tensorboard_alone_still_writes_metrics_jsonl_and_the_config(tmp_path: Path) -> None:
    from rlkit.cli import main

    run_dir = tmp_path / "run"
    assert main(["collect", "env.id=Pendulum-v1", "policies=[{n_steps: 200}]", "--run-dir",
                 str(run_dir), "--logger", "tensorboard"]) == 0
    (row,) = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert row["collect/steps"] == 200
    assert (run_dir / "config.yaml").is_file()
    assert json.loads((run_dir / "config.json").read_text())["command"] == "collect"
    assert list((run_dir / "tensorboard").glob("events.out.tfevents.*"))


def test_wandb_runs_are_named_after_the_run_directory_and_grouped_by_command(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs" / "m3hf-20261203-101500"
    assert wandb_labels(run_dir, None, "m3hf", environ={}) == ("m3hf-20261203-101500", "m3hf")
    assert wandb_labels(run_dir, None, "m3hf", environ={"WANDB_RUN_GROUP": "sweep-1"})[1] == "sweep-1"
    assert wandb_labels(run_dir, "study", "m3hf", name="seed 3", environ={"WANDB_RUN_GROUP": "x"}) == (
        "seed 3", "study")
    assert wandb_labels(Path("."), None, None, environ={}) == (Path.cwd().name, None)


def test_console_shows_the_mean_over_agents_of_a_few_per_agent_metrics() -> None:
    metrics = {"time/env_steps": 64, "agent_0/train/value_loss": 1.0, "agent_0/train/n_updates": 2,
               "agent_1/train/value_loss": 3.0, "agent_1/train/n_updates": 2,
               "rollout/shaped_return": -1.5, "rollout/shaped_return/agent_0": -1.0,
               "rollout/shaped_return/agent_1": -2.0}
    assert console_view(metrics) == {"time/env_steps": 64, "agents/train/value_loss": 2.0,
                                     "rollout/shaped_return": -1.5}
    out = io.StringIO()
    ConsoleLogger(Console(file=out, width=60)).log(metrics, step=64)
    assert out.getvalue().strip() == (
        "step       64  time/env_steps=64  agents/train/value_loss=2  rollout/shaped_return=-1.5")


def test_tables_reach_the_backends_that_show_them_and_rows_must_fit_the_columns(tmp_path: Path) -> None:
    out = io.StringIO()
    multi = MultiLogger([Collect(), ConsoleLogger(Console(file=out, width=40))], "unused")
    log_table(multi, "feedback/phase_001", ("text", "parser"), [["Be faster!", "llm"], ["Hi", "rule"]], 7)
    assert out.getvalue().splitlines() == ["step        7  feedback/phase_001  text=Be faster!  parser=llm",
                                           "step        7  feedback/phase_001  text=Hi  parser=rule"]
    log_table(Collect(), "t", ("a",), [[1]], 0)  # a backend without tables keeps none
    with open(tmp_path / "console.txt", "w", encoding="utf-8") as strict:  # as a terminal's stdout
        ConsoleLogger(Console(file=strict, width=40)).log_table("t", ("text",), [["a \ud800 b"]], 1)
    assert (tmp_path / "console.txt").read_text().strip() == "step        1  t  text=a ? b"
    with pytest.raises(InvalidDataError, match=r"row 0 has 1 values for 2 columns"):
        log_table(multi, "t", ("a", "b"), [[1]], 0)


def test_wandb_offline_run_lives_under_the_run_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    image_path = tmp_path / "plot.png"
    Image.fromarray(np.zeros((4, 4, 3), dtype=np.uint8)).save(image_path)
    model_dir = tmp_path / "reward_model"
    model_dir.mkdir()
    (model_dir / "model.json").write_text("{}")
    logger = make_logger(tmp_path, backends=("jsonl", "wandb"), config={"lr": 0.001},
                         group="sweep-7", job_type="pref-rl")
    logger.log({"loss": 0.25}, step=100)
    logger.log({"loss": 0.125}, step=50)  # a second step counter going backwards is kept too
    logger.log_image("plot", image_path, step=100)
    logger.log_video("rollout", moving_frames(), step=100, fps=4)
    logger.log_artifact("reward model/run 1", "model", [model_dir, image_path])
    with pytest.raises(InvalidDataError, match="does not exist"):
        logger.log_artifact("gone", "dataset", [tmp_path / "nothing.npz"])
    logger.close()

    (run_file,) = glob.glob(str(tmp_path / "wandb" / "offline-run-*" / "run-*.wandb"))
    files_dir = Path(run_file).parent / "files"
    assert files_dir.is_dir()
    assert list(files_dir.glob("media/images/plot_*.png"))
    assert list(files_dir.glob("media/videos/rollout_*.gif"))
    records = read_wandb_records(Path(run_file))
    history = [
        {"/".join(i.nested_key) or i.key: json.loads(i.value_json) for i in r.history.item}
        for r in records
        if r.WhichOneof("record_type") == "history"
    ]
    assert [(h["loss"], h["step"]) for h in history if "loss" in h] == [(0.25, 100), (0.125, 50)]
    (run,) = [r.run for r in records if r.WhichOneof("record_type") == "run"]
    assert {item.key: json.loads(item.value_json) for item in run.config.update}["lr"] == 0.001
    assert (run.display_name, run.run_group, run.job_type) == (tmp_path.name, "sweep-7", "pref-rl")
    (artifact,) = [r.artifact for r in records if r.WhichOneof("record_type") == "artifact"]
    assert (artifact.name, artifact.type) == ("reward_model_run_1", "model")
    assert sorted(entry.path for entry in artifact.manifest.contents) == [
        "plot.png", "reward_model/model.json"]


def test_resolve_wandb_mode_never_goes_online_without_a_key() -> None:
    assert resolve_wandb_mode(None, environ={}) == "offline"
    assert resolve_wandb_mode(None, environ={"WANDB_MODE": "disabled"}) == "disabled"
    with pytest.warns(UserWarning, match="WANDB_API_KEY"):
        assert resolve_wandb_mode("online", environ={}) == "offline"
    assert resolve_wandb_mode("online", environ={"WANDB_API_KEY": "k"}) == "online"
    with pytest.raises(ValueError, match="'cloud'"):
        resolve_wandb_mode("cloud", environ={})


def test_sb3_bridge_forwards_numeric_values_at_sb3_step() -> None:
    collect = Collect()
    sb3_logger = Sb3Logger(folder=None, output_formats=[Sb3LogBridge(collect)])
    sb3_logger.record("rollout/ep_rew_mean", 12.5)
    sb3_logger.record("train/loss", np.float32(0.25))
    sb3_logger.record("train/std", torch.tensor(0.5))
    sb3_logger.record("time/total_timesteps", 2048)
    sb3_logger.record("note", "a string")
    sb3_logger.record("private", 1.0, exclude="rlkit")
    sb3_logger.dump(step=2048)
    forwarded = {"rollout/ep_rew_mean": 12.5, "train/loss": 0.25, "train/std": 0.5}
    forwarded["time/total_timesteps"] = 2048
    assert collect.calls == [("log", (forwarded, 2048))]


def test_attach_to_sb3_keeps_sb3_outputs_and_adds_the_bridge() -> None:
    collect = Collect()
    model = PPO("MlpPolicy", "CartPole-v1", n_steps=64, batch_size=64, n_epochs=1, verbose=1)
    formats = attach_to_sb3(model, collect).output_formats
    assert any(isinstance(f, HumanOutputFormat) for f in formats)
    assert isinstance(formats[-1], Sb3LogBridge) and model.logger.output_formats is formats
    model.learn(total_timesteps=64)
    (metrics, step), *_ = [call[1] for call in collect.calls if call[0] == "log"]
    assert step == 64 and metrics["time/total_timesteps"] == 64 and "time/fps" in metrics

    quiet = PPO("MlpPolicy", "CartPole-v1", seed=0, verbose=0)
    assert [type(f) for f in attach_to_sb3(quiet, collect).output_formats] == [Sb3LogBridge]
