"""Run directories: one per command invocation, holding config, metrics, models and plots.

A directory that holds a ``config.yaml`` (the first file every run writes) holds a run. Running a
command into it again is refused before anything is written, so an earlier run's files are never
overwritten nor its metrics appended to, unless it is the same run going on (``resumes``: pref-rl,
m3hf, apec and demos resume from their directories, and their own check decides whether this is
the same run), or ``overwrite`` is given: then the directory's contents are removed first.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path

import yaml
from pydantic import BaseModel

from rlkit.config import save_config
from rlkit.errors import ConfigError
from rlkit.logging.local import METRICS_FILE
from rlkit.persistence.resume_config import refuse_changed_config

CONFIG_FILE = "config.yaml"
Resumes = Callable[[Path], bool]


def stamped_dir(name: str, root: str | Path = "runs") -> Path:
    """A new ``<root>/<name>-<time>`` (``-2``, ``-3``... when one started in the same second)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = Path(root) / f"{name}-{stamp}"
    suffix = 1
    while path.exists():
        suffix += 1
        path = Path(root) / f"{name}-{stamp}-{suffix}"
    return path


def make_run_dir(command: str, run_dir: str | None, config: BaseModel, *, overwrite: bool = False,
                 resumes: Resumes | None = None) -> Path:
    """``runs/<command>-<time>`` unless given; writes the resolved ``config.yaml`` first.

    A given directory that holds a run already is refused (``ConfigError``) unless ``resumes(path)``
    says this run goes on from it (it may raise to refuse a run with other settings), or
    ``overwrite``, which empties it first.
    """
    if run_dir is None:
        path = stamped_dir(command)
    else:
        path = Path(run_dir)
        if path.exists() and not path.is_dir():
            raise ConfigError(f"--run-dir {path}: a file, not a directory")
        if (path / CONFIG_FILE).is_file():
            if overwrite:
                empty_run_dir(path)
            elif resumes is None or not resumes(path):
                raise ConfigError(_used_message(command, path, resumes is not None))
    try:
        path.mkdir(parents=True, exist_ok=True)
        save_config(config, path / CONFIG_FILE)
    except OSError as error:
        raise ConfigError(f"--run-dir {path}: {_why_not_writable(path, error)}") from None
    return path


def _why_not_writable(path: Path, error: OSError) -> str:
    """``error`` (from creating ``path`` or writing its config) in words naming the culprit: a
    file where a folder of the path should be, or what the system said."""
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                return f"{parent} is a file, not a directory"
            break
    return f"cannot create it or write its {CONFIG_FILE} ({error.strerror or error})"


class RunDirTrace:
    """What a command adds to its run directory, so that a run refused for its input leaves
    nothing behind: taken before the directory is made (``RunDirTrace(path, overwrite)``) and
    after the run's logger opened (``opened``). While the run has written nothing since
    (``unchanged``: no output, no metrics row, no resume point; a resumable run that made progress
    keeps it), ``remove`` takes away what the command added, never a directory or file that was
    there before (the contents ``--overwrite`` deletes on purpose excepted)."""

    def __init__(self, path: Path, overwrite: bool = False) -> None:
        self.path = path
        self.existed = path.is_dir()
        held_run = overwrite and (path / CONFIG_FILE).is_file()  # emptied by make_run_dir
        self.before = frozenset() if held_run or not self.existed else _entries(path)
        self.new_parents = [parent for parent in path.parents if not parent.exists()]
        self.after_open: dict[str, int] = {}

    def opened(self) -> None:
        """Note the entries the command's opening wrote (config, metrics, logger folders)."""
        self.after_open = {name: _size(self.path / name) for name in _entries(self.path)}

    def unchanged(self) -> bool:
        """Whether the run wrote nothing since ``opened`` (no new entry, no metrics row)."""
        now = {name: _size(self.path / name) for name in _entries(self.path)}
        return set(now) == set(self.after_open) and \
            now.get(METRICS_FILE) == self.after_open.get(METRICS_FILE)

    def remove(self) -> None:
        """Remove what the command added: its entries, then the directory and the parents it
        created, each only while empty (another run may have started beside it)."""
        for name in sorted(_entries(self.path) - self.before):
            child = self.path / name
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
        if not self.existed:
            for folder in (self.path, *self.new_parents):
                try:
                    folder.rmdir()
                except OSError:
                    break



def _entries(path: Path) -> frozenset[str]:
    return frozenset(child.name for child in path.iterdir()) if path.is_dir() else frozenset()


def _size(path: Path) -> int:
    """A file's size (a folder's: -1; a folder's contents are not compared)."""
    return -1 if path.is_dir() else path.stat().st_size


def empty_run_dir(path: Path) -> None:
    """Remove everything in the run directory ``path`` (only one holding a run's ``config.yaml``)."""
    if not (path / CONFIG_FILE).is_file():
        raise ConfigError(f"{path} holds no {CONFIG_FILE}: not a run directory, so it is not emptied")
    for child in path.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def same_config(config: BaseModel, command: str) -> Resumes:
    """A resume check for commands that go on from their outputs (apec, demos): the directory's
    ``config.yaml`` must be this config but for what ``MAY_CHANGE[command]`` allows; other
    settings are refused by name (``refuse_changed_config``).

    Args:
        config: the run's resolved config.
        command: the ``rlkit`` command it runs (whose ``MAY_CHANGE`` entry applies).

    Returns:
        The check, called with the run directory: True when the run may go on there.
    """

    def check(path: Path) -> bool:
        try:
            saved = yaml.safe_load((path / CONFIG_FILE).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
            raise ConfigError(f"{path / CONFIG_FILE}: unreadable ({error}); use a new --run-dir "
                              "or --overwrite") from None
        if not isinstance(saved, dict):
            raise ConfigError(f"{path / CONFIG_FILE}: a YAML {type(saved).__name__}, not a config; use "
                              "a new --run-dir or --overwrite")
        refuse_changed_config(command, saved, config.model_dump(mode="json"), where=path)
        return True

    return check


def _used_message(command: str, path: Path, resumable: bool) -> str:
    names = sorted(child.name for child in path.iterdir())
    shown = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
    why = (f" and no point of an `rlkit {command}` run to resume from" if resumable else "")
    return (f"--run-dir {path} holds an earlier run ({shown}){why}: running into it would overwrite "
            "its files and append to its metrics. Use a new --run-dir, or --overwrite to delete its "
            "contents first")
