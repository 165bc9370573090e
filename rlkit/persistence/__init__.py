"""One home for what rlkit writes to disk: atomic file and folder writes (``atomic``), format-tagged
headers (``formats``), SB3 agents without unpickling (``agents``)."""

from rlkit.persistence.atomic import atomic_open, atomic_write_bytes, atomic_write_json, replace_dir
from rlkit.persistence.formats import read_format_json

__all__ = ["atomic_open", "atomic_write_bytes", "atomic_write_json", "read_format_json", "replace_dir"]
