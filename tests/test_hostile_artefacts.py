"""Artefacts that lie (issue 36): a symlink to ``/dev/zero``, a named pipe or a directory in place
of an artefact file, a file over its size limit, a header stripped of its checksum and then edited,
and trajectory arrays of the wrong dtype. Each is refused by name, never read until memory runs out,
never waited on forever, never loaded."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from gymnasium import spaces
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env

from rlkit.cli import main
from rlkit.data import TrajectoryStore
from rlkit.errors import FileFormatError, InvalidDataError
from rlkit.persistence import reading
from rlkit.persistence.arrays import load_npz, save_npz
from rlkit.persistence.formats import SELF_CHECKSUM, read_header, write_header
from rlkit.persistence.reading import read_json_lines
from tests.saved_artefacts import (
    make_agent,
    make_preferences,
    make_reward_model,
    make_trajectories,
    trajectories,
)

os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("WANDB_SILENT", "true")

MAKERS = {"agent": make_agent, "reward_model": make_reward_model, "trajectories": make_trajectories,
          "preferences": make_preferences}
FILES = [("agent", "agent.zip"), ("agent", "agent.json"), ("reward_model", "model.safetensors"),
         ("reward_model", "model.json"), ("trajectories", "trajectories.npz"),
         ("preferences", "prefs.npz"), ("preferences", "prefs.json")]
WAIT_S = 60  # far longer than any of these loads takes when it refuses


def outcome(load: Callable[[], object], path: Path) -> BaseException | None:
    """What ``load()`` raised (None: it loaded), run in a thread so a load that blocks fails the
    test instead of hanging it; a load blocked on the named pipe at ``path`` is released."""
    caught: list[BaseException | None] = []

    def target() -> None:
        try:
            load()
            caught.append(None)
        except BaseException as error:  # noqa: BLE001 - MemoryError included: it is what we look for
            caught.append(error)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(WAIT_S)
    if thread.is_alive():
        if path.is_fifo():  # give the blocked reader its end of file, so the thread ends
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail(f"loading with {path.name} in place still waits after {WAIT_S} s")
    return caught[0]


def dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def named_pipe(path: Path) -> None:
    os.mkfifo(path)


def directory(path: Path) -> None:
    path.mkdir()


@pytest.mark.parametrize("replace", [dev_zero, named_pipe, directory])
@pytest.mark.parametrize(("artefact", "name"), FILES)
def test_a_file_that_is_not_a_regular_file_is_refused_by_name(tmp_path, artefact, name, replace):
    _, _, load = MAKERS[artefact](tmp_path)
    path = tmp_path / name
    path.unlink()
    replace(path)
    error = outcome(load, path)
    assert isinstance(error, FileFormatError), f"{replace.__name__} as {name}: {error!r}"
    assert f"{path}: " in str(error) and "not a regular file" in str(error), str(error)


@pytest.mark.parametrize(("artefact", "name"), FILES)
def test_a_file_over_its_size_limit_is_refused_naming_the_limit(tmp_path, monkeypatch, artefact, name):
    _, _, load = MAKERS[artefact](tmp_path)
    path = tmp_path / name
    size = path.stat().st_size
    limit = path.suffix.removeprefix(".")  # the MAX_BYTES key of each kind of file here
    monkeypatch.setitem(reading.MAX_BYTES, limit, size - 1)
    with pytest.raises(FileFormatError) as caught:
        load()
    assert f"{path}: {size:,} bytes, over the {size - 1:,}-byte limit" in str(caught.value)
    monkeypatch.setitem(reading.MAX_BYTES, limit, size)  # at the limit: it loads
    load()


def test_a_file_that_grows_past_its_limit_while_read_is_refused(tmp_path, monkeypatch):
    """The size is checked on the bytes read too, not only on what ``fstat`` said before."""
    path = tmp_path / "model.json"
    path.write_bytes(b"{}")
    monkeypatch.setitem(reading.MAX_BYTES, "json", 10)
    real_fstat = os.fstat

    def fstat_then_grow(fd: int) -> os.stat_result:
        found = real_fstat(fd)
        with open(path, "ab") as handle:  # 22 bytes once read, though 2 when its size was taken
            handle.write(b" " * 20)
        return found

    monkeypatch.setattr(reading.os, "fstat", fstat_then_grow)
    with pytest.raises(FileFormatError, match="over the 10-byte limit"):
        reading.read_regular(path, "json")


def test_a_symlink_to_a_regular_file_is_read(tmp_path):
    _, _, load = make_reward_model(tmp_path / "real")
    (tmp_path / "linked").mkdir()
    for name in ("model.json", "model.safetensors"):
        (tmp_path / "linked" / name).symlink_to(tmp_path / "real" / name)
    from rlkit.reward import load_reward_model

    assert load_reward_model(tmp_path / "linked").norm is None


def test_a_pipe_as_a_covered_payload_or_a_json_lines_log_is_refused(tmp_path):
    """The checksum of a file a header covers (``policies.pt``) and a JSON-lines history are read
    through the same check."""
    payload = tmp_path / "policies.pt"
    payload.write_bytes(b"weights")
    write_header(tmp_path / "meta.json", "rlkit.marl.checkpoint", {"steps": 5}, covers=[payload])
    payload.unlink()
    os.mkfifo(payload)
    error = outcome(lambda: read_header(tmp_path / "meta.json", "rlkit.marl.checkpoint"), payload)
    assert isinstance(error, FileFormatError) and f"{payload}: a named pipe" in str(error), error
    log = tmp_path / "generations.jsonl"
    os.mkfifo(log)
    error = outcome(lambda: read_json_lines(log), log)
    assert isinstance(error, FileFormatError) and f"{log}: a named pipe" in str(error), error


@pytest.mark.parametrize("replace", [named_pipe, dev_zero])
def test_rlkit_label_refuses_a_pipe_or_dev_zero_as_its_trajectories(tmp_path, capsys, replace):
    path = tmp_path / "trajectories.npz"
    replace(path)
    argv = ["label", f"trajectories={path}", "--logger", "jsonl", "--run-dir", str(tmp_path / "run")]
    codes: list[int] = []
    assert outcome(lambda: codes.append(main(argv)), path) is None and codes == [2]
    error = capsys.readouterr().err
    assert f"{path}: " in error and "not a regular file" in error and "Traceback" not in error, error


# ------------------------------------------------------------------ a header without its checksum

def edited_without_checksum(path: Path, edit: Callable[[dict], None]) -> None:
    header = json.loads(path.read_text())
    del header[SELF_CHECKSUM]
    edit(header)
    path.write_text(json.dumps(header))


def pendulum_agent(root: Path):
    from rlkit.factories.algorithms import ALGORITHMS
    from rlkit.persistence.agents import load_agent, save_agent

    agent = PPO("MlpPolicy", make_vec_env("Pendulum-v1", n_envs=1, seed=0), n_steps=16, batch_size=16,
                seed=0)
    path = save_agent(agent, root / "agent")
    return root / "agent.json", lambda: load_agent(ALGORITHMS, path)


def obs_only_reward_model(root: Path):
    from rlkit.reward import build_reward_net, load_reward_model, save_reward_model

    box = spaces.Box(-1, 1, (3,), np.float32)
    save_reward_model(build_reward_net(box, spaces.Box(-1, 1, (1,), np.float32), inputs=("obs",), seed=0),
                      root)
    return root / "model.json", lambda: load_reward_model(root)


def preferences(root: Path):
    _, _, load = make_preferences(root)
    return root / "prefs.json", load


def set_high(header: dict) -> None:
    assert header["action_space"]["high"] == [2.0]
    header["action_space"]["high"] = [5.0]


def set_act_shape(header: dict) -> None:
    assert header["specs"][0]["act_shape"] == [1]
    header["specs"][0]["act_shape"] = [3]


def set_dataset_act_shape(header: dict) -> None:
    assert header["act_shape"] == [2]
    header["act_shape"] = [3]


EDITS = [(pendulum_agent, set_high), (obs_only_reward_model, set_act_shape),
         (preferences, set_dataset_act_shape)]


@pytest.mark.parametrize(("make", "edit"), EDITS)
def test_a_header_stripped_of_its_checksum_and_edited_is_refused(tmp_path, make, edit):
    path, load = make(tmp_path)
    load()
    edited_without_checksum(path, edit)
    with pytest.raises(FileFormatError, match=rf"{path.name}: missing field '{SELF_CHECKSUM}'"):
        load()
    assert str(path) in str(pytest.raises(FileFormatError, load).value)


# ------------------------------------------------------------------ trajectory arrays of the wrong dtype

def with_dtype(path: Path, name: str, dtype: str) -> None:
    arrays = load_npz(path)
    arrays[name] = arrays[name].astype(dtype)
    save_npz(path, arrays)


def long_store(root: Path) -> Path:
    store = TrajectoryStore()
    store.extend(trajectories(n=4, length=30))
    return store.save(root / "trajectories")


BAD_DTYPES = [("obs", "int8"), ("obs", "float16"), ("obs", "int64"), ("lengths", "float64"),
              ("lengths", "bool"), ("terminal", "float32"), ("terminal", "int64"), ("acts", "bool"),
              ("acts", "complex64"), ("rews", "int32")]


@pytest.mark.parametrize(("name", "dtype"), BAD_DTYPES)
def test_rlkit_label_refuses_trajectory_arrays_of_the_wrong_dtype(tmp_path, capsys, name, dtype):
    path = long_store(tmp_path)
    with_dtype(path, name, dtype)
    argv = ["label", f"trajectories={path}", "n_pairs=10", "segment_length=10", "--logger", "jsonl",
            "--run-dir", str(tmp_path / "run")]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert f"{path}: {name} holds {dtype}" in error and "Traceback" not in error, error


def test_rlkit_label_reads_the_dtypes_rlkit_writes(tmp_path, capsys):
    """float32 and float64 observations, uint8 frames and integer actions all load."""
    path = long_store(tmp_path)
    argv = ["label", f"trajectories={path}", "n_pairs=10", "segment_length=10", "--logger", "jsonl"]
    assert main([*argv, "--run-dir", str(tmp_path / "run")]) == 0
    for name, dtype in (("obs", "float64"), ("obs", "uint8"), ("acts", "int64"), ("acts", "int8"),
                        ("lengths", "int32"), ("rews", "float64")):
        with_dtype(path, name, dtype)
        assert len(TrajectoryStore.load(path)) == 4, (name, dtype)
        path = long_store(tmp_path)


def test_a_store_of_observations_it_could_not_read_back_is_not_written(tmp_path):
    store = TrajectoryStore()
    store.extend(trajectories())
    int8 = TrajectoryStore()
    for trajectory in store:
        int8.append(type(trajectory)(obs=trajectory.obs.astype(np.int8), acts=trajectory.acts,
                                     rews=trajectory.rews))
    with pytest.raises(InvalidDataError, match=r"obs holds int8"):
        int8.save(tmp_path / "trajectories")
    assert not (tmp_path / "trajectories.npz").exists()
