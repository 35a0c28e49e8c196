"""Native storage on PostgreSQL: the same session code, many workers over one database.
Run: python examples/native_storage/postgres_example.py postgresql://user@host/db
(needs ``pip install 'zpi-host[postgres]'``; ZPI_MODEL chooses the model)."""

import asyncio
import os
import sys
from pathlib import Path

from zpi_host import create_session
from zpi_host.stores import PostgresTranscriptStore, SessionOwnedError

MODEL = os.environ.get("ZPI_MODEL", f"scripted:{Path(__file__).with_name('script.jsonl')}")


async def main(dsn: str) -> None:
    store = PostgresTranscriptStore(dsn, lease_seconds=30)
    worker = PostgresTranscriptStore(dsn, lease_seconds=30)  # stands for another machine
    session = await create_session(model=MODEL, cwd=".",
                                   storage={"transcript": store, "current_state": None,
                                            "owner": "worker-a"})
    print((await session.run("Remember: the build is broken.")).result)
    state = store.current_state(session.session_id)
    try:  # one owner per session: another worker is refused while the lease is held
        await create_session(model=MODEL, cwd=".",
                             storage={"transcript": worker, "current_state": state,
                                      "owner": "worker-b"})
    except SessionOwnedError as exc:
        print("refused:", exc.owner, "owns it")
    await session.dispose()  # releases the lease: worker-b may take the session now

    state = worker.current_state(state.session_id)
    session = await create_session(model=MODEL, cwd=".",
                                   storage={"transcript": worker, "current_state": state,
                                            "owner": "worker-b", "reconnect_seconds": 30})
    print((await session.run("What did I tell you?")).result)
    await session.dispose()
    store.close()
    worker.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
