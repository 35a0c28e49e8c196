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


@contextmanager
def postgres_server() -> Iterator[str]:
    """Yields a DSN, or raises RuntimeError saying why no server can be had."""
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
    run = {"check": True, "stdout": subprocess.PIPE, "stderr": subprocess.STDOUT,
           "timeout": 120}
    try:
        subprocess.run([*prefix, initdb, "-D", data, "-U", "zpi", "--auth=trust",
                        "-E", "UTF8", "--no-sync"], **run)  # type: ignore[call-overload]
        subprocess.run([*prefix, pg_ctl, "-D", data, "-l", os.path.join(root, "log"), "-w",
                        "-o", f"-p {port} -k {root} -c listen_addresses=127.0.0.1 "
                        "-c fsync=off -c max_connections=60", "start"],
                       **run)  # type: ignore[call-overload]
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"could not start PostgreSQL: {exc.stdout.decode()[-500:]}") \
            from None
    try:
        yield f"postgresql://zpi@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*prefix, pg_ctl, "-D", data, "-m", "immediate", "-w", "stop"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
        shutil.rmtree(root, ignore_errors=True)
