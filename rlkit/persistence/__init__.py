"""One home for what rlkit writes to disk.

- ``atomic``: atomic file writes and atomic folder writes (``atomic_dir``: stage beside, replace whole)
- ``formats``: the table of every artefact kind (``FORMATS``: tag, version, checks) and the one way
  to write and read their headers (tag + version + SHA-256 of the payload files)
- ``reading``: the one way an artefact is opened to be read: a regular file (never a pipe or a
  device) within the size limit of its kind (``MAX_BYTES``); JSON and JSON-lines files read so
- ``arrays``: ``.npz`` files without pickle; ``rng``: RNG state as data; ``replay``: SB3 replay buffers
- ``agents``: SB3 agents without unpickling (imported from its module: it loads SB3)
- ``resume_config``: whether a run may go on under its current config (``MAY_CHANGE`` per command)
- ``run_state``: every resumable command's resume points, committed (header last, naming each
  payload file's SHA-256, the command and its config) and read back (format, config diff,
  checksums) in one way
- ``sb3_state``: the parts of an SB3 agent's run a point holds: networks and optimisers, RNGs, the
  episode in progress (imported from its module: it loads SB3)
"""

from rlkit.persistence.atomic import (
    atomic_dir,
    atomic_open,
    atomic_write_bytes,
    atomic_write_json,
    replace_dir,
)
from rlkit.persistence.formats import (
    FORMATS,
    Format,
    check_tag,
    read_format_json,
    read_header,
    tag,
    write_header,
)
from rlkit.persistence.reading import read_json, read_json_lines

__all__ = [
    "FORMATS", "Format", "atomic_dir", "atomic_open", "atomic_write_bytes", "atomic_write_json",
    "check_tag", "read_format_json", "read_header", "read_json",
    "read_json_lines", "replace_dir", "tag", "write_header",
]
