"""Per-annotator tokens for a shared ``rlkit serve``: with them, a session as "carl" needs carl's
token, so one token holder cannot label, or undo labels, as another.

The tokens live in a text file of ``annotator token`` lines (``#`` starts a comment), given as
``annotator_tokens=<file>``, or issued by ``rlkit serve`` for the ids in ``issue_tokens`` (into
``<run_dir>/annotator_tokens.txt`` unless a file is named; written atomically, readable by its
owner only; ids already there keep their tokens). Hand each person their own line. Without either
setting, annotators are self-asserted as before.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from pathlib import Path

from rlkit.errors import ConfigError
from rlkit.human.records import ANNOTATOR_PATTERN
from rlkit.human.settings import ServeConfig
from rlkit.persistence import atomic_open

TOKENS_FILE = "annotator_tokens.txt"
MIN_TOKEN_CHARS = 16


def tokens_path(config: ServeConfig) -> Path | None:
    """The token file ``config`` names, or the run's default one when tokens are to be issued."""
    if config.annotator_tokens is not None:
        return Path(config.annotator_tokens)
    if config.issue_tokens:
        if config.run_dir is None:
            raise ConfigError("issue_tokens needs run_dir=... or annotator_tokens=<file> to write them to")
        return Path(config.run_dir) / TOKENS_FILE
    return None


def annotator_tokens(config: ServeConfig) -> dict[str, str] | None:
    """annotator -> token for this server (issuing ``config.issue_tokens`` first), or None when
    annotators are self-asserted."""
    path = tokens_path(config)
    if path is None:
        return None
    tokens = read_tokens(path) if path.is_file() or not config.issue_tokens else {}
    new = {name: secrets.token_urlsafe(24) for name in config.issue_tokens if name not in tokens}
    for name in new:
        if not re.fullmatch(ANNOTATOR_PATTERN, name):
            raise ConfigError(f"issue_tokens: {name!r} is not an annotator id (letters, digits, _.@-)")
    if new:
        tokens |= new
        with atomic_open(path, "w") as handle:
            handle.write("# rlkit serve annotator tokens: give each person their own line only\n")
            handle.writelines(f"{name} {token}\n" for name, token in tokens.items())
        os.chmod(path, 0o600)
    if not tokens:
        raise ConfigError(f"annotator_tokens={path}: no annotators in it")
    return tokens


def read_tokens(path: Path) -> dict[str, str]:
    """The ``annotator token`` lines of ``path``, each checked (named by line on error)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"annotator_tokens={path}: not readable ({error})") from None
    tokens: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        where = f"annotator_tokens={path} line {number}"
        if len(fields) != 2:
            raise ConfigError(f"{where}: expected 'annotator token', got {len(fields)} fields")
        name, token = fields
        if not re.fullmatch(ANNOTATOR_PATTERN, name):
            raise ConfigError(f"{where}: {name[:64]!r} is not an annotator id (letters, digits, _.@-)")
        if len(token) < MIN_TOKEN_CHARS:
            raise ConfigError(f"{where}: {name}'s token is shorter than {MIN_TOKEN_CHARS} characters")
        if name in tokens:
            raise ConfigError(f"{where}: {name} has a token already")
        tokens[name] = token
    return tokens


def token_ok(tokens: dict[str, str], annotator: str, given: str | None) -> bool:
    """Whether ``given`` is ``annotator``'s token (constant time; an unknown id never matches)."""
    expected = tokens.get(annotator)
    if expected is None or given is None:
        hmac.compare_digest(b"x" * MIN_TOKEN_CHARS, (given or "").encode())
        return False
    return hmac.compare_digest(expected.encode(), given.encode())


def session_key(tokens: dict[str, str] | None, annotator: str) -> str | None:
    """What an annotator's session cookie is bound to: a digest of their token ("" without
    tokens; None for an id that has none), so a changed token ends the sessions made with the old."""
    if tokens is None:
        return ""
    token = tokens.get(annotator)
    return None if token is None else hashlib.sha256(token.encode()).hexdigest()[:32]
