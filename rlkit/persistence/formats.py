"""rlkit's format-tagged JSON headers: every artefact names its format (``"rlkit.<kind>/<version>"``)
and is refused by name when read as another."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from rlkit.errors import FileFormatError


def read_format_json(path: str | os.PathLike[str], expected_format: str) -> dict[str, Any]:
    """A JSON object rlkit wrote with ``"format": expected_format``; anything else is a
    FileFormatError naming the file."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise FileFormatError(f"{path}: not readable JSON ({error})") from None
    if not isinstance(data, dict) or data.get("format") != expected_format:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise FileFormatError(f"{path}: format {found!r}, expected {expected_format!r}")
    return data
