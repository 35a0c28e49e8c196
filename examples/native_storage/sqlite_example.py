"""Native storage on SQLite: a session kept in a database file (no JSONL), ended, then
resumed from its current state. Run: python examples/native_storage/sqlite_example.py [DB]
(ZPI_MODEL chooses the model; by default the scripted one beside this file)."""

import asyncio
import os
import sys
from pathlib import Path

from zpi_host import create_session
from zpi_host.stores import SQLiteTranscriptStore

MODEL = os.environ.get("ZPI_MODEL", f"scripted:{Path(__file__).with_name('script.jsonl')}")


async def main(db: str) -> None:
    store = SQLiteTranscriptStore(db, lease_seconds=30)
    # a new session: current_state None
    session = await create_session(model=MODEL, cwd=".",
                                   storage={"transcript": store, "current_state": None})
    print((await session.run("Remember: the build is broken.")).result)
    session_id = session.session_id
    await session.dispose()  # the lease is released

    # later, in this process or another: read the state, then resume from it
    state = store.current_state(session_id)
    print(f"{state.records} records, head {state.head_uuid}, model {state.model}")
    session = await create_session(model=MODEL, cwd=".",
                                   storage={"transcript": store, "current_state": state})
    print((await session.run("What did I tell you?")).result)
    await session.dispose()
    store.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "sessions.db"))
