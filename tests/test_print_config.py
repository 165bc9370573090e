"""``--print-config`` checks the env it prints without making it (issue 35, section 5): the id
against gymnasium's registry, the kwargs against the entry point's signature."""

from __future__ import annotations

import gymnasium
import pytest
import yaml

from rlkit.cli import main


@pytest.fixture
def no_env_is_made(monkeypatch, tmp_path):
    """``gymnasium.make`` raises; the working directory is an empty folder."""

    def make(*args, **kwargs):
        raise AssertionError(f"--print-config made an env: {args} {kwargs}")

    monkeypatch.setattr(gymnasium, "make", make)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("command", ["collect", "pref-rl"])
def test_print_config_makes_no_env_yet_refuses_an_unknown_id_and_kwarg_by_name(
    no_env_is_made, capsys, command
):
    assert main([command, "env.id=HalfCheetah-v5", "env.kwargs={frame_skip: 2, width: 64}",
                 "--print-config"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["env"]["kwargs"] == {"frame_skip": 2, "width": 64}
    assert main([command, "env.id=HalfCheetah-v5", "env.kwargs={bogus: 1}", "--print-config"]) == 2
    err = capsys.readouterr().err
    assert "env.kwargs={'bogus': 1}: HalfCheetah-v5 does not take them" in err and "'bogus'" in err
    assert main([command, "env.id=NoSuchEnv-v9", "--print-config"]) == 2
    assert "env.id=NoSuchEnv-v9: Environment `NoSuchEnv` doesn't exist" in capsys.readouterr().err
    assert list(no_env_is_made.iterdir()) == []  # no MUJOCO_LOG.TXT, nothing at all


def test_print_config_accepts_what_make_itself_takes_and_any_name_a_kwargs_entry_point_takes(
    no_env_is_made, capsys
):
    gymnasium.register("AnyKwargs-v0", entry_point=lambda **kwargs: None)
    try:
        assert main(["collect", "env.id=AnyKwargs-v0", "env.kwargs={whatever: 1}", "--print-config"]) == 0
    finally:
        del gymnasium.registry["AnyKwargs-v0"]
    assert main(["collect", "env.id=Pendulum-v1", "env.kwargs={max_episode_steps: 5, g: 9.8}",
                 "--print-config"]) == 0
    assert main(["collect", "env.id=Pendulum-v1", "env.kwargs={frame_skip: 2}", "--print-config"]) == 2
    assert "no parameter 'frame_skip' in gymnasium.envs.classic_control" in capsys.readouterr().err
