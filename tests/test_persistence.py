"""rlkit.persistence: one table of every artefact kind; every kind refuses damage by name (a
FileFormatError naming the file, never a raw traceback); RNG and replay state round-trip exactly;
a folder write that fails half-way leaves the old folder whole."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
import torch
from gymnasium import spaces
from stable_baselines3 import PPO
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.env_util import make_vec_env

from rlkit.data import TrajectoryStore
from rlkit.errors import FileFormatError
from rlkit.persistence import FORMATS, atomic_dir, read_header, tag, write_header
from rlkit.persistence import replay as replay_chunks
from rlkit.persistence.arrays import load_npz
from rlkit.persistence.formats import SELF_CHECKSUM, check_tag
from rlkit.persistence.replay import load_replay, save_replay
from rlkit.persistence.rng import (
    numpy_global_state,
    numpy_rng_state,
    python_random_state,
    python_random_state_from_json,
    random_state_from_json,
    random_state_to_json,
    restore_numpy_rng,
    restore_torch_rng,
    torch_rng_state,
)
from tests.saved_artefacts import (
    make_agent,
    make_preferences,
    make_reward_model,
    make_trajectories,
    trajectories,
)

KINDS = {
    "rlkit.sb3-agent", "rlkit.reward_model", "rlkit.trajectories", "rlkit.preferences", "rlkit.replay",
    "rlkit.ail_checkpoint", "rlkit.prefrl.resume", "rlkit.marl.checkpoint", "rlkit.m3hf.run",
    "rlkit.m3hf.pools", "rlkit.human.labels", "rlkit.sb3-resume", "rlkit.apec-inputs", "rlkit.ail.resume",
}


def test_the_registry_lists_every_kind_and_each_writer_uses_its_tag():
    from rlkit.ail import checkpoints
    from rlkit.ail import resume as ail_resume
    from rlkit.apec import inputs
    from rlkit.data import store
    from rlkit.factories import resumable
    from rlkit.feedback import dataset
    from rlkit.human import schema
    from rlkit.m3hf import loop, weights
    from rlkit.marl import checkpoint
    from rlkit.persistence import agents, replay
    from rlkit.prefrl import resume
    from rlkit.reward import serialization

    assert set(FORMATS) == KINDS
    written = {agents.FORMAT, serialization.FORMAT, store._FORMAT, dataset._FORMAT, tag(replay.KIND),
               checkpoints.FORMAT, resume.FORMAT, checkpoint.FORMAT, loop.STATE_FORMAT, weights.FORMAT,
               f"rlkit.human.labels/{schema.CURRENT_VERSION}", resumable.FORMAT, tag(inputs.KIND),
               tag(ail_resume.KIND)}
    assert written == {spec.tag for spec in FORMATS.values()}
    for spec in FORMATS.values():
        assert spec.tag == f"{spec.kind}/{spec.version}" and spec.header and spec.check and spec.writer


def test_a_newer_or_unknown_version_is_refused_by_name(tmp_path):
    path = tmp_path / "meta.json"
    write_header(path, "rlkit.marl.checkpoint", {"x": 1})
    assert read_header(path, "rlkit.marl.checkpoint")["x"] == 1
    for found, message in (("rlkit.marl.checkpoint/4", "written by a newer rlkit"),
                           ("rlkit.marl.checkpoint/0", "old version this rlkit no longer reads"),
                           ("rlkit.reward_model/1", "expected 'rlkit.marl.checkpoint/3'"),
                           ("rlkit.marl.checkpoint/two", "expected"), (7, "format is 7")):
        data = json.loads(path.read_text()) | {"format": found}
        path.write_text(json.dumps(data))
        with pytest.raises(FileFormatError, match=message) as caught:
            read_header(path, "rlkit.marl.checkpoint")
        assert str(path) in str(caught.value)
    with pytest.raises(FileFormatError, match=r"'rlkit.marl.checkpoint/1', an old version this rlkit no "
                                              r"longer reads \(it reads 'rlkit.marl.checkpoint/3'\)"):
        check_tag("rlkit.marl.checkpoint/1", "rlkit.marl.checkpoint", path)
    with pytest.raises(FileFormatError, match="written by a newer rlkit"):
        check_tag("rlkit.reward_model/2", "rlkit.reward_model", "model.json")


def test_a_header_checks_its_own_fields_and_the_files_it_covers(tmp_path):
    payload = tmp_path / "policies.pt"
    payload.write_bytes(b"weights" * 100)
    path = tmp_path / "meta.json"
    write_header(path, "rlkit.marl.checkpoint", {"steps": 5}, covers=[payload])
    header = read_header(path, "rlkit.marl.checkpoint", {"steps": int})
    assert header["sha256"] == {"policies.pt": __import__("hashlib").sha256(payload.read_bytes()).hexdigest()}
    with pytest.raises(FileFormatError, match="field 'steps' is a int, expected str"):
        read_header(path, "rlkit.marl.checkpoint", {"steps": str})
    path.write_text(path.read_text().replace('"steps": 5', '"steps": 6'))  # a flipped digit
    damaged = f"meta.json: damaged: its fields differ from its {SELF_CHECKSUM}"
    with pytest.raises(FileFormatError, match=damaged):
        read_header(path, "rlkit.marl.checkpoint")
    write_header(path, "rlkit.marl.checkpoint", {"steps": 5}, covers=[payload])
    payload.unlink()
    with pytest.raises(FileFormatError, match=r"policies.pt: missing \(listed in meta.json\)"):
        read_header(path, "rlkit.marl.checkpoint")


# ------------------------------------------------------------------ one artefact of every kind

def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def flip(path: Path) -> None:
    """One bit in the middle of the file (inside the data of a zip's largest member)."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def wrong_type(path: Path) -> None:
    path.write_text("[]")


def wrong_field(path: Path) -> None:
    header = json.loads(path.read_text())
    key = next(k for k in sorted(header) if k not in ("format", "sha256", SELF_CHECKSUM))
    header[key] = {"not": "this"} if isinstance(header[key], list) else ["not", "this"]
    path.write_text(json.dumps(header))


def replay_buffer(size: int = 64) -> ReplayBuffer:
    return ReplayBuffer(size, spaces.Box(-1, 1, (3,), np.float32), spaces.Box(-1, 1, (2,), np.float32))


def filled_buffer(rows: int, size: int = 64) -> ReplayBuffer:
    buffer, rng = replay_buffer(size), np.random.default_rng(2)
    for _ in range(rows):
        buffer.add(rng.normal(size=(1, 3)), rng.normal(size=(1, 3)), rng.normal(size=(1, 2)),
                   rng.normal(size=1), np.array([False]), [{}])
    return buffer


def make_replay(root: Path):
    save_replay(filled_buffer(40), root / "replay.npz")
    return [root / "replay.npz"], [], lambda: load_replay(replay_buffer(), root / "replay.npz")


def make_ail_checkpoint(root: Path):
    from rlkit.ail.checkpoints import CheckpointStore
    from rlkit.ail.discriminator import DiscriminatorConfig, build_discriminator
    from rlkit.ail.resume import restore_trainer_state, trainer_state

    venv = make_vec_env("Pendulum-v1", n_envs=1, seed=0)
    generator = PPO("MlpPolicy", venv, n_steps=16, batch_size=16, seed=0)
    discriminator = build_discriminator(DiscriminatorConfig(hidden=(8,)), venv.observation_space,
                                        venv.action_space, seed=0)
    optimizer = torch.optim.Adam(discriminator.parameters())
    state = trainer_state(optimizer, np.random.default_rng(0), torch.Generator(), generator)
    store = CheckpointStore(root)
    folder = store.save(0, generator, discriminator, {"true_return": 1.0}, state)

    def load() -> None:
        store.load(0)
        restore_trainer_state(folder, optimizer, np.random.default_rng(), torch.Generator())

    files = [folder / name for name in ("meta.json", "trainer_state.pt", "generator.zip", "generator.json",
                                        "reward/model.safetensors", "reward/model.json")]
    return files, [folder / "meta.json"], load


def make_ail_resume(root: Path):
    from rlkit.ail.resume import read_resume_folder, save_resume_folder

    folder, config = root / "resume", {"ail": {"rounds": 3}, "generator": "SAC"}
    save_resume_folder(folder, 2, filled_buffer(40), {"agent:_last_obs": np.ones((1, 3))}, config)

    def load() -> None:
        assert read_resume_folder(folder, config)[0] == 2
        load_replay(replay_buffer(), folder / "replay.npz")

    files = [folder / name for name in ("point.json", "replay.npz", "episode.npz")]
    return files, [folder / "point.json"], load


def make_prefrl_resume(root: Path, monkeypatch):
    from rlkit.prefrl import PreferenceRL, resume
    from rlkit.prefrl import loop as prefrl_loop
    from tests.tiny_runs import small_config

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    config = small_config("ppo")
    with monkeypatch.context() as patch:
        patch.setattr(prefrl_loop, "evaluate_reward", killed)
        with pytest.raises(KeyboardInterrupt):
            PreferenceRL.from_config(config, run_dir=root).learn()
    folder = root / resume.RESUME_DIR
    config_json = json.loads((folder / "state.json").read_text())["config"]
    round_dir = json.loads((folder / "state.json").read_text())["round"]
    files = [folder / name for name in ("state.json", f"{round_dir}/tensors.pt", f"{round_dir}/pairs.npz",
                                        f"{round_dir}/reward/model.safetensors")]
    files += sorted((folder / "store").glob("traj-*.npz"))  # the trajectories, in chunks
    assert len(files) == 5
    return files, [folder / "state.json"], lambda: resume.load(folder, config_json)


def marl_rows():
    from envs.overcooked.vector import OvercookedVecEnv
    from rlkit.marl import OvercookedRows

    return OvercookedRows(OvercookedVecEnv(2, keep_features=True, recipe="tomato", max_steps=20))


def make_marl_checkpoint(root: Path):
    from rlkit.marl import MarlConfig, MultiAgentPPO, load_checkpoint, save_checkpoint

    trainer = MultiAgentPPO(marl_rows(), MarlConfig(n_steps=16, batch_size=32, n_epochs=1))
    trainer.learn(32)
    path = save_checkpoint(trainer, root / "checkpoint")
    return ([path / "meta.json", path / "policies.pt"], [path / "meta.json"],
            lambda: load_checkpoint(path, marl_rows()))


def make_m3hf_run(root: Path):
    from rlkit.m3hf.loop import M3HFRun
    from tests.tiny_runs import tiny_config

    config = tiny_config(video="none", phases=1)
    M3HFRun(config, root).run()
    generation = root / "checkpoints" / "gen_001"
    files = [root / "state.json", root / "pools" / "gen_001.json", generation / "meta.json",
             generation / "policies.pt"]
    return files, [root / "state.json", root / "pools" / "gen_001.json"], lambda: M3HFRun(config, root).run()


ARTEFACTS = {
    "rlkit.sb3-agent": make_agent, "rlkit.reward_model": make_reward_model,
    "rlkit.trajectories": make_trajectories, "rlkit.preferences": make_preferences,
    "rlkit.replay": make_replay, "rlkit.ail_checkpoint": make_ail_checkpoint,
    "rlkit.ail.resume": make_ail_resume,
    "rlkit.prefrl.resume": make_prefrl_resume, "rlkit.marl.checkpoint": make_marl_checkpoint,
    "rlkit.m3hf.run": make_m3hf_run,  # with rlkit.m3hf.pools, which its state.json covers
}


@pytest.mark.parametrize("kind", sorted(ARTEFACTS))
def test_a_damaged_artefact_of_every_kind_is_refused_naming_the_file(kind, tmp_path, monkeypatch):
    """Truncated, one bit flipped, JSON of the wrong type or with a field of the wrong type: each is
    a FileFormatError that names the damaged file (or its folder), for every file of the artefact."""
    make = ARTEFACTS[kind]
    files, json_files, load = make(tmp_path, monkeypatch) if kind == "rlkit.prefrl.resume" else make(tmp_path)
    load()  # intact: it loads
    for path in files:
        good = path.read_bytes()
        damages = [truncate, flip] + ([wrong_type, wrong_field] if path in json_files else [])
        for damage in damages:
            damage(path)
            with pytest.raises(FileFormatError) as caught:
                load()
            named = str(path) in str(caught.value) or str(path.parent) in str(caught.value)
            assert named, f"{damage.__name__} of {path.name}: {caught.value}"
            path.write_bytes(good)
    load()  # mended: it loads again


# ------------------------------------------------------------------ RNG and replay state

@pytest.mark.parametrize("bit_generator", [np.random.PCG64, np.random.MT19937, np.random.Philox])
def test_numpy_generator_state_round_trips_through_json_exactly(bit_generator):
    rng = np.random.Generator(bit_generator(5))
    rng.normal(size=7)
    saved = json.loads(json.dumps(numpy_rng_state(rng)))
    expected = rng.normal(size=20)
    other = np.random.Generator(bit_generator(99))
    restore_numpy_rng(other, saved)
    np.testing.assert_array_equal(other.normal(size=20), expected)
    with pytest.raises(FileFormatError, match="state.json: not a"):
        restore_numpy_rng(other, {"bit_generator": "PCG64", "state": "x"}, "state.json")


def test_legacy_random_state_and_torch_rng_round_trip_exactly():
    state = np.random.RandomState(3)
    state.normal(size=5)  # leaves a cached gaussian
    saved = random_state_from_json(json.loads(json.dumps(random_state_to_json(state.get_state()))))
    expected = state.normal(size=9)
    other = np.random.RandomState(0)
    other.set_state(saved)
    np.testing.assert_array_equal(other.normal(size=9), expected)
    with pytest.raises(FileFormatError, match="meta.json: not a numpy RandomState state"):
        random_state_from_json(["MT19937", [1, 2], 0, 0, 0.0], "meta.json")

    generator = torch.Generator().manual_seed(4)
    torch.rand(3, generator=generator)
    saved_torch = torch_rng_state(generator)
    expected_torch = torch.rand(5, generator=generator)
    fresh = torch.Generator()
    restore_torch_rng(saved_torch, fresh)
    torch.testing.assert_close(torch.rand(5, generator=fresh), expected_torch, rtol=0, atol=0)
    with pytest.raises(FileFormatError, match="tensors.pt: not a torch RNG state"):
        restore_torch_rng(torch.zeros(3), fresh, "tensors.pt")


def test_the_global_numpy_and_python_rngs_round_trip_through_json_exactly():
    random.seed(5)
    np.random.seed(6)
    random.gauss(0, 1)  # leaves a cached gaussian
    saved = json.loads(json.dumps({"python": python_random_state(), "numpy": numpy_global_state()}))
    expected = ([random.random() for _ in range(5)], random.gauss(0, 1), np.random.normal(size=4))
    random.seed(0)
    np.random.seed(0)
    random.setstate(python_random_state_from_json(saved["python"]))
    np.random.set_state(random_state_from_json(saved["numpy"]))
    assert ([random.random() for _ in range(5)], random.gauss(0, 1)) == expected[:2]
    np.testing.assert_array_equal(np.random.normal(size=4), expected[2])
    with pytest.raises(FileFormatError, match="point.json: not a Python random state"):
        python_random_state_from_json([3, [1, 2, "x"], None], "point.json")


@pytest.mark.parametrize("rows", [0, 25, 64, 100])  # empty, part-filled, exactly full, wrapped
def test_replay_buffer_state_round_trips_exactly(rows, tmp_path):
    buffer = filled_buffer(rows)
    save_replay(buffer, tmp_path / "replay.npz")
    restored = replay_buffer()
    load_replay(restored, tmp_path / "replay.npz")
    assert (restored.pos, restored.full) == (buffer.pos, buffer.full)
    filled = buffer.buffer_size if buffer.full else buffer.pos
    for name in ("observations", "next_observations", "actions", "rewards", "dones", "timeouts"):
        np.testing.assert_array_equal(getattr(restored, name)[:filled], getattr(buffer, name)[:filled])
    with pytest.raises(FileFormatError, match="replay.npz: observations has shape"):
        load_replay(ReplayBuffer(64, spaces.Box(-1, 1, (4,), np.float32), buffer.action_space),
                    tmp_path / "replay.npz")


def test_a_replay_file_of_another_kind_is_refused(tmp_path):
    store = TrajectoryStore()
    store.extend(trajectories())
    path = store.save(tmp_path / "trajectories")
    with pytest.raises(FileFormatError, match=r"trajectories.npz: format is 'rlkit.trajectories/2'"):
        load_replay(replay_buffer(), path)


# ------------------------------------------------------------------ atomic folder writes

@pytest.mark.parametrize("swap", [True, False])  # one atomic exchange, or move aside then rename
def test_a_folder_write_that_fails_half_way_leaves_the_old_folder_whole(tmp_path, monkeypatch, swap):
    from rlkit.persistence import atomic

    if not swap:
        monkeypatch.setattr(atomic, "_exchange", lambda a, b: False)
    target = tmp_path / "checkpoint"
    with atomic_dir(target) as staging:
        (staging / "a.txt").write_text("old")
        (staging / "sub").mkdir()
        (staging / "sub" / "b.txt").write_text("old b")
    with pytest.raises(RuntimeError, match="killed"), atomic_dir(target) as staging:
        (staging / "a.txt").write_text("new")
        raise RuntimeError("killed half-way")
    assert (target / "a.txt").read_text() == "old" and (target / "sub" / "b.txt").read_text() == "old b"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint"]  # no staged leftovers
    with atomic_dir(target) as staging:
        (staging / "a.txt").write_text("new")
    assert [p.name for p in target.iterdir()] == ["a.txt"] and (target / "a.txt").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint"]


def test_the_writers_stage_their_folders_and_a_failed_save_keeps_the_last_checkpoint(tmp_path, monkeypatch):
    from rlkit.marl import checkpoint as marl_checkpoint

    files, _, load = make_marl_checkpoint(tmp_path)
    before = {path: path.read_bytes() for path in files}
    trainer = load()

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(marl_checkpoint, "commit", broken)
    with pytest.raises(OSError, match="disk full"):
        marl_checkpoint.save_checkpoint(trainer, tmp_path / "checkpoint")
    assert {path: path.read_bytes() for path in files} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint"]
    load()


def test_a_checkpoint_written_before_checksums_is_refused_by_its_version(tmp_path):
    """Pre-release files: a ``rlkit.marl.checkpoint/1`` header (no checksums) is refused by name."""
    files, _, load = make_marl_checkpoint(tmp_path)
    meta = files[0]
    header = json.loads(meta.read_text())
    assert load().num_timesteps == 32
    for key in ("sha256", SELF_CHECKSUM):
        del header[key]
    meta.write_text(json.dumps(header | {"format": "rlkit.marl.checkpoint/1"}))
    with pytest.raises(FileFormatError, match="meta.json: format is 'rlkit.marl.checkpoint/1', an old"):
        load()
    meta.write_text(json.dumps(header))  # the current version without its checksums is refused
    with pytest.raises(FileFormatError, match="meta.json: missing field 'sha256'"):
        load()


@pytest.mark.parametrize(("content", "says"), [(b'{"trajectories": []}', "JSON or text"),
                                               (b"\x93NUMPY\x01\x00", "not a zip archive")])
def test_a_file_that_is_not_an_npz_is_named_as_such_not_as_a_pickle(tmp_path, content, says):
    path = tmp_path / "store.npz"
    path.write_bytes(content)
    with pytest.raises(FileFormatError, match=f"^{path}: not an .npz file \\({says};") as caught:
        load_npz(path)
    assert "pickle" not in str(caught.value)


@pytest.mark.parametrize("optimize", [False, True])
def test_a_replay_buffer_saved_in_chunks_round_after_round_reloads_exactly(tmp_path, monkeypatch, optimize):
    """Rounds of new rows (the ring wrapping, old rows overwritten), some with every reward rewritten:
    each save writes only the chunks that changed, and each reloads into a fresh buffer exactly."""
    monkeypatch.setattr(replay_chunks, "CHUNK_BYTES", 8 * 40)  # 8 positions a chunk, 80 rewards
    def make() -> ReplayBuffer:
        return ReplayBuffer(100, spaces.Box(-1, 1, (3,), np.float32), spaces.Box(-1, 1, (2,), np.float32),
                            optimize_memory_usage=optimize, handle_timeout_termination=not optimize)

    buffer, rng, manifest, steps = make(), np.random.default_rng(4), None, 0
    assert replay_chunks.chunk_rows(buffer) == 8
    for generation, (rows, relabel) in enumerate([(30, False), (5, False), (0, True), (41, True),
                                                  (60, False), (4, False), (130, False)]):
        for _ in range(rows):
            buffer.add(rng.normal(size=(1, 3)), rng.normal(size=(1, 3)), rng.normal(size=(1, 2)),
                       rng.normal(size=1), rng.random(1) < 0.1, [{}])
        if relabel:  # as relabel_replay_buffer: the filled rows
            filled = buffer.buffer_size if buffer.full else buffer.pos
            buffer.rewards[:filled] = rng.normal(size=buffer.rewards[:filled].shape)
        steps += rows
        manifest, written = replay_chunks.save_replay_chunks(buffer, tmp_path, "replay", manifest, steps,
                                                             generation)
        manifest = json.loads(json.dumps(manifest))  # as state.json holds it
        new_rows = sum(name.startswith("replay/rows") for name in written)
        if 0 < rows < 100:  # the chunks of the new positions (and the one after them), not all
            assert new_rows <= rows // 8 + 2
        assert (new_rows == 0) == (rows == 0)
        restored = make()
        replay_chunks.load_replay_chunks(restored, tmp_path, manifest)
        assert (restored.pos, restored.full) == (buffer.pos, buffer.full)
        for name in ("observations", "next_observations", "actions", "rewards", "dones", "timeouts"):
            if getattr(buffer, name, None) is not None:
                np.testing.assert_array_equal(getattr(restored, name), getattr(buffer, name), err_msg=name)
    named = set(replay_chunks.chunk_files(manifest))
    assert named <= {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.npz")}
    with pytest.raises(FileFormatError, match="this agent's"):
        replay_chunks.load_replay_chunks(replay_buffer(200), tmp_path, manifest)  # another size


def test_json_lines_read_back_in_order_and_a_bad_line_is_named(tmp_path):
    from rlkit.errors import FileFormatError
    from rlkit.persistence import read_json_lines

    path = tmp_path / "log.jsonl"
    path.write_text('{"step": 1}\n\n[2, 3]\n{"step": 4, "loss')  # the last row still being written
    assert read_json_lines(path, torn_tail=True) == [{"step": 1}, [2, 3]]
    with pytest.raises(FileFormatError, match=r"log.jsonl: line 4 is not JSON"):
        read_json_lines(path)  # a finished file must be whole
    path.write_text('{"step": 1}\n{"st\n{"step": 3}\n')  # a damaged row with rows after it
    with pytest.raises(FileFormatError, match=r"log.jsonl: line 2 is not JSON"):
        read_json_lines(path, torn_tail=True)
    with pytest.raises(FileFormatError, match=r"missing.jsonl: not readable: no such file"):
        read_json_lines(tmp_path / "missing.jsonl")
    path.write_bytes(b'{"a": 1}\n\xff\xfe\n')
    with pytest.raises(FileFormatError, match=r"log.jsonl: not readable"):
        read_json_lines(path)
