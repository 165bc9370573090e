"""``rlkit pref-rl`` assembled: the loop with its teacher, people included, SB3's own metrics
and a progress bar in its logger.

``teacher.kind=human`` puts the queries in the run directory's label store and media folder,
which ``rlkit serve --run-dir <run dir>`` serves, and adds that store's dashboard to the logger.
"""

from __future__ import annotations

import logging
from pathlib import Path

from rlkit.data.sim_state import has_mujoco_state
from rlkit.errors import InvalidDataError
from rlkit.factories.configs import EnvConfig, PrefRLConfig, PrefRLTeacherSettings
from rlkit.feedback import OrdinalScale
from rlkit.human.dashboard import with_dashboard
from rlkit.human.render import MujocoRenderer, ObservationRenderer, StateRenderer, renders_from_observation
from rlkit.human.store import LabelStore
from rlkit.human.teacher import HumanTeacher
from rlkit.logging import Logger, Track, attach_to_sb3, progress_of
from rlkit.prefrl import PreferenceRL
from rlkit.prefrl import resume as prefrl_resume
from rlkit.types import Teacher

log = logging.getLogger(__name__)


def build_preference_rl(config: PrefRLConfig, logger: Logger | None = None,
                        run_dir: str | Path | None = None) -> PreferenceRL:
    """``rlkit pref-rl``'s loop: ``PreferenceRL.from_config(config)``, with people's teacher on
    ``run_dir``'s label store for ``teacher.kind=human``.

    With a ``logger``, SB3's own ``train/*``, ``rollout/*`` and ``time/*`` metrics join the run
    (``attach_to_sb3``), and its progress display (if it has one) follows the env steps.

    Args:
        config: the command's config.
        logger: where the run's metrics go; with people, their store's dashboard joins it.
        run_dir: where resume points (and people's label store and media) are kept.

    Returns:
        The loop, resumed where ``run_dir`` holds a resume point.
    """
    teacher: Teacher | None = None
    if config.teacher.kind == "human":
        resuming = run_dir is not None and prefrl_resume.exists(Path(run_dir) / prefrl_resume.RESUME_DIR)
        renderer = segment_renderer(config.env) if config.teacher.human.render_media else None
        human = make_human_teacher(config.teacher, run_dir, resuming=resuming, renderer=renderer)
        logger = with_dashboard(logger, human.store, Path(str(run_dir)) / "media")  # the curves too
        teacher = human
    loop = PreferenceRL.from_config(config, logger, teacher, run_dir)
    if logger is not None:
        attach_to_sb3(loop.agent, logger)
        progress = progress_of(logger)
        if progress is not None:  # a resumed run's bar starts at its resume point
            start = loop.resume_point.timestep if loop.resume_point is not None else 0
            progress.follow(Track("pref-rl env steps", config.agent.total_timesteps), completed=start)
    return loop


def segment_renderer(env: EnvConfig) -> StateRenderer | None:
    """What renders the segments people label as real video: a ``MujocoRenderer`` for a MuJoCo
    env (the loop then records its simulator states), an ``ObservationRenderer`` for an env drawn
    from its observations (classic control such as Pendulum, or a custom env with
    ``state_from_observation``), None for others (they are shown as plots).

    Args:
        env: the env section of the command's config.

    Returns:
        The renderer, or None when the env cannot be rendered from what the loop keeps.
    """
    import gymnasium

    probe = gymnasium.make(env.id, **env.kwargs)
    try:
        if has_mujoco_state(probe):
            return MujocoRenderer(env.id, **env.kwargs)
        if renders_from_observation(probe):
            return ObservationRenderer(env.id, **env.kwargs)
        return None
    finally:
        probe.close()


def make_human_teacher(settings: PrefRLTeacherSettings, run_dir: str | Path | None,
                       resuming: bool = False, renderer: StateRenderer | None = None
                       ) -> HumanTeacher:
    """People at ``rlkit serve --run-dir run_dir``: queries in its label store, videos in its
    media/ (rendered by ``renderer`` when given, else plots)."""
    if run_dir is None:
        raise InvalidDataError("teacher.kind=human needs a run directory: the one `rlkit serve --run-dir` "
                               "serves to annotators")
    store = LabelStore(run_dir)
    if store.n_queries() and not resuming:
        raise InvalidDataError(
            f"{run_dir}: its label store already holds {store.n_queries()} queries of an earlier run "
            "but no resume point with their trajectories, so their labels would be read as labels of "
            "other segments: use a new run directory"
        )
    store.set_scale(OrdinalScale.get(settings.scale))
    log.info("queries wait for labels at `rlkit serve --run-dir %s`", run_dir)
    return HumanTeacher(store, settings.human, media_dir=Path(run_dir) / "media", renderer=renderer)

