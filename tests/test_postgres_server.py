"""The throwaway PostgreSQL cluster of the tests cleans up after a test run killed with SIGKILL."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.postgres_server import reap_orphans, server_binaries

pytestmark = pytest.mark.server
ROOT = Path(__file__).resolve().parent.parent


def accepts(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def killed_test_run(binaries: Path | None) -> tuple[Path, int]:
    """The folder and port of a cluster whose test process was killed with SIGKILL (no __exit__ ran)."""
    if binaries is None:
        pytest.skip("no PostgreSQL server under /usr/lib/postgresql/*/bin: run `make service-deps` as root")
    killed_run = ("import time\nfrom tests.postgres_server import PostgresCluster\n"
                  "cluster = PostgresCluster().__enter__()\n"
                  "print(cluster.directory, cluster.port, flush=True)\ntime.sleep(600)\n")
    child = subprocess.Popen([sys.executable, "-c", killed_run], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        directory, port = child.stdout.readline().split()
    finally:
        child.kill()
        child.wait()
    return Path(directory), int(port)


def test_a_cluster_left_by_a_killed_test_run_is_stopped_and_deleted_by_the_next():
    binaries = server_binaries()
    directory, port = killed_test_run(binaries)
    assert directory.is_dir() and accepts(port)
    assert directory in reap_orphans(binaries)
    assert not directory.exists() and not accepts(port)


@pytest.mark.parametrize("pid_now", ["gone", "another program's"])
def test_a_cluster_whose_server_died_too_is_deleted_without_a_stop(pid_now):
    """A session cut off kills the server too: its stale postmaster.pid must not fail the next run,
    nor, where its pid now belongs to another program (a machine restored from a snapshot), hit it."""
    binaries = server_binaries()
    directory, port = killed_test_run(binaries)
    postmaster = directory / "data" / "postmaster.pid"
    lines = postmaster.read_text().splitlines(keepends=True)
    os.kill(int(lines[0]), signal.SIGKILL)
    deadline = time.monotonic() + 30
    while accepts(port) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert postmaster.exists() and not accepts(port)
    with subprocess.Popen(["sleep", "60"]) as other:
        if pid_now != "gone":
            postmaster.write_text("".join([f"{other.pid}\n", *lines[1:]]))
        assert directory in reap_orphans(binaries)
        assert not directory.exists() and other.poll() is None  # the other program still runs
        other.kill()
