"""APEC's checkpoint and held-out rollouts as independent tasks: each loads its checkpoint from
disk, builds its env and seeds itself from (seed, index), so one process, a process pool and Ray
give the same trajectories, in checkpoint order."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
import torch

from rlkit.apec.config import ApecEnvConfig
from rlkit.apec.evaluation import (
    SOURCE_AIL,
    SOURCE_DEMONSTRATOR,
    SOURCE_RANDOM,
    heldout_rollouts,
    heldout_tasks,
)
from rlkit.apec.pair_config import RolloutConfig
from rlkit.apec.rollouts import (
    checkpoint_tasks,
    load_generator,
    rollout_tasks,
    run_rollout_task,
    sequential_map,
)
from rlkit.data import TrajectoryStore
from rlkit.errors import InvalidDataError
from rlkit.runners.apec import venv_factory
from rlkit.types import TaskMap

ENV = ApecEnvConfig(id="Pendulum-v1", n_envs=2, horizon=None)
ROUNDS = (0, 2, 5)
STOCHASTIC = RolloutConfig(per_checkpoint=2, deterministic=False, seed=7)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    from rlkit.ail import CheckpointStore, DiscriminatorConfig, build_discriminator, make_generator

    make_venv = venv_factory(ENV)
    venv = make_venv(0)
    store = CheckpointStore(tmp_path_factory.mktemp("ail"))
    config = DiscriminatorConfig(hidden=(8,))
    for round_index in ROUNDS:
        generator = make_generator("ppo", venv, 64, seed=round_index,
                                   kwargs={"policy_kwargs": {"net_arch": [8]}})
        discriminator = build_discriminator(config, venv.observation_space, venv.action_space)
        store.save(round_index, generator, discriminator, {})
    venv.close()
    return store


def _same(a: TrajectoryStore | list, b: TrajectoryStore | list) -> None:
    assert len(a) == len(b)
    for left, right in zip(a, b, strict=True):
        assert np.array_equal(left.obs, right.obs) and np.array_equal(left.acts, right.acts)
        assert np.array_equal(left.rews, right.rews)


def test_checkpoint_tasks_are_seeded_by_index_not_by_order_and_leave_torch_alone(checkpoints):
    tasks = checkpoint_tasks(checkpoints, ROUNDS, venv_factory(ENV), STOCHASTIC)
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    store, index = rollout_tasks(tasks)
    assert torch.equal(torch.random.get_rng_state(), before)  # the caller's RNG is untouched
    assert index.tolist() == [0, 0, 2, 2, 5, 5] and len(store) == 6

    again, _ = rollout_tasks(tasks)
    _same(store, again)
    # One task alone, or the tasks in reverse, give each checkpoint the same trajectories.
    alone = run_rollout_task(tasks[1])
    _same(alone, [store[2], store[3]])
    reversed_map: TaskMap = lambda fn, items: sequential_map(fn, items[::-1])[::-1]  # noqa: E731
    _same(rollout_tasks(tasks, reversed_map)[0], store)
    # Sampled actions (torch's RNG) differ between checkpoints' seeds: the seeds are per task.
    other = checkpoint_tasks(checkpoints, ROUNDS, venv_factory(ENV), STOCHASTIC.replace(seed=8))
    assert not np.array_equal(run_rollout_task(other[0])[0].acts, store[0].acts)
    with pytest.raises(InvalidDataError, match="tasks"):
        rollout_tasks([])


def test_a_process_pool_gives_the_sequential_trajectories(checkpoints):
    from rlkit.scale.tasks import ProcessPoolMap

    tasks = checkpoint_tasks(checkpoints, ROUNDS, venv_factory(ENV), STOCHASTIC)
    sequential, index = rollout_tasks(tasks)
    pooled, pooled_index = rollout_tasks(tasks, ProcessPoolMap(2))
    _same(sequential, pooled)
    assert pooled_index.tolist() == index.tolist()


def test_heldout_tasks_keep_their_sources_in_order(checkpoints):
    make_venv = venv_factory(ENV)
    ail = [(r, partial(load_generator, str(checkpoints.root), r)) for r in ROUNDS[:2]]
    demonstrator = [(0, partial(load_generator, str(checkpoints.root), ROUNDS[2]))]
    tasks, sources = heldout_tasks(make_venv, ail, demonstrator, episodes_per_policy=1,
                                   random_episodes=2, seed=3)
    assert sources == [SOURCE_RANDOM, SOURCE_AIL, SOURCE_AIL, SOURCE_DEMONSTRATOR]
    assert [t.seed for t in tasks] == [3, 4, 4, 5]
    store, per_trajectory = heldout_rollouts(tasks, sources)
    assert per_trajectory.tolist() == [SOURCE_RANDOM] * 2 + [SOURCE_AIL] * 2 + [SOURCE_DEMONSTRATOR]
    assert len(store) == 5


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.mark.slow
def test_ray_tasks_give_the_sequential_trajectories_in_checkpoint_order(checkpoints, local_ray):
    from rlkit.scale.tasks import RayTaskMap, task_map
    from rlkit.scale.units import Backend

    tasks = checkpoint_tasks(checkpoints, ROUNDS, venv_factory(ENV), STOCHASTIC)
    sequential, index = rollout_tasks(tasks)
    mapping = task_map(Backend(name="ray"))
    assert isinstance(mapping, RayTaskMap)
    with mapping:
        on_ray, ray_index = rollout_tasks(tasks, mapping)
    assert local_ray.is_initialized()  # it used the connection it found and left it open
    assert ray_index.tolist() == index.tolist() == [0, 0, 2, 2, 5, 5]
    _same(sequential, on_ray)


def _unit_rollouts(unit, report):  # a Tune trial that fans its rollouts out as Ray tasks
    from rlkit.ail import CheckpointStore
    from rlkit.scale.tasks import RayTaskMap
    from rlkit.scale.units import Backend

    store = CheckpointStore(unit.payload["root"])
    tasks = checkpoint_tasks(store, ROUNDS, venv_factory(ENV), STOCHASTIC)
    trajectories, _ = rollout_tasks(tasks, RayTaskMap(Backend(name="ray")))
    return {"first_actions": trajectories[0].acts[:3].ravel().tolist(), "n": len(trajectories)}


@pytest.mark.slow
def test_units_on_a_full_ray_cluster_run_their_tasks_in_their_own_reservation(
        checkpoints, local_ray, tmp_path):
    """Two 1-CPU trials fill the 2-CPU Ray; tasks asking for CPUs of their own would wait for
    ever (seen before the fix), so a trial runs its tasks in its own reservation."""
    from rlkit.scale.unit_graph import Unit
    from rlkit.scale.units import Backend, run_units

    expected = run_rollout_task(checkpoint_tasks(checkpoints, ROUNDS, venv_factory(ENV), STOCHASTIC)[0])
    units = [Unit(f"u{k}", {"root": str(checkpoints.root)}) for k in range(2)]
    results = run_units(units, _unit_rollouts, tmp_path, Backend(name="ray"))
    for result in results.values():
        assert result.status == "done", result.error
        assert result.result["n"] == 6
        assert np.allclose(result.result["first_actions"], expected[0].acts[:3].ravel())


def test_the_experiments_ray_units_carry_their_task_backend(tmp_path):
    from experiments.apec import ApecExperimentConfig, units
    from rlkit.scale.units import Backend

    config = ApecExperimentConfig(seeds=[0])
    assert all("tasks" not in u.payload for u in units(config, tmp_path))
    on_ray = units(config, tmp_path, Backend(name="ray", address="auto", resources={"cpu": 2, "gpu": 0}))
    assert on_ray[-1].payload["tasks"] == {"name": "ray", "address": "auto", "num_cpus": None,
                                           "resources": {"cpu": 2, "gpu": 0}}
    Backend(**on_ray[-1].payload["tasks"])  # what run_unit rebuilds
