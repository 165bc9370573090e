"""``rlkit demos`` and ``rlkit apec`` end to end on Pendulum at a tiny budget, and resuming a run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rlkit.ail.checkpoints import CheckpointStore
from rlkit.apec.config import ApecConfig
from rlkit.apec.demonstrator import read_demo_report
from rlkit.cli import main
from rlkit.data import Trajectory, TrajectoryStore
from rlkit.data.store import load_npz
from rlkit.devices import machine
from rlkit.feedback import PreferenceDataset
from rlkit.logging import make_logger
from rlkit.reward import load_reward_model
from rlkit.runners.apec import run_apec
from tests.tiny_envs import POINT_ID
from tests.tiny_runs import APEC_TINY


@pytest.mark.slow
def test_rlkit_apec_runs_every_method_end_to_end_and_a_rerun_reuses_every_stage(tmp_path, capsys):
    run_dir = tmp_path / "run"
    arms = ["apec", "gap_only", "ot_only", "ot_only@0", "drex", "raw_ail"]  # @0: the pairs' margin
    assert main(["apec", "--run-dir", str(run_dir), "--logger", "jsonl", *APEC_TINY,
                 f"methods=[{', '.join(arms)}]"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [line["method"] for line in lines[:-1]] == arms
    # what each learner did, as metrics.json says (the last line: the AIL run's and demonstrator's)
    results = json.loads((run_dir / "metrics.json").read_text())
    assert lines[-1] == {"ail": results["ail"],
                         "demonstrator_agent_updates": results["demos"]["agent_updates"]}
    assert results["ail"]["reward_updates"] == 4 and lines[0]["policy_agent_updates"] == 256 // (64 * 2) * 10
    assert [line["reward_updates"] for line in lines[:-2]] == [results["methods"][m]["reward_updates"]
                                                                 for m in arms[:-1]]
    metrics = json.loads((run_dir / "metrics.json").read_text())["methods"]
    for method, values in metrics.items():
        assert 0.0 <= values["accuracy"] <= 1.0, method
        assert -1.0 <= values["trajectory_pearson"] <= 1.0, method
    assert np.isfinite(metrics["apec"]["policy"]["final_true_return"])
    assert "policy" not in metrics["drex"]
    # the machines that scored the rewards and trained the policy (their floats differ across CPUs)
    assert results["scored_on"] == metrics["apec"]["policy"]["trained_on"] == machine()
    # the rewards' results, written before the policy stage: metrics.json without the policies
    before = json.loads((run_dir / "reward_metrics.json").read_text())["methods"]
    assert before == {m: {k: v for k, v in values.items() if k != "policy"} for m, values in metrics.items()}

    report = read_demo_report(run_dir / "demos")
    assert report.baseline_return < report.best_return and report.demo_returns
    apec = PreferenceDataset.load(run_dir / "datasets" / "apec")
    later = np.where(apec.labels > 0.5, apec.meta["checkpoint_left"], apec.meta["checkpoint_right"])
    earlier = np.where(apec.labels > 0.5, apec.meta["checkpoint_right"], apec.meta["checkpoint_left"])
    assert len(apec) == 24 and np.all(later > earlier + 1)
    at_margin = PreferenceDataset.load(run_dir / "datasets" / "ot_only@0")
    assert np.array_equal(at_margin.labels, PreferenceDataset.load(run_dir / "datasets" / "ot_only").labels)
    drex = PreferenceDataset.load(run_dir / "datasets" / "drex")
    assert set(drex.sources) == {"drex"}
    index = load_npz(run_dir / "rollouts" / "index.npz")
    assert sorted(set(index["checkpoint"].tolist())) == [0, 1, 2, 3]
    # env.horizon is set: the learned rewards are 0 on absorbing states, as the reference's masks
    assert load_reward_model(run_dir / "rewards" / "apec").model.spec.absorbing_flag
    # the reward model and the AIL reward are the reference's MLPs: no activation after layer 1
    assert load_reward_model(run_dir / "rewards" / "apec").model.spec.linear_first
    store = CheckpointStore(run_dir / "ail")
    discriminator = store.load(store.rounds()[-1]).discriminator
    assert discriminator.reward_net.spec.linear_first
    heldout = TrajectoryStore.load(run_dir / "heldout" / "store.npz")
    sources = load_npz(run_dir / "heldout" / "sources.npz")["source"]
    assert set(sources.tolist()) == {0, 1, 2} and len(sources) == len(heldout)

    # Everything is on disk: the same command again trains nothing and reports the same numbers.
    trained = [*(run_dir / "rewards").rglob("*.safetensors"), run_dir / "policies" / "apec" / "agent.zip"]
    stamps = {p: p.stat().st_mtime_ns for p in trained}
    logger = make_logger(run_dir, backends=("jsonl",))
    try:
        again = run_apec(ApecConfig.model_validate(_resolved(run_dir)), run_dir, logger)
    finally:
        logger.close()
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps
    scored = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert sum("heldout/apec/accuracy" in row for row in scored) == 1  # not scored (and logged) twice
    for method in metrics:
        assert again["methods"][method]["accuracy"] == metrics[method]["accuracy"]
    assert again["methods"]["apec"]["policy"] == metrics["apec"]["policy"]
    # The stricter view: pairs and trajectories the AIL process never produced.
    assert 0 < metrics["apec"]["n_pairs_outside_ail"] < 64
    assert 0.0 <= metrics["apec"]["accuracy_outside_ail"] <= 1.0


@pytest.mark.slow
def test_the_rewards_are_scored_in_a_call_of_their_own_and_each_policy_in_another(tmp_path):
    """As the experiment's units run the pipeline: a call that trains no policy stops at the
    rewards' scores; each later call trains only its policy and reads the stages before it (no
    fit again); metrics.json comes with the last policy."""
    from rlkit.config import load_config
    from rlkit.errors import ConfigError

    arms = ["methods=[apec, drex]", "policy.methods=[apec, drex]"]
    config = load_config(ApecConfig, None, [*APEC_TINY, *arms])
    run_dir = tmp_path / "run"
    scored = run_apec(config, run_dir, policies=())
    assert (run_dir / "reward_metrics.json").is_file() and not (run_dir / "metrics.json").exists()
    assert not (run_dir / "policies").exists() and all("policy" not in m for m in scored["methods"].values())
    fits = {p: p.stat().st_mtime_ns for p in (run_dir / "rewards").rglob("*.safetensors")}
    first = run_apec(config, run_dir, policies=("drex",))
    assert np.isfinite(first["methods"]["drex"]["policy"]["final_true_return"])
    assert "policy" not in first["methods"]["apec"] and not (run_dir / "policies" / "apec").exists()
    assert not (run_dir / "metrics.json").exists()
    both = run_apec(config, run_dir, policies=("apec",))
    drex_return = first["methods"]["drex"]["policy"]["final_true_return"]
    assert both["methods"]["drex"]["policy"]["final_true_return"] == drex_return  # read, not trained
    written = json.loads((run_dir / "metrics.json").read_text())["methods"]
    apec_return = both["methods"]["apec"]["policy"]["final_true_return"]
    assert written["apec"]["policy"]["final_true_return"] == apec_return
    assert {p: p.stat().st_mtime_ns for p in fits} == fits
    assert scored["methods"]["apec"]["accuracy"] == written["apec"]["accuracy"]
    with pytest.raises(ConfigError, match=r"\['raw_ail'\]: not among the methods with a policy"):
        run_apec(config, run_dir, policies=("raw_ail",))


def test_rlkit_demos_records_the_achieved_fraction(tmp_path, capsys):
    run_dir = tmp_path / "demos"
    argv = ["demos", "--run-dir", str(run_dir), "--logger", "jsonl", f"env.id={POINT_ID}",
            "env.horizon=20", "demos.algo=ppo", "demos.total_timesteps=2048", "demos.checkpoint_every=512",
            "demos.baseline=random", "demos.eval_episodes=4", "demos.n_demos=2",
            "demos.kwargs={n_steps: 64, batch_size: 64, learning_rate: 0.001}"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    report = read_demo_report(run_dir)
    assert out["n"] == 2 and out["fraction"] == pytest.approx(report.fraction)
    # the last checkpoint's agent, saved at step 2048 before that rollout trains: 31 rollouts of
    # 64 steps (one env), PPO's 10 epochs each
    assert out["agent_updates"] == (2048 // 64 - 1) * 10
    demos = TrajectoryStore.load(run_dir / "demos.npz")
    assert len(demos) == 2 and demos.obs_shape == (2,)  # the point's x and the absorbing flag
    expected = (np.mean(report.demo_returns) - report.baseline_return) / (
        report.best_return - report.baseline_return)
    assert report.fraction == pytest.approx(expected)
    assert report.checkpoint in report.checkpoint_returns


def test_apec_config_errors_name_the_field(tmp_path, capsys):
    assert main(["apec", "--run-dir", str(tmp_path), "pairs.n_pairs=0"]) == 2
    assert "n_pairs" in capsys.readouterr().err


@pytest.mark.slow
def test_graded_apec_labels_grow_with_the_index_gap_and_train_with_the_ordinal_loss(tmp_path, capsys):
    run_dir = tmp_path / "run"
    argv = ["apec", "--run-dir", str(run_dir), "--logger", "jsonl", *APEC_TINY,
            "methods=[apec_ordinal]", "policy.methods=[]", "ail.rounds=6"]
    assert main(argv) == 0
    data = PreferenceDataset.load(run_dir / "datasets" / "apec_ordinal")
    assert data.scale.name == "five"
    strength = np.maximum(data.labels, 1 - data.labels)
    gap = np.abs(data.meta["checkpoint_left"] - data.meta["checkpoint_right"])
    weak, strong = (level for level in data.scale.levels if level > 0.5)  # "slightly", "much" better
    assert set(np.unique(strength).tolist()) <= {np.float32(weak), 1.0} and strong == 1.0
    assert strength[gap == gap.max()].min() == 1.0 and strength[gap == gap.min()].max() < 1.0
    assert json.loads((run_dir / "metrics.json").read_text())["methods"]["apec_ordinal"]["train_pairs"] > 0


def _resolved(run_dir):
    import yaml

    return yaml.safe_load((run_dir / "config.yaml").read_text())


@pytest.mark.slow
def test_heldout_ail_trajectories_come_from_a_separate_run_and_every_figure_names_its_pairs(tmp_path):
    """The held-out AIL trajectories are rollouts of a second AIL run (seed + 1000, its own
    checkpoints in heldout/ail), never of the run whose checkpoints made the pairs; pairs are
    whole trajectories with distinct true returns, all of them, and each accuracy reports its n."""
    import itertools

    from rlkit.config import load_config
    from rlkit.runners.apec import run_apec

    run_dir = tmp_path / "run"
    overrides = [o for o in APEC_TINY if not o.startswith(("heldout.n_pairs", "heldout.segment_length"))]
    config = load_config(ApecConfig, None, [*overrides, "methods=[apec]", "policy.methods=[]"])
    assert config.heldout_ail_seed == 1000 and config.heldout.segment_length is None
    results = run_apec(config, run_dir)

    train_rounds = sorted(p.name for p in (run_dir / "ail").glob("round_*"))
    heldout_rounds = sorted(p.name for p in (run_dir / "heldout" / "ail").glob("round_*"))
    assert train_rounds == heldout_rounds and len(heldout_rounds) == 4
    # env.horizon is set: the learned rewards are 0 on absorbing states, as the reference's masks
    assert load_reward_model(run_dir / "rewards" / "apec").model.spec.absorbing_flag
    # the reward model and the AIL reward are the reference's MLPs: no activation after layer 1
    assert load_reward_model(run_dir / "rewards" / "apec").model.spec.linear_first
    store = CheckpointStore(run_dir / "ail")
    discriminator = store.load(store.rounds()[-1]).discriminator
    assert discriminator.reward_net.spec.linear_first
    heldout = TrajectoryStore.load(run_dir / "heldout" / "store.npz")
    sources = load_npz(run_dir / "heldout" / "sources.npz")["source"]
    training = TrajectoryStore.load(run_dir / "rollouts" / "store.npz")
    for k in np.flatnonzero(sources == 1):  # no held-out AIL trajectory is a training rollout
        assert not any(np.array_equal(heldout[int(k)].obs, t.obs) for t in training)

    returns = [float(t.ret) for t in heldout]
    distinct = sum(a != b for a, b in itertools.combinations(returns, 2))
    metrics = results["methods"]["apec"]
    assert metrics["n_pairs"] == distinct > 0 and metrics["n_trajectories"] == len(heldout)
    outside = [r for r, s in zip(returns, sources, strict=True) if s != 1]
    assert metrics["n_pairs_outside_ail"] == sum(a != b for a, b in itertools.combinations(outside, 2))
    # section 3's diagnostics: the AIL run's progress and the generated labels' agreement
    progress = results["ail_progress"]
    assert progress["n_checkpoints"] == 4 and progress["n_rollouts"] == 8
    assert -1.0 <= progress["spearman_checkpoints"] <= 1.0 or np.isnan(progress["spearman_checkpoints"])
    assert 0.0 <= metrics["label_agreement"] <= 1.0 and metrics["label_pairs"] + metrics["label_ties"] <= 24
    # what each learner did: the AIL generator one rollout of 128 steps x 2 envs a round (PPO's 10
    # epochs), the discriminator one step a round; the demonstrator's last checkpoint, saved at
    # step 2048 before the rollout ending there trains, 15 rollouts of 64 x 2 envs; the reward
    # model ceil(pairs / batch) steps an epoch
    assert results["ail"] == {"agent_updates": 4 * 10,
                              "reward_updates": 4 * config.ail.discriminator.updates_per_round}
    assert results["demos"]["agent_updates"] == (2048 // (64 * 2) - 1) * 10
    batches = -(-metrics["train_pairs"] // config.reward.trainer.batch_size)
    assert metrics["reward_updates"] == metrics["epochs"] * batches > 0


def test_policy_replay_is_seeded_with_ail_rollouts_paid_on_the_next_state():
    """The reference seeds the policy's SAC buffer with 10 AIL rollouts (eval_reward.py:150-151)
    and pays r(s') (sac.py:480): the seeded rewards are the reward of each next state."""
    from stable_baselines3 import SAC
    from stable_baselines3.common.env_util import make_vec_env

    from rlkit.data import Trajectory
    from rlkit.runners.apec_policy import paid_reward, seed_replay

    venv = make_vec_env("Pendulum-v1", n_envs=1)
    agent = SAC("MlpPolicy", venv, learning_starts=0, buffer_size=100, seed=0)

    def first_coordinate(obs, acts, next_obs, dones):
        return obs[:, 0].astype(np.float32)

    rng = np.random.default_rng(0)
    trajectories = [Trajectory(rng.normal(size=(6, 3)).astype(np.float32),
                               rng.uniform(-2, 2, (5, 1)).astype(np.float32), np.zeros(5, np.float32))
                    for _ in range(2)]
    seed_replay(agent, trajectories, paid_reward(first_coordinate, "next_obs"))
    buffer = agent.replay_buffer
    assert buffer.pos == 10
    expected = np.concatenate([t.obs[1:, 0] for t in trajectories])
    assert np.allclose(buffer.rewards[:10, 0], expected)
    assert np.allclose(buffer.actions[:10, 0, 0], np.concatenate([t.acts[:, 0] for t in trajectories]) / 2)
    assert not buffer.dones[:10].any()


def test_policies_on_learned_rewards_keep_the_reference_settings_not_rl_zoo3s():
    from rlkit.apec.config import REFERENCE_POLICY_SAC, ApecConfig

    agent = ApecConfig().policy.agent
    assert agent.hyperparams == "sb3" and dict(agent.kwargs) == dict(REFERENCE_POLICY_SAC)


def test_the_reward_model_keeps_the_references_optimizer_and_the_experiment_picks_its_precision():
    """apec_mjc/train_pbrl.py:179: Adam with weight decay 1e-3 as an L2 term (not AdamW), lr 1e-4,
    100 full-batch steps of 1000 pairs; the experiment's bfloat16 only where the CPU has it."""
    import yaml

    from rlkit.apec.config import ApecConfig

    trainer = ApecConfig().reward.trainer
    assert (trainer.optimizer, trainer.lr, trainer.weight_decay, trainer.loss) == ("adam", 1e-4, 1e-3, "bt")
    assert (trainer.batch_size, trainer.max_epochs, trainer.val_fraction) == (1000, 100, 0.0)
    experiment = yaml.safe_load((Path(__file__).parents[1] / "experiments" / "configs" / "apec.yaml")
                                .read_text())
    assert experiment["pipeline"]["reward"]["trainer"]["optimizer"] == "adam"
    assert experiment["pipeline"]["reward"]["trainer"]["precision"] == "auto"


def test_the_heldout_set_needs_no_demonstrator_checkpoints():
    """Demonstrations of one's own (``demos.path``) come without a demonstrator's checkpoints: the
    held-out set is then random and AIL rollouts only, not an error."""
    from stable_baselines3.common.env_util import make_vec_env

    from rlkit.apec.evaluation import SOURCE_AIL, SOURCE_RANDOM, heldout_store

    venv = make_vec_env(POINT_ID, n_envs=2, seed=0)
    towards_zero = (0, lambda obs: -np.sign(obs[:, :1]).astype(np.float32))
    store, sources = heldout_store(venv, np.random.default_rng(0), [towards_zero], [],
                                   episodes_per_policy=3, random_episodes=2, seed=0)
    assert sources.tolist() == [SOURCE_RANDOM] * 2 + [SOURCE_AIL] * 3 and len(store) == 5
    assert np.mean([t.ret for t in store][2:]) > np.mean([t.ret for t in store][:2])  # AIL: the policy


@pytest.mark.slow
def test_rlkit_apec_on_ray_rolls_out_the_same_trajectories_as_in_one_process(tmp_path, capsys):
    """``--backend ray``: each checkpoint's (and held-out policy's) rollouts are a Ray task; they
    seed themselves from (seed, index), so the stores match the one-process run's exactly."""
    import shutil

    ray = pytest.importorskip("ray")
    argv = ["apec", "--logger", "jsonl", *APEC_TINY, "methods=[apec]", "policy.methods=[]"]
    local = tmp_path / "local"
    assert main([*argv, "--run-dir", str(local)]) == 0
    on_ray = tmp_path / "ray"
    shutil.copytree(local, on_ray, symlinks=True)
    for stale in ("rollouts", "heldout/store.npz", "heldout/sources.npz"):  # rolled out again
        path = on_ray / stale
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    # the command's map uses a Ray it finds; this one's workers know the test env
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(Path(__file__).parents[1])},
                          "worker_process_setup_hook": _register_test_envs})
    try:
        assert main([*argv, "--run-dir", str(on_ray), "--backend", "ray"]) == 0
    finally:
        ray.shutdown()
    capsys.readouterr()
    for name in ("rollouts/store.npz", "heldout/store.npz"):
        a, b = TrajectoryStore.load(local / name), TrajectoryStore.load(on_ray / name)
        assert len(a) == len(b) > 0
        for left, right in zip(a, b, strict=True):
            assert np.array_equal(left.obs, right.obs) and np.array_equal(left.acts, right.acts)
    assert np.array_equal(load_npz(local / "rollouts/index.npz")["checkpoint"],
                          load_npz(on_ray / "rollouts/index.npz")["checkpoint"])
    assert np.array_equal(load_npz(local / "heldout/sources.npz")["source"],
                          load_npz(on_ray / "heldout/sources.npz")["source"])


