"""Native storage against local JSONL: append per record, and resuming a long session.

1. Append: N records (default 2,000) of ~300 bytes appended one by one through a session's
   owner: the JSONL ``SessionManager`` (one ``write`` each, one fsync at the end, its default
   policy) against ``StoreSessionManager`` on SQLite (a committed, synced transaction each)
   and, when a server can be started (tests/helpers/postgres_server.py), on PostgreSQL (a
   transaction each, lease checked and renewed in it; the test server runs with fsync off).
   Wall clock per record.
2. Resume: a session of R records (default 100,000) with a compaction 100 records before its
   end, opened for writing: the JSONL owner reads and validates the whole file; the store's
   owner reads the state and the records from where the context starts (lazy reads).

No targets: the rows report what a database costs against a local file.

    python benchmarks/native_storage.py [--records 2000] [--session 100000] [--rounds 5] [--quick]
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _measure import arguments, compare, emit, interleave

ROOT = Path(__file__).resolve().parents[1]
PAD = "x" * 250


def _message(n: int) -> Any:
    from zpi_host.providers.messages import AssistantMessage, TextContent

    return AssistantMessage((TextContent(f"{n} {PAD}"),))


def append_jsonl(root: Path, records: int) -> float:
    from zpi_host.transcript import SessionManager

    folder = Path(tempfile.mkdtemp(dir=root))
    started = time.perf_counter()
    with SessionManager.create(folder, path=folder / "s.jsonl") as m:
        for n in range(records):
            m.append_message(_message(n))
    return (time.perf_counter() - started) / records


def append_store(make: Callable[[], Any], root: Path, records: int) -> float:
    from zpi_host.transcript.native_session import StoreSessionManager

    store = make()
    try:
        started = time.perf_counter()
        with StoreSessionManager.create_in(store, root) as m:
            for n in range(records):
                m.append_message(_message(n))
        elapsed = time.perf_counter() - started
        assert store.current_state(m.session_id).records == records + 1
        return elapsed / records
    finally:
        store.close()


def long_session(root: Path, size: int) -> Path:
    from zpi_host.transcript import SessionManager

    path = root / "long.jsonl"
    with SessionManager.create(root, path=path) as m:
        for n in range(size - 102):
            m.append_message(_message(n))
        kept = m.append_message(_message(-1))
        m.append_compaction("summary", kept.uuid, 1000, 10)
        for n in range(99):
            m.append_message(_message(n))
    return path


def resume_jsonl(path: Path) -> float:
    from zpi_host.transcript import SessionManager

    started = time.perf_counter()
    m = SessionManager.open(path)
    elapsed = time.perf_counter() - started
    m.close()
    return elapsed


def resume_store(store: Any, session_id: str, expected: int) -> float:
    from zpi_host.transcript.native_session import StoreSessionManager

    started = time.perf_counter()
    m = StoreSessionManager.open_in(store, session_id)
    elapsed = time.perf_counter() - started
    assert len(m.messages()) == expected
    m.close()
    return elapsed


def measure(backends: dict[str, Callable[[], Any]], records: int, size: int,
            rounds: int) -> list[Any]:
    from zpi_host.stores.transcript_helpers import import_jsonl

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name, make in backends.items():
            samples = interleave({"jsonl": lambda: append_jsonl(root, records),
                                  name: lambda make=make: append_store(make, root, records)},
                                 rounds)
            rows.append(compare(f"native_storage: append one record, {name} vs JSONL",
                                samples[name], samples["jsonl"], unit="us", scale=1e6,
                                note=f"{records} records one by one; wall clock"))
        path = long_session(root, size)
        from zpi_host.transcript import SessionManager

        with SessionManager.open(path) as m:
            expected = len(m.messages())
        for name, make in backends.items():
            store = make()
            try:
                state = import_jsonl(path, store)
                samples = interleave({"jsonl": lambda: resume_jsonl(path),
                                      name: lambda s=store, sid=state.session_id: resume_store(
                                          s, sid, expected)}, rounds)
            finally:
                store.close()
            rows.append(compare(f"native_storage: resume a {size:,}-record session, {name} "
                                "vs JSONL", samples[name], samples["jsonl"], unit="ms",
                                note="compacted 100 records before the end; the store reads "
                                "from the context's start"))
    return rows


def main(records: int, size: int, rounds: int) -> int:
    from zpi_host.stores import SQLiteTranscriptStore

    counter = [0]
    tmp = Path(tempfile.mkdtemp())

    def sqlite() -> Any:
        counter[0] += 1
        return SQLiteTranscriptStore(tmp / f"s{counter[0]}.db")

    backends: dict[str, Callable[[], Any]] = {"SQLite": sqlite}
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from helpers.postgres_server import postgres_server

        from zpi_host.stores import PostgresTranscriptStore

        server = postgres_server()
        dsn = server.__enter__()
    except (RuntimeError, ImportError) as exc:
        print(f"PostgreSQL not measured: {exc}")
        server = None
    else:
        schemas = iter(range(10_000))
        backends["PostgreSQL"] = lambda: PostgresTranscriptStore(
            dsn, schema=f"b{next(schemas)}", max_size=2)
    try:
        rows = measure(backends, records, size, rounds)
    finally:
        if server is not None:
            server.__exit__(None, None, None)
    emit(rows, "native_storage")
    return 0


if __name__ == "__main__":
    args = arguments("native_storage", __doc__, rounds=5,
                     quick={"records": 50, "session": 1000, "rounds": 1},
                     options=[("--records", {"type": int, "default": 2000}),
                              ("--session", {"type": int, "default": 100_000})],
                     minimum={"records": 1, "session": 200})
    raise SystemExit(main(args.records, args.session, args.rounds))
