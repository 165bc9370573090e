"""The D-REX behaviour-cloning check: rlkit's clone against the reference's, on a run's demos."""

import json

import numpy as np
import pytest
import torch

from experiments import apec_drex_bc_check as check
from rlkit.data.trajectory import Trajectory
from tests.tiny_envs import POINT_ID


def test_the_reference_loss_sums_the_action_errors_before_squaring():
    prediction, actions = torch.tensor([[0.5, -0.5], [1.0, 1.0]]), torch.zeros(2, 2)
    # row 1's errors cancel (0), row 2's add up (2, squared 4): mean 2; MSE: (0.25 * 2 + 1 * 2) / 4
    assert float(check.bc_loss(prediction, actions, "released")) == pytest.approx(2.0)
    assert float(check.bc_loss(prediction, actions, "mse")) == pytest.approx(0.625)


def test_the_real_steps_variants_clone_only_the_transitions_into_real_states():
    import gymnasium as gym

    from rlkit.apec.drex import DrexConfig, train_bc
    from rlkit.apec.rollouts import real_part

    flags = np.array([0, 0, 0, 1, 1, 1], np.float32)  # terminated at its third state, then padded
    obs = np.stack([np.arange(6, dtype=np.float32), flags], axis=1)
    demo = Trajectory(obs=obs, acts=np.array([[0.1], [0.2], [-0.9], [0.9], [0.9]], np.float32),
                      rews=np.array([1, 2, 0, 0, 0], np.float32))
    space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def weights(policy):
        return torch.cat([p.detach().flatten() for p in policy.parameters()])

    cut = train_bc([real_part(demo)], space, DrexConfig(bc_epochs=3, seed=0))
    whole = train_bc([demo], space, DrexConfig(bc_epochs=3, seed=0))
    real = check.clone("rlkit, real steps", [demo], space, seed=0, bc_epochs=3, flagged=True)
    assert torch.equal(weights(real), weights(cut)) and not torch.equal(weights(real), weights(whole))
    unflagged = check.clone("rlkit, real steps", [demo], space, seed=0, bc_epochs=3, flagged=False)
    assert torch.equal(weights(unflagged), weights(whole))  # no flag: nothing is left out


def test_the_check_clones_each_tasks_demos_in_every_variant(tmp_path, capsys):
    from experiments.apec import ApecExperimentConfig, task_config
    from rlkit.ail.demos import save_demos
    from rlkit.apec.drex import DrexConfig, train_bc
    from rlkit.config import load_config
    from rlkit.data.rollout import collect_trajectories
    from rlkit.runners.apec import venv_factory

    overrides = [f"out_dir={tmp_path}", f"tasks=[{{id: {POINT_ID}}}]", "pipeline.env.horizon=20",
                 "pipeline.env.n_envs=1", "pipeline.drex.bc_epochs=3"]
    config = load_config(ApecExperimentConfig, check.CONFIG, overrides)
    make_venv = venv_factory(task_config(config, config.tasks[0], 0).env)
    venv = make_venv(0)
    demos = collect_trajectories(venv, lambda obs: -np.sign(obs[:, :1]), np.random.default_rng(0),
                                 n_episodes=2, seed=0)[:2]  # steer to 0: a demonstrator
    venv.close()
    save_demos(demos, tmp_path / POINT_ID / "seed0" / "demos" / "demos.npz")

    assert check.main([*overrides, "--bc-seeds", "2", "--episodes", "2"]) == 0
    rows = json.loads((tmp_path / "drex_bc_check.json").read_text())
    assert [r["variant"] for r in rows] == list(check.VARIANTS)
    assert len(capsys.readouterr().out.strip().splitlines()) == len(check.VARIANTS)
    for row in rows:
        assert row["task"] == POINT_ID and row["n"] == 2
        assert row["demo_return"] == pytest.approx(np.mean([d.ret for d in demos]))
        assert row["clone_returns"] == pytest.approx([np.mean(r) for r in row["episode_returns"]])
        assert row["mean"] == pytest.approx(np.mean(row["clone_returns"]))
        assert row["ci95"][0] <= row["mean"] <= row["ci95"][1]

    # the rlkit variant is the experiment's clone (its bc_epochs, seeded 0, 1), on the same episodes
    venv = make_venv(10_000)
    policy = train_bc(demos, venv.action_space, DrexConfig(bc_epochs=3, seed=0))
    played = collect_trajectories(venv, policy.act, np.random.default_rng(0), n_episodes=2, seed=10_000)[:2]
    venv.close()
    assert rows[0]["episode_returns"][0] == pytest.approx([t.ret for t in played])
    # these demos never fell, so leaving out absorbing steps changes nothing
    assert rows[1]["episode_returns"] == rows[0]["episode_returns"]
    # one action dimension: the reference's summed error is the MSE, so the same clones
    assert rows[3]["episode_returns"] == rows[2]["episode_returns"]
    assert rows[2]["episode_returns"] != rows[0]["episode_returns"]  # another net and optimiser