def _register_test_envs() -> None:
    import tests.tiny_envs  # noqa: F401 - registers POINT_ID


class _Killed(Exception):
    """Stands for the process dying part way through a stage."""


def test_the_demonstrator_killed_part_way_goes_on_from_its_last_checkpoint(tmp_path):
    """Killed after its second checkpoint, the demonstrator resumes there: the checkpoints already
    saved are not written again, the rest are, and its resume points go once it is trained."""
    from stable_baselines3.common.vec_env import VecEnvWrapper

    from rlkit.apec.demonstrator import RESUME_DIR, demonstrator_checkpoints, train_demonstrator
    from rlkit.config import load_config
    from rlkit.factories.algorithms import ALGORITHMS
    from rlkit.runners.apec import venv_factory

    class DiesAt(VecEnvWrapper):
        def __init__(self, venv, steps):
            super().__init__(venv)
            self.left = steps

        def reset(self):
            return self.venv.reset()

        def step_wait(self):
            self.left -= 1
            if self.left == 0:
                raise _Killed
            return self.venv.step_wait()

    config = load_config(ApecConfig, None, APEC_TINY)  # PPO, 2048 steps on 2 envs, a checkpoint every 512
    demonstrator = config.demos.replace(seed=config.seed)
    make_venv, out = venv_factory(config.env), tmp_path / "demonstrator"
    with pytest.raises(_Killed):  # at step 1200 (600 steps of 2 envs), past the checkpoint at 1024
        train_demonstrator(lambda seed: DiesAt(make_venv(seed), 600), demonstrator, out, ALGORITHMS)
    first = {p.name: p.stat().st_mtime_ns for p in demonstrator_checkpoints(out)}
    assert sorted(first) == ["step_000000512.zip", "step_000001024.zip"] and (out / RESUME_DIR).is_dir()
    checkpoints = train_demonstrator(make_venv, demonstrator, out, ALGORITHMS)
    assert [p.name for p in checkpoints] == [f"step_{n:09d}.zip" for n in (512, 1024, 1536, 2048)]
    assert {name: (out / name).stat().st_mtime_ns for name in first} == first  # not written again
    assert not (out / RESUME_DIR).exists()


