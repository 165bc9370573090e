"""A throwaway PostgreSQL cluster for tests: Debian's server binaries, a temp dir, a free port.

    with PostgresCluster() as cluster:   # or the session fixture ``postgres_cluster``
        url = cluster.create_database("t1")   # postgresql://postgres@127.0.0.1:PORT/t1
        ...
        cluster.drop_database("t1")

A test run killed with SIGKILL cannot stop its cluster; the next cluster started on the machine
stops and deletes every cluster whose test process is gone (``reap_orphans``).

``initdb`` refuses to run as root, so as root every server command runs as the ``postgres`` user
(``runuser``). Durability is switched off (fsync, synchronous commit): the cluster is deleted at
the end, and the tests check behaviour, not crash safety. ``server_binaries()`` is None where no
server is installed (``make service-deps`` installs Debian's ``postgresql``), so tests can skip.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

import psycopg
import pytest
from psycopg import sql

SERVER_USER = "postgres"
PREFIX = "rlkit-pg-"
OWNER_FILE = "owner.pid"  # the pid of the test process a cluster belongs to


def server_binaries() -> Path | None:
    """The newest ``/usr/lib/postgresql/<version>/bin`` holding ``initdb`` and ``pg_ctl``, if any."""
    found = [Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/initdb")
             if (Path(p).parent / "pg_ctl").is_file()]
    return max(found, key=lambda b: int(b.parent.name), default=None)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class PostgresCluster:
    """A cluster that lives from ``__enter__`` to ``__exit__``; databases made by ``create_database``."""

    def __init__(self, binaries: Path | None = None) -> None:
        found = binaries or server_binaries()
        if found is None:
            raise FileNotFoundError("no PostgreSQL server in /usr/lib/postgresql/*/bin (make service-deps)")
        self.binaries = found
        self.port = free_port()
        self.directory = Path(tempfile.mkdtemp(prefix=PREFIX))
        (self.directory / OWNER_FILE).write_text(str(os.getpid()))
        self._as_server_user: list[str] = []
        if os.geteuid() == 0:  # initdb refuses root: hand the directory to the server user
            account = pwd.getpwnam(SERVER_USER)
            os.chown(self.directory, account.pw_uid, account.pw_gid)
            self._as_server_user = ["runuser", "-u", SERVER_USER, "--"]

    def url(self, database: str) -> str:
        """A bare ``postgresql://`` URL, as a user would write it (the store picks psycopg 3)."""
        return f"postgresql://{SERVER_USER}@127.0.0.1:{self.port}/{database}"

    def __enter__(self) -> PostgresCluster:
        reap_orphans(self.binaries)
        data = self.directory / "data"
        self._run("initdb", "--pgdata", str(data), "--username", SERVER_USER, "--auth", "trust",
                  "--encoding", "UTF8", "--no-sync")
        options = (f"-c listen_addresses=127.0.0.1 -c port={self.port} -k {self.directory} "
                   "-c fsync=off -c synchronous_commit=off -c full_page_writes=off")
        try:
            self._run("pg_ctl", "start", "--pgdata", str(data), "--wait", "--options", options,
                      "--log", str(self.directory / "server.log"))
        except subprocess.CalledProcessError as error:
            log = (self.directory / "server.log").read_text(errors="replace")
            shutil.rmtree(self.directory, ignore_errors=True)
            raise RuntimeError(f"PostgreSQL did not start on port {self.port}:\n{log}") from error
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        _stop_and_delete(self.directory, self.binaries, self._as_server_user)

    def create_database(self, name: str) -> str:
        """A new empty database; returns its SQLAlchemy URL."""
        self._admin(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.url(name)

    def drop_database(self, name: str) -> None:
        """Drop it even while connections (e.g. a store's pool) are still open."""
        self._admin(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))

    def _admin(self, statement: sql.Composed) -> None:
        # CREATE/DROP DATABASE cannot run inside a transaction: autocommit.
        dsn = f"host=127.0.0.1 port={self.port} user={SERVER_USER} dbname=postgres"
        with psycopg.connect(dsn, autocommit=True) as connection:
            connection.execute(statement)

    def _run(self, program: str, *args: str) -> None:
        subprocess.run([*self._as_server_user, str(self.binaries / program), *args], check=True,
                       capture_output=True, cwd=self.directory)


def reap_orphans(binaries: Path) -> list[Path]:
    """Stop and delete the clusters of test processes that no longer run; returns their folders."""
    reaped = []
    for directory in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        try:
            owner = int((directory / OWNER_FILE).read_text())
        except (OSError, ValueError):
            continue  # not ours to judge (being created, or made by something else)
        if _alive(owner):
            continue
        as_server_user = ["runuser", "-u", SERVER_USER, "--"] if os.geteuid() == 0 else []
        _stop_and_delete(directory, binaries, as_server_user)
        reaped.append(directory)
    return reaped


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _stop_and_delete(directory: Path, binaries: Path, as_server_user: list[str]) -> None:
    """Stop the cluster's server if it still runs, then delete the folder.

    A server killed with its machine's session leaves ``postmaster.pid`` behind; ``pg_ctl stop``
    then fails ("No such process"), or, on a machine restored from a snapshot, finds the pid taken
    by another program. So the server is stopped only when the pid in that file is a live
    ``postgres`` process.
    """
    try:
        if _server_runs(directory / "data"):
            subprocess.run([*as_server_user, str(binaries / "pg_ctl"), "stop", "--pgdata",
                            str(directory / "data"), "--mode", "immediate", "--wait"],
                           check=True, capture_output=True, cwd=directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _server_runs(data: Path) -> bool:
    try:
        pid = int((data / "postmaster.pid").read_text().splitlines()[0])
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError, IndexError):  # no pid file, a torn one, or no such process
        return False
    return b"postgres" in command


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """One cluster for the whole test session (a few seconds to start); skips where none is installed.

    Import it into a test module and ask for it with ``request.getfixturevalue("postgres_cluster")``.
    """
    if server_binaries() is None:
        pytest.skip("no PostgreSQL server under /usr/lib/postgresql/*/bin: run `make service-deps` as root")
    with PostgresCluster() as cluster:
        yield cluster
