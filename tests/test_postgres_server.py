"""The throwaway PostgreSQL cluster of the tests cleans up after a test run killed with SIGKILL."""

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.postgres_server import reap_orphans, server_binaries

pytestmark = pytest.mark.server
ROOT = Path(__file__).resolve().parent.parent


def accepts(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_a_cluster_left_by_a_killed_test_run_is_stopped_and_deleted_by_the_next():
    binaries = server_binaries()
    if binaries is None:
        pytest.skip("no PostgreSQL server under /usr/lib/postgresql/*/bin: run `make service-deps` as root")
    killed_run = ("import time\nfrom tests.postgres_server import PostgresCluster\n"
                  "cluster = PostgresCluster().__enter__()\n"
                  "print(cluster.directory, cluster.port, flush=True)\ntime.sleep(600)\n")
    child = subprocess.Popen([sys.executable, "-c", killed_run], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        directory, port = child.stdout.readline().split()
    finally:
        child.kill()  # SIGKILL: no __exit__ runs
        child.wait()
    assert Path(directory).is_dir() and accepts(int(port))
    assert Path(directory) in reap_orphans(binaries)
    assert not Path(directory).exists() and not accepts(int(port))