def _counting_reward():
    import torch

    class Reward(torch.nn.Module):
        """-|x'|, counting its calls (one per vectorised step); raises at call ``dies_at``."""

        def __init__(self, dies_at=None):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.ones(()))
            self.calls, self.dies_at = 0, dies_at

        def forward(self, obs, acts, next_obs, dones):
            self.calls += 1
            if self.calls == self.dies_at:
                raise _Killed
            return -self.scale * next_obs.abs().sum(-1)

    return Reward


def test_the_policy_stage_killed_part_way_resumes_from_its_last_point(tmp_path):
    """A policy killed in its second chunk goes on from its first resume point, not from scratch:
    the second sitting takes only the steps after it, the episode curve keeps the first sitting's
    episodes, and once result.json is written the points are removed."""
    from rlkit.config import load_config
    from rlkit.errors import ConfigError
    from rlkit.runners.apec import venv_factory
    from rlkit.runners.apec_policy import run_policy

    Reward = _counting_reward()
    config = load_config(ApecConfig, None, APEC_TINY)  # PPO, 256 steps on 2 envs: points at 128 and 256
    make_venv = venv_factory(config.env)
    whole = Reward()
    expected = run_policy(config, make_venv, whole, tmp_path / "whole", None)
    assert whole.calls == 128
    with pytest.raises(_Killed):  # at step 200, past the point at 128
        run_policy(config, make_venv, Reward(dies_at=100), tmp_path / "killed", None)
    assert sorted(p.name for p in (tmp_path / "killed" / "resume").glob("point-*.json")) == [
        "point-000000000128.json"]
    other = Reward()
    other.scale.data.fill_(2.0)
    with pytest.raises(ConfigError, match="reward_sha256"):  # a point on another reward is refused
        run_policy(config, make_venv, other, tmp_path / "killed", None)
    resumed = Reward()
    result = run_policy(config, make_venv, resumed, tmp_path / "killed", None)
    assert resumed.calls == 64  # the steps after the point only
    before = sum(step <= 128 for step in expected["curve_timesteps"])  # episodes ended by the point
    for curve in ("curve_timesteps", "curve_true_returns"):
        assert result[curve][:before] == expected[curve][:before], curve
    assert (tmp_path / "killed" / "result.json").is_file() and not (tmp_path / "killed" / "resume").exists()


