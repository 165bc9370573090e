"""APEC from pixels: the config, the OT filter on frames, D-REX's convolutional BC, and
``rlkit apec`` end to end on a 16x16 pixel task (every arm, a rerun that resumes)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from envs.pixels import KEYPOINT_COLOURS
from experiments import apec_heldout_check, apec_pixels, apec_policy_check
from experiments.apec import ApecExperimentConfig, run_unit, units
from rlkit.ail import CheckpointStore
from rlkit.apec.config import ApecEnvConfig
from rlkit.apec.drex import DrexConfig, noisy_rollouts, train_bc
from rlkit.apec.pair_config import OT_SCALE
from rlkit.apec.transport import COSINE_EPS, block_mean, demo_ot_distances, real_states
from rlkit.cli import main
from rlkit.config import load_config
from rlkit.data import Trajectory, TrajectoryStore, collect_trajectories
from rlkit.errors import ConfigError, InvalidDataError
from rlkit.feedback import PreferenceDataset
from rlkit.reward import load_reward_model
from rlkit.runners.apec import venv_factory

PIXEL_ID = "rlkit/PixelPointMass-v0"


def _stacks(frames: np.ndarray, k: int) -> np.ndarray:
    """Channel-first stacks of k frames (oldest first), the first frame repeated at the start."""
    padded = np.concatenate([np.repeat(frames[:1], k - 1, 0), frames])
    return np.stack([np.concatenate(padded[t:t + k]) for t in range(len(frames))])


def _trajectory(frames: np.ndarray, k: int = 1) -> Trajectory:
    n = len(frames) - 1
    return Trajectory(obs=_stacks(frames, k), acts=np.zeros((n, 2), np.float32), rews=np.zeros(n, np.float32))


def test_a_pixel_task_id_sets_pixels_and_leaves_the_horizon_unset():
    env = ApecEnvConfig(id=PIXEL_ID)
    assert env.pixels and env.horizon is None and env.frame_stack == 3
    assert ApecEnvConfig(id="rlkit/PixelPendulum-v0", frame_stack=1).frame_stack == 1
    assert not ApecEnvConfig().pixels and ApecEnvConfig().horizon == 1000


@pytest.mark.parametrize("fields, words", [
    ({"id": PIXEL_ID, "horizon": 200}, "env.horizon=200: absorbing-state padding"),
    ({"id": "Pendulum-v1", "pixels": True}, "ApecEnvConfig.pixels is not a field"),  # the id says it
    ({"id": PIXEL_ID, "pixels": False}, "ApecEnvConfig.pixels is not a field"),
])
def test_pixel_settings_that_cannot_run_are_refused_by_name(fields, words):
    with pytest.raises(ConfigError, match=words):
        ApecEnvConfig(**fields)


def test_rlkit_apec_refuses_a_horizon_on_a_pixel_task(tmp_path, capsys):
    code = main(["apec", "--run-dir", str(tmp_path / "run"), f"env.id={PIXEL_ID}", "env.horizon=50"])
    assert code != 0
    assert "absorbing-state padding is for vector observations" in capsys.readouterr().err
    assert not (tmp_path / "run" / "demos").exists()


def test_the_env_factory_stacks_frames_channel_first():
    venv = venv_factory(ApecEnvConfig(id=PIXEL_ID, frame_stack=2, kwargs={"size": 16}))(0)
    try:
        assert venv.observation_space.shape == (6, 16, 16) and venv.observation_space.dtype == np.uint8
    finally:
        venv.close()


def test_the_ot_distance_on_frames_is_the_cosine_cost_computed_by_hand():
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (3, 3, 4, 4)).astype(np.uint8)  # 2 states, then the last obs
    demo = rng.integers(0, 256, (1, 3, 4, 4)).astype(np.uint8).repeat(4, 0)  # one state, 3 times
    store = TrajectoryStore()
    store.append(_trajectory(frames))

    # The demo's states are all alike, so the plan is uniform and <P, C> is the mean cost; the
    # reference's unit is <P, C> x 1000 / n for n = 2 states.
    def cost(x: np.ndarray, y: np.ndarray) -> float:
        x, y = x.ravel().astype(np.float64) + COSINE_EPS, y.ravel().astype(np.float64) + COSINE_EPS
        return 1.0 - float(x @ y) / float(np.linalg.norm(x) * np.linalg.norm(y))

    by_hand = OT_SCALE * np.mean([cost(frames[t], demo[0]) for t in range(2)]) / 2
    (raw,) = demo_ot_distances(store, [_trajectory(demo)])
    assert raw == pytest.approx(by_hand, rel=1e-5)

    # Downsampled: each channel's 2x2 block means are the embedding.
    blocks = frames.reshape(3, 3, 2, 2, 2, 2).mean(axis=(3, 5))
    demo_blocks = demo[0].reshape(3, 2, 2, 2, 2).mean(axis=(2, 4))
    by_hand = OT_SCALE * np.mean([cost(blocks[t], demo_blocks) for t in range(2)]) / 2
    (small,) = demo_ot_distances(store, [_trajectory(demo)], downsample=2)
    assert small == pytest.approx(by_hand, rel=1e-5)
    assert small != pytest.approx(raw, rel=1e-3)


def test_the_ot_embedding_of_a_frame_stack_store_equals_that_of_its_stacks():
    rng = np.random.default_rng(1)
    frames = rng.integers(0, 256, (6, 3, 4, 4)).astype(np.uint8)
    stacked = TrajectoryStore(frame_stack=3)
    stacked.append(_trajectory(frames, k=3))
    assert np.array_equal(real_states(stacked[0], downsample=2),
                          block_mean(_stacks(frames, 3)[:-1], 2).reshape(5, -1))
    with pytest.raises(InvalidDataError, match="ot_downsample=3"):
        real_states(stacked[0], downsample=3)


def test_drex_fits_a_convolutional_bc_policy_to_pixel_demos_and_stores_frames_once():
    make_venv = venv_factory(ApecEnvConfig(id=PIXEL_ID, kwargs={"size": 16}))
    venv = make_venv(0)
    rng = np.random.default_rng(0)
    # A demonstrator that pushes towards the upper right: its actions are a constant to learn.
    demos = collect_trajectories(venv, lambda obs: np.tile([[0.7, -0.4]], (len(obs), 1)).astype(np.float32),
                                 rng, n_episodes=1)[:1]
    config = DrexConfig(noise_levels=(0.0, 1.0), rollouts_per_level=1, bc_epochs=40, bc_batch_size=64,
                        conv_channels=(8, 8), feature_dim=16, hidden=(32,), frame_stack=3)
    policy = train_bc(demos, venv.action_space, config)
    assert policy.encoder is not None
    acted = policy.act(demos[0].obs[:8])
    assert np.abs(acted - np.array([0.7, -0.4])).max() < 0.1
    store, noise = noisy_rollouts(policy, venv, rng, config)
    venv.close()
    assert store.frame_stack == 3 and len(store) == 2 and noise.tolist() == [0.0, 1.0]
    assert store.obs_shape == (9, 16, 16)


SMALL_SAC = ("learning_starts: 20, batch_size: 16, buffer_size: 500, policy_kwargs: {net_arch: [16], "
             "features_extractor_kwargs: {channels: 8, strides: [2, 1], features_dim: 16}}")
# The AIL generator acts from the fixed keypoint encoder (as experiments/configs/apec_pixels.yaml's).
KEYPOINT_SAC = ("learning_starts: 20, batch_size: 16, buffer_size: 500, augment_pad: 0, policy_kwargs: "
                "{net_arch: [16], encoder: keypoints, features_extractor_kwargs: "
                f"{{colours: {KEYPOINT_COLOURS[PIXEL_ID]}}}}}")
TINY = [
    f"env.id={PIXEL_ID}", "env.kwargs={size: 16, max_episode_steps: 20}",
    "demos.algo=sac", "demos.total_timesteps=120", "demos.checkpoint_every=40", "demos.baseline=random",
    "demos.eval_episodes=1", f"demos.kwargs={{{SMALL_SAC}}}",
    "ail.rounds=4", "ail.steps_per_round=40", "ail.generator=sac", f"ail.generator_kwargs={{{KEYPOINT_SAC}}}",
    "ail.discriminator.hidden=[16]", "ail.discriminator.batch_size=32", "ail.agent_buffer=40",
    "rollouts.per_checkpoint=2", "pairs.n_pairs=24", "pairs.gap=1", "pairs.ot_threshold=0",
    "pairs.segment_length=5",
    "drex.noise_levels=[0.0, 0.5]", "drex.rollouts_per_level=2", "drex.bc_epochs=3",
    "reward.hidden=[16]", "reward.trainer.max_epochs=3", "reward.trainer.batch_size=8",
    "heldout.episodes_per_policy=1", "heldout.random_episodes=2",
    "policy.methods=[apec]", "policy.agent.algo=sac", "policy.agent.total_timesteps=40",
    "policy.agent.eval_episodes=2", f"policy.agent.kwargs={{{SMALL_SAC}}}",
]


@pytest.mark.slow
def test_rlkit_apec_runs_every_arm_from_pixels_and_a_killed_run_goes_on_where_it_stopped(
        tmp_path, monkeypatch, capsys):
    run_dir = tmp_path / "run"
    argv = ["apec", "--run-dir", str(run_dir), "--logger", "jsonl", *TINY]
    assert main(argv) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [line["method"] for line in lines[:-1]] == ["apec", "gap_only", "ot_only", "drex", "raw_ail"]
    assert "ail" in lines[-1]  # the run's own line last: the AIL run's update counts
    metrics = json.loads((run_dir / "metrics.json").read_text())["methods"]
    for method, values in metrics.items():
        assert 0.0 <= values["accuracy"] <= 1.0 and values["n_pairs"] > 0, method
    assert np.isfinite(metrics["apec"]["policy"]["final_true_return"])

    # Every store keeps frames once, every network reads the channel-first stacks.
    for path in ("rollouts/store.npz", "heldout/store.npz"):
        store = TrajectoryStore.load(run_dir / path)
        assert store.frame_stack == 3 and store.obs_shape == (9, 16, 16), path
    for method in ("apec", "drex"):
        dataset = PreferenceDataset.load(run_dir / "datasets" / method)
        assert dataset.store.frame_stack == 3
        assert set(dataset.pairs.left[:, 2].tolist()) == {5}  # 5-step windows
        assert load_reward_model(run_dir / "rewards" / method).model.spec.kind == "cnn"
    raw = CheckpointStore(run_dir / "ail").load(3).discriminator.reward_net
    assert raw.spec.kind == "cnn" and raw.spec.channels_first
    demonstrator = run_dir / "demos" / "demonstrator" / "step_000000120.json"
    assert json.loads(demonstrator.read_text())["algo"] == "DrQSAC"

    # Killed after the reward models: the same command trains only what is missing.
    shutil.rmtree(run_dir / "rewards" / "drex")
    shutil.rmtree(run_dir / "policies")
    (run_dir / "metrics.json").unlink()
    kept = [*(run_dir / "rewards" / "apec").iterdir(), run_dir / "rollouts" / "store.npz",
            run_dir / "heldout" / "store.npz"]
    stamps = {p: p.stat().st_mtime_ns for p in kept}
    assert main(argv) == 0
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps
    again = json.loads((run_dir / "metrics.json").read_text())["methods"]
    for method in ("apec", "gap_only", "raw_ail"):
        assert again[method]["accuracy"] == metrics[method]["accuracy"]
    assert (run_dir / "rewards" / "drex" / "training.json").is_file()


def test_rlkit_demos_trains_a_pixel_demonstrator_and_saves_frames_once(tmp_path, capsys):
    run_dir = tmp_path / "demos"
    argv = ["demos", "--run-dir", str(run_dir), "--logger", "jsonl",
            *(o for o in TINY if o.startswith(("env.", "demos."))), "demos.total_timesteps=40",
            "demos.checkpoint_every=20", "env.frame_stack=2"]
    assert main(argv) == 0
    saved = TrajectoryStore.load(run_dir / "demos.npz")
    assert saved.frame_stack == 2 and saved.obs_shape == (6, 16, 16)
    assert json.loads((run_dir / "demonstrator" / "step_000000040.json").read_text())["algo"] == "DrQSAC"


@pytest.mark.slow
def test_the_pixel_experiment_runs_its_config_at_a_tiny_budget_and_reports(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    overrides = [f"out_dir={out}", "seeds=[0]", f"tasks=[{{id: {PIXEL_ID}}}]",
                 *(f"pipeline.{o}" for o in TINY if not o.startswith("env.id=")),
                 "pipeline.methods=[apec, drex, raw_ail]", "pipeline.ail.discriminator.updates_per_round=2",
                 "pipeline.heldout.ail_checkpoints=2", "pipeline.policy.methods=[apec, drex]"]
    config = load_config(ApecExperimentConfig, apec_pixels.CONFIG, overrides)
    # The units the script hands to rlkit.scale, run here in order (its workers are processes).
    for unit in units(config, out):
        run_unit(unit, None)
    rows = json.loads((out / PIXEL_ID / "seed0" / "rows.json").read_text())
    assert [r["method"] for r in rows] == ["apec", "drex", "raw_ail"]
    assert all(r["n_pairs"] > 0 and 0.0 <= r["accuracy"] <= 1.0 for r in rows)
    assert apec_pixels.main([*overrides, "--report-only"]) == 0
    assert "| rlkit/PixelPointMass-v0 | apec | 1 |" in (out / "table.md").read_text()
    assert (out / "apec_pixels_rlkit_PixelPointMass-v0.png").is_file()

    # the policy check replays the final evaluation: its policy episodes are the reported ones
    # (and pays each reward on the other method's policy episodes too)
    assert apec_policy_check.main([*overrides]) == 0
    checks = json.loads((out / "policy_check.json").read_text())
    assert [c["method"] for c in checks] == ["apec", "drex"]
    returned = {r["method"]: r["policy_return"] for r in rows}
    for check, other in zip(checks, ["drex", "apec"], strict=True):
        assert check["policy"]["true"] == pytest.approx(returned[check["method"]])
        assert check["demos"]["true"] == pytest.approx(rows[0]["demo_return"])
        assert list(check["other_policies"]) == [other]
        assert check["other_policies"][other]["true"] == pytest.approx(returned[other])
        assert all(np.isfinite(check[group]["learned"]) for group in ("policy", "demos", "random"))
    # each row pays the other policy with its own reward: APEC's on D-REX's episodes is not D-REX's
    apec_on_drex = checks[0]["other_policies"]["drex"]["learned"]
    assert apec_on_drex != pytest.approx(checks[1]["policy"]["learned"])

    # the held-out check scores the rewards the experiment scored, on its held-out trajectories
    assert apec_heldout_check.main([*overrides]) == 0
    checked = json.loads((out / "heldout_check.json").read_text())
    assert [c["method"] for c in checked] == ["apec", "drex", "raw_ail"]
    for check_row, row in zip(checked, rows, strict=True):
        assert check_row["trajectory_pearson"] == pytest.approx(row["trajectory_pearson"])
        n = check_row["n_trajectories"]
        assert sum(check_row[g]["n_pairs"] for g in apec_heldout_check.GROUPS) <= n * (n - 1) // 2


def test_the_heldout_check_splits_pairs_at_the_demonstrations_return():
    true = np.array([-10.0, -5.0, 1.0, 3.0])  # demonstrations at 0: two worse, two better
    learned = np.array([0.0, 1.0, 3.0, 2.0])  # the worse pair and the mixed ones right, the better one wrong
    groups = apec_heldout_check.group_accuracy(learned, true, 0.0)
    assert groups["worse"] == {"accuracy": 1.0, "n_pairs": 1}
    assert groups["better"] == {"accuracy": 0.0, "n_pairs": 1}
    assert groups["mixed"] == {"accuracy": 1.0, "n_pairs": 4}
    tied = apec_heldout_check.group_accuracy(learned, np.array([1.0, 1.0, 2.0, 3.0]), 0.0)
    assert tied["better"]["n_pairs"] == 5 and tied["worse"]["n_pairs"] == 0  # the tie is left out
    assert np.isnan(tied["worse"]["accuracy"])
