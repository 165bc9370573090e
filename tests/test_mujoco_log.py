"""`rlkit` on a MuJoCo task writes no MUJOCO_LOG.TXT where it runs and does not repeat MuJoCo's
`settotalmass` deprecation notice (issue 35); MuJoCo's other warnings still reach stderr."""

from __future__ import annotations

import os
import subprocess
import sys

import mujoco
import numpy as np

from envs.mujoco_log import route_mujoco_warnings

HALF_CHEETAH = ["env.id=HalfCheetah-v5", "env.n_envs=2", "policies=[{n_steps: 20}]"]


def rlkit(cwd, *argv: str) -> subprocess.CompletedProcess[str]:
    """``rlkit ARGV`` in a fresh process (MuJoCo's own warning handler in place until rlkit's)."""
    env = os.environ | {"WANDB_MODE": "offline"}
    return subprocess.run([sys.executable, "-m", "rlkit.cli", *argv], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=300)


def test_a_half_cheetah_run_and_its_print_config_leave_no_log_file_and_no_notice(tmp_path):
    for argv in ([*HALF_CHEETAH, "--print-config"],
                 [*HALF_CHEETAH, "--run-dir", str(tmp_path / "run"), "--logger", "jsonl"]):
        done = rlkit(tmp_path, "collect", *argv)
        assert done.returncode == 0, done.stderr
        assert "settotalmass" not in done.stdout + done.stderr
        assert not (tmp_path / "MUJOCO_LOG.TXT").exists()
    assert (tmp_path / "run" / "trajectories.npz").is_file()  # the envs were made and stepped


def test_other_mujoco_warnings_still_reach_stderr_and_no_file(tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    route_mujoco_warnings()
    model = mujoco.MjModel.from_xml_string(
        "<mujoco><worldbody><body><freejoint/><geom size='0.1'/></body></worldbody></mujoco>")
    data = mujoco.MjData(model)
    data.qpos[0] = np.nan  # MuJoCo warns that the simulation is unstable and resets it
    mujoco.mj_step(model, data)
    assert "MuJoCo warning: Nan, Inf or huge value in QPOS at DOF 0" in capfd.readouterr().err
    assert not (tmp_path / "MUJOCO_LOG.TXT").exists()
