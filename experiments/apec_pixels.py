"""APEC from pixels: does its reward generalise better than D-REX's and the raw AIL reward's when
every network sees only frames? (Zhang et al., ICML 2025, DMControl from pixels.)

One command:  python experiments/apec_pixels.py [--config FILE] [key=value ...] [--report-only]

The same pipeline, units, held-out design and statistics as ``experiments/apec.py`` (whose code
this runs), on pixel tasks: observations are 3 uint8 frames stacked channel-first, stored once per
frame. Per task and seed: a SAC demonstrator acting from the frames (trained once per task and
shared by the seeds) and 10 suboptimal demonstrations (as the pixel reference) from its checkpoint
nearest a fraction of its best return; adversarial imitation with a convolutional discriminator
and a SAC generator acting from the frames, a checkpoint per round; rollouts of every checkpoint;
APEC's pairs (checkpoint gap + the OT filter on the raw frame stacks, the reference's choice) of
10-step windows, D-REX's pairs (a convolutional BC policy with noise) and the AIL discriminator's
own reward, each scored on a held-out set whose AIL trajectories come from a separate AIL run:
accuracy with the pairs it rests on, correlations, mean ± standard error and 95% t-intervals over
seeds; policies trained on the learned rewards report their true return.

``experiments/configs/apec_pixels.yaml``: the CPU tasks drawn with numpy (``rlkit/PixelPointMass-v0``,
``rlkit/PixelPendulum-v0``) at a budget a 2-core machine runs, its acting agents on a fixed keypoint
encoder (``rlkit.factories.keypoints``; the config's header says why); ``apec_pixels_dmc.yaml``:
the paper's DMControl tasks at a GPU machine's budget, every agent learning its conv encoder.
Every run directory is resumable: rerun to continue, ``--resume`` skips the units already finished.
"""

from __future__ import annotations

import sys
from pathlib import Path

from rlkit.scale.command import exit_status

CONFIG = Path(__file__).parent / "configs" / "apec_pixels.yaml"


def main(argv: list[str] | None = None) -> int:
    """Run the pixel experiment (``experiments.apec.main`` on the pixel config).

    Args:
        argv: the command line (default ``sys.argv[1:]``).

    Returns:
        The exit status.
    """
    from experiments.apec import main as run  # by name: a script puts the repo root on sys.path first

    return run(argv, doc=__doc__, default_config=CONFIG, name="apec_pixels")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `experiments` by name
    sys.exit(exit_status(main, Path(__file__).name))