def test_a_policy_evaluated_every_chunk_trains_as_one_evaluated_at_the_end_and_keeps_its_curve(tmp_path):
    """``policy.eval_every``: a deterministic evaluation after each chunk, as the final one; the
    training is the same as without them, and a run killed part way keeps its first evaluations."""
    from rlkit.config import load_config
    from rlkit.runners.apec import venv_factory
    from rlkit.runners.apec_policy import run_policy

    Reward = _counting_reward()
    plain = load_config(ApecConfig, None, APEC_TINY)  # PPO, 256 steps on 2 envs: chunks of 128
    config = load_config(ApecConfig, None, [*APEC_TINY, "policy.eval_every=128"])
    make_venv = venv_factory(config.env)
    at_the_end = run_policy(plain, make_venv, Reward(), tmp_path / "plain", None)
    every_chunk = run_policy(config, make_venv, Reward(), tmp_path / "evaluated", None)
    assert every_chunk["eval_timesteps"] == [128, 256] and at_the_end["eval_timesteps"] == []
    assert every_chunk["final_true_return"] == every_chunk["eval_true_returns"][-1]
    assert every_chunk["final_true_return"] == at_the_end["final_true_return"]
    assert every_chunk["curve_true_returns"] == at_the_end["curve_true_returns"]

    with pytest.raises(_Killed):  # at step 200, after the evaluation at 128
        run_policy(config, make_venv, Reward(dies_at=100), tmp_path / "killed", None)
    resumed = run_policy(config, make_venv, Reward(), tmp_path / "killed", None)
    assert resumed["eval_timesteps"] == [128, 256]
    # the first sitting's evaluation is kept; the chunk ended mid-episode, so from the point the
    # resumed run is equal in steps, not in numbers (rlkit.factories.resumable)
    assert resumed["eval_true_returns"][0] == every_chunk["eval_true_returns"][0]
    assert resumed["final_true_return"] == resumed["eval_true_returns"][-1]


