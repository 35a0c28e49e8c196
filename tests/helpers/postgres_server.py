"""A throwaway PostgreSQL server for the session store tests: initdb into a temporary folder,
start on a free loopback port with trust authentication, stop and remove at the end.

When no PostgreSQL binaries (``initdb``, ``pg_ctl``) or no psycopg can be found, the reason is
returned instead, for the tests to skip with. As root the server runs as the ``postgres``
user (PostgreSQL refuses to run as root).
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
from contextlib import contextmanager


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """A started server: its ``dsn``, and :meth:`stop` / :meth:`start` to restart it on the
    same port (for tests of a database that goes away mid-session)."""

    def __init__(self, prefix: list[str], pg_ctl: str, data: str, root: str, port: int) -> None:
        self.dsn = f"postgresql://zpi@127.0.0.1:{port}/postgres"
        self._prefix, self._pg_ctl, self._data, self._root, self._port = \
            prefix, pg_ctl, data, root, port

    def start(self) -> None:
        subprocess.run([*self._prefix, self._pg_ctl, "-D", self._data, "-l",
                        os.path.join(self._root, "log"), "-w", "-o",
                        f"-p {self._port} -k {self._root} -c listen_addresses=127.0.0.1 "
                        "-c fsync=off -c max_connections=100", "start"],
                       check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=120)

    def stop(self, mode: str = "immediate") -> None:
        subprocess.run([*self._prefix, self._pg_ctl, "-D", self._data, "-m", mode, "-w",
                        "stop"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=60)


@contextmanager
def postgres_server() -> Iterator[str]:
    """Yields a DSN, or raises RuntimeError saying why no server can be had."""
    with postgres_control() as server:
        yield server.dsn


@contextmanager
def postgres_control() -> Iterator[PostgresServer]:
    """Yields a started :class:`PostgresServer`, or raises RuntimeError saying why none can
    be had."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise RuntimeError("psycopg is not installed (pip install 'zpi-host[postgres]')") \
            from None
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    if initdb is None or pg_ctl is None:
        raise RuntimeError("no PostgreSQL server binaries (initdb, pg_ctl); install the "
                           "Debian package postgresql")
    prefix: list[str] = []
    user = None
    if os.geteuid() == 0:
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            raise RuntimeError("running as root and there is no 'postgres' user to run the "
                               "server as") from None
        prefix = ["runuser", "-u", "postgres", "--"]
    root = tempfile.mkdtemp(prefix="zpi-pg-")
    if user is not None:
        os.chown(root, user.pw_uid, user.pw_gid)
    data, port = os.path.join(root, "data"), _free_port()
    server = PostgresServer(prefix, pg_ctl, data, root, port)
    try:
        subprocess.run([*prefix, initdb, "-D", data, "-U", "zpi", "--auth=trust",
                        "-E", "UTF8", "--no-sync"], check=True, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=120)
        server.start()
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"could not start PostgreSQL: {exc.stdout.decode()[-500:]}") \
            from None
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
