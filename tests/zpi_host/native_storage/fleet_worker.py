"""A worker of the fault tests: runs one session of N scripted turns from a transcript store,
taking it over (waiting for a dead worker's lease to expire) and going on where it stopped.

Each turn ``turn K`` makes the model call ``mark(k=K)`` (call id ``call-K``), which appends K to
the marks file, then answer ``done K``. The worker prints ``ack <uuid>`` once a record is
committed and ``finished`` at the end. Usage:
``fleet_worker.py STORE SESSION_ID TURNS MARKS_FILE CWD`` (STORE: ``sqlite:PATH`` or
``postgresql://...#schema``).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import anyio

from zpi_host import create_session
from zpi_host.testing import FunctionModel
from zpi_host.tools import tool
from zpi_host.transcript.native import SessionOwnedError

LEASE_SECONDS = 1.0


def open_store(spec: str) -> Any:
    if spec.startswith("sqlite:"):
        from zpi_host.stores.sqlite_transcripts import SQLiteTranscriptStore

        return SQLiteTranscriptStore(spec[7:], lease_seconds=LEASE_SECONDS)
    from zpi_host.stores.postgres_transcripts import PostgresTranscriptStore

    dsn, _, schema = spec.partition("#")
    return PostgresTranscriptStore(dsn, schema=schema or "public", max_size=2,
                                   lease_seconds=LEASE_SECONDS)


def answer(request: Any) -> Any:
    last = request.messages[-1]
    if last.role == "user":
        k = int(last.content[0].text.split()[1])
        return {"tool_calls": [{"name": "mark", "arguments": {"k": k}, "id": f"call-{k}"}]}
    return f"done {last.call_id}"


async def main(spec: str, sid: str, turns: int, marks: str, cwd: str) -> None:
    @tool
    def mark(k: int) -> str:
        """Record that turn k's call ran (the side effect that must never happen twice)."""
        with open(marks, "a") as out:
            out.write(f"{k}\n")
            out.flush()
            os.fsync(out.fileno())
        time.sleep(0.005)
        return "marked"

    store = open_store(spec)
    while True:
        state = store.current_state(sid)
        try:
            session = await create_session(
                model="fn:m", provider=FunctionModel(answer), cwd=cwd, settings={},
                agent_dir=os.path.join(cwd, "agent"), custom_tools=[mark],
                permission_mode="bypass",
                session_id=sid if state is None else None,
                storage={"transcript": store, "current_state": state})
            break
        except SessionOwnedError:
            time.sleep(0.05)
    session.store.on_commit = lambda record, line: print(f"ack {record.uuid}", flush=True)
    done = sum(1 for m in session.store.history() if m.role == "user")
    for k in range(done, turns):
        await session.run(f"turn {k}")
    await session.dispose()
    store.close()
    print("finished", flush=True)


if __name__ == "__main__":
    spec, sid, turns, marks, cwd = sys.argv[1:6]
    anyio.run(main, spec, sid, int(turns), marks, cwd)
