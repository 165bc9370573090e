"""The suboptimal demo: with a tolerance, its own return must lie near the target fraction of the
best checkpoint's, not just its checkpoint's mean score (an early-ending task's episodes vary)."""

from pathlib import Path

import numpy as np
import pytest

from rlkit.apec import demonstrator
from rlkit.apec.demonstrator import DemonstratorConfig, suboptimal_demos
from rlkit.data import Trajectory
from rlkit.errors import InvalidDataError

SCORES = {"step_000000010.zip": 3.0, "step_000000020.zip": 6.0, "step_000000030.zip": 10.0}
# per checkpoint, the return of each draw of a demo (seed 1000, 1001, ...): the 20-step checkpoint
# scores 6.0 on average, yet its first demo returns 9.7 (0.97 of the best)
DRAWS = {"step_000000010.zip": [3.0, 3.1, 2.9, 3.0], "step_000000020.zip": [9.7, 9.6, 6.2, 6.1],
         "step_000000030.zip": [10.0] * 4}


def episode(ret: float) -> Trajectory:
    return Trajectory(obs=np.zeros((3, 1)), acts=np.zeros((2, 1)), rews=np.array([ret, 0.0]), terminal=True)


@pytest.fixture
def fake_checkpoints(monkeypatch):
    """Checkpoints that are names: scored at their SCORES, their demo draws returning DRAWS."""
    monkeypatch.setattr(demonstrator, "load_demonstrator", lambda algo, path: path.name)

    def draw(venv, name, n_episodes, rng, seed=None):
        if seed < 1000:  # the scoring episodes
            return [episode(SCORES[name])] * n_episodes
        return [episode(DRAWS[name][seed - 1000])] * n_episodes

    monkeypatch.setattr(demonstrator, "demos_from_policy", draw)
    return [Path(name) for name in SCORES]


def pick(checkpoints, **settings):
    config = DemonstratorConfig(target_fraction=0.65, **settings)
    return suboptimal_demos(lambda seed: _Closable(), checkpoints, config, {"sac": object},
                            np.random.default_rng(0))


class _Closable:
    def close(self) -> None:
        pass


def test_without_a_tolerance_the_first_draw_of_the_nearest_checkpoint_is_the_demo(fake_checkpoints):
    demos, report = pick(fake_checkpoints)
    assert report.checkpoint == "step_000000020.zip" and report.demo_returns == [9.7]
    assert report.fraction == pytest.approx(0.97)


def test_with_a_tolerance_draws_go_on_until_a_demo_lies_near_the_target(fake_checkpoints):
    demos, report = pick(fake_checkpoints, fraction_tolerance=0.15)
    assert report.checkpoint == "step_000000020.zip" and report.demo_returns == [6.2]
    assert report.fraction == pytest.approx(0.62) and demos[0].ret == pytest.approx(6.2)


def test_a_tolerance_no_draw_meets_is_a_clear_error(fake_checkpoints):
    with pytest.raises(InvalidDataError, match=r"within 0\.65 \+/- 0\.01 .*fraction_tolerance") as error:
        pick(fake_checkpoints, fraction_tolerance=0.01, demo_tries=4)
    assert "fractions seen ranged 0.29-1.00" in str(error.value)
