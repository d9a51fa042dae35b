"""Shared test configuration. Area-specific fixtures live in the area's conftest."""

from __future__ import annotations

import os
import sys

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("MPLBACKEND", "Agg")


# --------------------------------------------------------------------------- ZooKeeper
import pytest  # noqa: E402


@pytest.fixture(scope="session")
def zk_server():
    """A real ZooKeeper server (Debian's package) on a free 127.0.0.1 port, for the whole session.

    Tests using it carry ``@pytest.mark.zookeeper``; give each test its own chroot or
    path prefix (the server is shared). Stopped by PID at the end of the session.
    """
    from brokerlb.testing.zookeeper import ZooKeeperServer, zookeeper_available

    if not zookeeper_available():
        pytest.fail("ZooKeeper tests need java and /usr/share/java/zookeeper.jar: run scripts/setup.sh")
    server = ZooKeeperServer().start()
    try:
        yield server
    finally:
        server.stop()


# --------------------------------------------------------------------------- PostgreSQL
@pytest.fixture(scope="session")
def pg_server():
    """A real PostgreSQL server (Debian's package) on a free 127.0.0.1 port for the whole session,
    run as the unprivileged ``postgres`` user; each test takes a database of its own
    (``pg_server.new_database_url()``). Stopped by PID at the end of the session."""
    from brokerlb.testing.postgres import PostgresServer, postgres_available

    if not postgres_available():
        pytest.fail("PostgreSQL tests need Debian's postgresql package: run scripts/setup.sh")
    server = PostgresServer().start()
    try:
        yield server
    finally:
        server.close()