def test_a_policy_also_reports_its_stochastic_return_and_an_older_result_gets_it_from_its_agent(tmp_path):
    """The reference reports a policy's return with its actions sampled (``StoEpRetTest``): the
    result holds it beside the deterministic one, the same for the saved agent in any sitting,
    with torch's RNG left as it was; a result written before it existed gets it on a rerun, from
    the saved agent, without training again."""
    import torch

    from rlkit.config import load_config
    from rlkit.factories.algorithms import ALGORITHMS
    from rlkit.persistence import atomic_write_json, read_json
    from rlkit.persistence.agents import load_agent
    from rlkit.runners.apec import venv_factory
    from rlkit.runners.apec_policy import STOCHASTIC, run_policy, stochastic_return

    Reward = _counting_reward()
    config = load_config(ApecConfig, None, APEC_TINY)  # PPO: a Gaussian policy
    make_venv = venv_factory(config.env)
    result = run_policy(config, make_venv, Reward(), tmp_path / "policy", None)
    assert result["n_stochastic_episodes"] == config.policy.agent.eval_episodes
    assert np.isfinite(result[STOCHASTIC]) and result[STOCHASTIC] != result["final_true_return"]
    assert result[f"{STOCHASTIC}_std"] > 0  # sampled actions: the episodes differ
    agent = load_agent(ALGORITHMS, tmp_path / "policy" / "agent")
    # 256 steps in rollouts of 64 x 2 envs, PPO's 10 epochs each
    assert result["agent_updates"] == agent._n_updates == 256 // (64 * 2) * 10
    state = torch.get_rng_state()
    assert stochastic_return(config, make_venv, agent)[STOCHASTIC] == result[STOCHASTIC]
    assert torch.equal(torch.get_rng_state(), state)

    older = {k: v for k, v in result.items()
             if k not in (STOCHASTIC, f"{STOCHASTIC}_std", "n_stochastic_episodes", "agent_updates")}
    atomic_write_json(tmp_path / "policy" / "result.json", older)
    rerun = Reward()
    assert run_policy(config, make_venv, rerun, tmp_path / "policy", None) == result
    assert rerun.calls == 0 and read_json(tmp_path / "policy" / "result.json") == result


