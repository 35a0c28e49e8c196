"""What a job of an existing queue runs to drive one session from PostgreSQL: take the
session (or create it), run the prompt, give the session back. A job whose session another
worker owns raises SessionOwnedError: let the queue retry it later (after the lease, if that
worker died). Run: python examples/native_storage/job_handler.py DSN SESSION_ID PROMPT"""

import asyncio
import os
import sys
from pathlib import Path

from zpi_host import create_session
from zpi_host.stores import PostgresTranscriptStore

MODEL = os.environ.get("ZPI_MODEL", f"scripted:{Path(__file__).with_name('script.jsonl')}")


async def run_job(dsn: str, session_id: str, prompt: str) -> str:
    store = PostgresTranscriptStore(dsn, lease_seconds=30)
    try:
        state = store.current_state(session_id)
        session = await create_session(
            model=MODEL, cwd=".", session_id=session_id if state is None else None,
            storage={"transcript": store, "current_state": state})
        try:
            return (await session.run(prompt)).result
        finally:
            await session.dispose()
    finally:
        store.close()


if __name__ == "__main__":
    print(asyncio.run(run_job(*sys.argv[1:4])))
