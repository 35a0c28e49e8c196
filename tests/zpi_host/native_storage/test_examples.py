"""The runnable examples of docs/session-stores.md (examples/native_storage/) run as
written, against an SQLite file and a real PostgreSQL."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).parents[3] / "examples" / "native_storage"


def _run(tmp_path: Path, *args: str) -> str:
    out = subprocess.run([sys.executable, *args], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_the_sqlite_example_runs(tmp_path):
    out = _run(tmp_path, str(EXAMPLES / "sqlite_example.py"), str(tmp_path / "s.db"))
    assert "Noted: the build is broken." in out and "records, head" in out
    assert (tmp_path / "s.db").exists() and not list(tmp_path.rglob("*.jsonl"))


def test_the_postgres_example_runs(tmp_path, pg_server):
    out = _run(tmp_path, str(EXAMPLES / "postgres_example.py"), pg_server.dsn)
    assert "refused: worker-a owns it" in out
    assert out.count("build is broken") == 2


def test_the_job_handler_creates_then_resumes(tmp_path, pg_server):
    import uuid

    sid = str(uuid.uuid4())
    handler = str(EXAMPLES / "job_handler.py")
    assert "Noted" in _run(tmp_path, handler, pg_server.dsn, sid, "Remember: it is broken.")
    assert "Noted" in _run(tmp_path, handler, pg_server.dsn, sid, "What did I tell you?")
    from zpi_host.stores import PostgresTranscriptStore

    store = PostgresTranscriptStore(pg_server.dsn)
    assert store.current_state(sid).records > 4
    store.close()