@pytest.mark.parametrize("horizon", [16, 20])
def test_a_policy_resumed_from_its_last_point_ends_where_an_unbroken_run_does(tmp_path, horizon):
    """Chunks of 64 steps per env: on 16-step episodes each point falls on an episode end, on
    20-step ones part way through an episode (kept in the point, with the fixed-horizon wrapper's
    step count); either way the resumed run is the unbroken one, number for number
    (rlkit.factories.resumable)."""
    from rlkit.config import load_config
    from rlkit.runners.apec import venv_factory
    from rlkit.runners.apec_policy import run_policy

    Reward = _counting_reward()
    config = load_config(ApecConfig, None, [*APEC_TINY, f"env.horizon={horizon}", "policy.eval_every=128"])
    make_venv = venv_factory(config.env)
    unbroken = run_policy(config, make_venv, Reward(), tmp_path / "unbroken", None)
    with pytest.raises(_Killed):  # at step 200, after the point at 128
        run_policy(config, make_venv, Reward(dies_at=100), tmp_path / "killed", None)
    resumed = run_policy(config, make_venv, Reward(), tmp_path / "killed", None)
    for key in ("final_true_return", "eval_true_returns", "curve_true_returns"):
        assert resumed[key] == unbroken[key], key


def test_a_resumed_policy_logs_each_row_once_under_its_own_name(tmp_path):
    """A policy's rows are named by its folder (two policies of one run log apart); killed past its
    point at 128 after logging a training-curve row at 160, the resumed run drops that row before
    logging it again, so its rows read as the unbroken run's. Another stage's row logged before it
    at a larger step stays."""
    from rlkit.config import load_config
    from rlkit.logging import make_logger
    from rlkit.runners.apec import venv_factory
    from rlkit.runners.apec_policy import run_policy

    Reward = _counting_reward()
    config = load_config(ApecConfig, None, [*APEC_TINY, "env.horizon=16", "policy.eval_every=128"])
    make_venv = venv_factory(config.env)

    def policy(run_dir: Path, reward) -> None:
        logger = make_logger(run_dir, backends=("jsonl",))
        try:
            logger.log({"earlier/stage": 1.0}, step=5000)
            run_policy(config, make_venv, reward, run_dir / "policies" / "drex", logger)
        finally:
            logger.close()

    def rows(run_dir: Path) -> list[dict]:
        return [{k: v for k, v in json.loads(line).items() if k != "wall_time"}
                for line in (run_dir / "metrics.jsonl").read_text().splitlines()]

    policy(tmp_path / "whole", Reward())
    with pytest.raises(_Killed):  # at step 200
        policy(tmp_path / "killed", Reward(dies_at=100))
    assert [r["step"] for r in rows(tmp_path / "killed")] == [5000, 128, 160]
    policy(tmp_path / "killed", Reward())

    whole = rows(tmp_path / "whole")
    assert {k for r in whole for k in r} == {"step", "earlier/stage", "policy/drex/eval_true_return",
                                             "policy/drex/true_return", "policy/drex/learned_return"}
    assert [r["step"] for r in whole] == [5000, 128, 160, 256]
    # the cut at the row trained again takes what followed it: the second sitting's own "earlier" row
    assert rows(tmp_path / "killed") == whole


