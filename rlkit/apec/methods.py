"""The arms of ``rlkit apec``: each a way to label pairs for a reward model (``apec``,
``gap_only``, ...), the OT arms also at their own margin (``ot_only@0.05``)."""

from __future__ import annotations

from typing import Annotated

import numpy as np
from pydantic import AfterValidator

from rlkit.errors import InvalidDataError

BASE_METHODS = ("apec", "apec_ordinal", "gap_only", "ot_only", "drex", "raw_ail")
OT_METHODS = ("apec", "apec_ordinal", "ot_only")
"""The arms whose pairs pass the OT filter; ``<arm>@<margin>`` runs one at its own margin."""


def split_method(method: str) -> tuple[str, float | None]:
    """An arm's name as its base method and OT margin: ``ot_only@0.05`` is the OT-only ablation
    with ``pairs.ot_threshold`` 0.05 (the reference's units); a bare name keeps the pairs' margin.

    Args:
        method: ``apec``, ``apec_ordinal``, ``gap_only``, ``ot_only``, ``drex`` or ``raw_ail``;
            the OT arms (``OT_METHODS``) also as ``<arm>@<margin>``, the margin a number >= 0.

    Returns:
        The base method and the margin (None: the pairs' own).

    Raises:
        InvalidDataError: an unknown method, a margin on an arm without the OT filter, or a
            margin that is not a finite number >= 0.
    """
    base, at, text = method.partition("@")
    if base not in BASE_METHODS:
        raise InvalidDataError(f"method {method!r}: unknown; one of {', '.join(BASE_METHODS)}")
    if not at:
        return base, None
    if base not in OT_METHODS:
        raise InvalidDataError(f"method {method!r}: only {', '.join(OT_METHODS)} take an OT margin")
    try:
        margin = float(text)
    except ValueError:
        margin = float("nan")
    if not np.isfinite(margin) or margin < 0:
        raise InvalidDataError(f"method {method!r}: the OT margin after '@' must be a number >= 0")
    return base, margin


def _known_method(method: str) -> str:
    split_method(method)
    return method


Method = Annotated[str, AfterValidator(_known_method)]
METHODS: tuple[str, ...] = ("apec", "gap_only", "ot_only", "drex", "raw_ail")
"""The default arms. Options to measure: ``apec_ordinal`` (APEC's pairs, labels graded by the
index gap on the five-level scale, fitted with the ordinal cross-entropy) and the OT arms at other
margins (``ot_only@0.05``)."""