def test_an_ail_run_resumed_before_its_latest_round_logs_each_round_once(tmp_path):
    """Killed after logging a round but before its resume folder was written, the AIL stage
    trains that round again: ``metrics.jsonl`` is cut at that round's earlier row (found by the
    stage's prefix: another stage's rows at larger steps before it stay), so the stage's rows
    read as an unbroken run's.
    (A SAC generator: its resume is exact, so the rows can be compared whole.)"""
    import shutil

    SAC_AIL = ["ail.generator=sac",
               "ail.generator_kwargs={learning_starts: 50, policy_kwargs: {net_arch: [16]}}"]

    from rlkit.config import apply_overrides
    from rlkit.logging import make_logger
    from rlkit.runners.apec import run_ail, venv_factory
    from rlkit.runners.apec import run_demos as demos_stage

    def config(rounds: int) -> ApecConfig:
        return ApecConfig.model_validate(apply_overrides(ApecConfig().model_dump(mode="json"),
                                                         [*APEC_TINY, f"ail.rounds={rounds}", *SAC_AIL]))

    def rows(run_dir: Path) -> list[dict]:
        return [{k: v for k, v in json.loads(line).items() if k != "wall_time"}
                for line in (run_dir / "metrics.jsonl").read_text().splitlines()]

    def ail(run_dir: Path, rounds: int) -> dict[str, int]:
        logger = make_logger(run_dir, backends=("jsonl",))
        try:
            logger.log({"earlier/stage": 1.0}, step=5000)  # another stage's row, at a larger step
            _, updates = run_ail(config(rounds), venv_factory(config(rounds).env), demos, run_dir / "ail",
                                 logger)
            return updates
        finally:
            logger.close()

    demos = demos_stage(config(3).env, config(3).demos, 0, tmp_path / "demos", None)
    whole = ail(tmp_path / "whole", 3)
    ail(tmp_path / "killed", 1)
    shutil.copytree(tmp_path / "killed" / "ail" / "resume", tmp_path / "resume-after-round-0")
    ail(tmp_path / "killed", 2)  # round 1 logged and checkpointed; then killed before resume/ ...
    shutil.rmtree(tmp_path / "killed" / "ail" / "resume")
    (tmp_path / "resume-after-round-0").rename(tmp_path / "killed" / "ail" / "resume")
    # ... so the run resumes from round 0 and trains round 1 again; the counts go on from round 0's
    assert ail(tmp_path / "killed", 3) == whole
    assert whole["reward_updates"] == 3 and whole["agent_updates"] > 0

    killed = [r for r in rows(tmp_path / "killed") if "ail/round" in r]
    assert [r["ail/round"] for r in killed] == [0, 1, 2]
    assert killed == [r for r in rows(tmp_path / "whole") if "ail/round" in r]
    # the rows logged before the first row trained again stay (the stage logged at larger steps
    # included); the cut takes what followed it: the third call's own "earlier" row
    kinds = ["earlier" if "earlier/stage" in r else r["ail/round"] for r in rows(tmp_path / "killed")]
    assert kinds == ["earlier", 0, "earlier", 1, 2]


def test_the_agents_train_on_episodes_that_end_at_termination(tmp_path, monkeypatch):
    """As the reference: the demonstrator's, generator's and policies' episodes end where the task
    terminates (the observations keep the absorbing flag, 0), the data the rewards learn from stays
    padded, and the discriminator's expert states are the demos' real ones."""
    import rlkit.runners.apec as runner
    from rlkit.apec.config import ApecEnvConfig
    from rlkit.runners.apec import run_ail, venv_factory

    def episode_lengths(venv, steps: int = 300) -> list[int]:
        venv.reset()
        venv.action_space.seed(0)
        lengths, length = [], 0
        for _ in range(steps):
            _, _, dones, _ = venv.step([venv.action_space.sample()])
            length += 1
            if dones[0]:
                lengths.append(length)
                length = 0
        return lengths

    env = ApecEnvConfig(id="CartPole-v1", horizon=100)  # random CartPole falls in ~20 steps
    assert set(episode_lengths(venv_factory(env)(0))) == {100}  # rollouts, demos, held-out: padded
    ends = episode_lengths(venv_factory(env, training=True)(0))
    assert max(ends) < 100 and len(ends) > 5
    assert set(episode_lengths(venv_factory(env.replace(agent_episodes="pad"), training=True)(0))) == {100}

    seen = {}

    class Stop(Exception):
        pass

    def trainer(config, venv, demos, *args, **kwargs):
        seen["lengths"], seen["demos"] = episode_lengths(venv), demos
        raise Stop

    monkeypatch.setattr(runner, "AILTrainer", trainer)
    padded = venv_factory(env)(1)
    obs = [padded.reset()[0]]
    for _ in range(100):
        obs.append(padded.step([1])[0][0])  # always right: falls within ~10 steps
    demo = Trajectory(obs=np.array(obs), acts=np.ones((100, 1)), rews=np.ones(100))
    config = ApecConfig(env=env)
    with pytest.raises(Stop):
        run_ail(config, venv_factory(env, training=True), [demo], tmp_path / "ail", None)
    assert max(seen["lengths"]) < 100
    (expert,) = seen["demos"]
    assert expert.terminal and len(expert) < 20 and (expert.obs[:, -1] == 0).all()
    np.testing.assert_array_equal(expert.obs, demo.obs[: len(expert) + 1])


def test_learned_rewards_are_zero_on_absorbing_states_as_the_reference_masks_them():
    """The reference sums a trajectory's rewards over its real steps only (train_pbrl.py:32-42,
    f_div.py:238). A padded Hopper episode that fell at step 50 would otherwise add 950 times
    whatever the net learned for the absorbing state, a value no policy is ever paid."""
    import torch
    from gymnasium import spaces

    from rlkit.apec.config import ApecEnvConfig
    from rlkit.reward import build_reward_net
    from rlkit.runners.apec_rewards import absorbing_masked, reward_net

    obs_space, act_space = spaces.Box(-np.inf, np.inf, (5,)), spaces.Box(-1, 1, (1,))
    obs = np.random.default_rng(0).normal(size=(10, 5)).astype(np.float32)
    obs[:, -1] = 0.0
    obs[6:] = 0.0
    obs[6:, -1] = 1.0  # fell after 6 steps

    def rewards(net) -> np.ndarray:
        with torch.no_grad():
            return net(torch.as_tensor(obs), None, None, None).numpy()

    padded = ApecConfig(env=ApecEnvConfig(id="CartPole-v1", horizon=10))
    assert np.all(rewards(reward_net(padded, obs_space, act_space))[6:] == 0.0)
    for config in (padded.model_copy(update={"reward": padded.reward.model_copy(
                       update={"mask_absorbing": False})}),
                   ApecConfig(env=ApecEnvConfig(id="CartPole-v1", horizon=None))):
        assert not reward_net(config, obs_space, act_space).spec.absorbing_flag
    # the raw AIL reward: the discriminator never saw an absorbing state; its copy is 0 there
    discriminator = build_reward_net(obs_space, act_space, inputs=("obs",), hidden=(8,), seed=0)
    masked = absorbing_masked(discriminator)
    np.testing.assert_array_equal(rewards(masked)[:6], rewards(discriminator)[:6])
    assert np.all(rewards(masked)[6:] == 0.0) and np.all(rewards(discriminator)[6:] != 0.0)
