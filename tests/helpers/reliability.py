"""How hard the reliability suite pushes: CI runs a bounded version (a few minutes in all);
``ZPI_RELIABILITY=long`` (``tox -e reliability``) runs the long one whose figures go in
docs/reliability.md. And the kill harness of the crash suites: a run SIGKILLed after some of
its stream-json lines, and which of the facts those lines acknowledged a transcript lacks."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

from helpers.host_process import WAIT, read_branch, start_run

LONG = os.environ.get("ZPI_RELIABILITY", "").lower() == "long"


def scaled(short: int, long: int) -> int:
    """``short`` in the bounded run, ``long`` in the long one (kills, race trials, examples)."""
    return long if LONG else short


def kill_at(args: list[str], *, cwd: Path, agent_dir: Path, after_lines: int,
            delay: float) -> tuple[list[dict[str, Any]], bool]:
    """Run, SIGKILL it ``delay`` seconds after its ``after_lines``-th stdout line, and return
    every line it printed (all were written before the kill: a consumer may have seen them)
    and whether the kill landed before the run ended."""
    process = start_run(args, cwd=cwd, agent_dir=agent_dir)
    watchdog = threading.Timer(WAIT, process.kill)
    watchdog.start()
    seen: list[dict[str, Any]] = []
    killed = False
    try:
        assert process.stdout is not None
        for raw in process.stdout:
            if not raw.endswith(b"\n"):
                break  # cut off by the kill mid-line: a consumer never saw it whole
            seen.append(json.loads(raw))
            if len(seen) == after_lines:
                time.sleep(delay)
                killed = process.poll() is None
                process.send_signal(signal.SIGKILL)
        process.wait(WAIT)
    finally:
        watchdog.cancel()
        process.stdout.close()  # type: ignore[union-attr]
        process.stderr.close()  # type: ignore[union-attr]
    return seen, killed


def acknowledged_missing(seen: list[dict[str, Any]], path: Path) -> tuple[int, list[str]]:
    """The ``tool_end`` and ``message_end`` lines whose fact is not in the transcript."""
    return facts_missing(seen, read_branch(path))


def facts_missing(seen: list[dict[str, Any]], branch: list[Any]) -> tuple[int, list[str]]:
    """The ``tool_end`` and ``message_end`` lines whose fact is not in ``branch`` (a
    transcript's active branch, from a file or a store)."""
    results = {r.call_id: r.message for r in branch if r.TYPE == "tool_result"}
    answers = [r.message for r in branch if r.TYPE == "assistant"]
    checked, missing = 0, []
    for event in seen:
        if event["type"] == "tool_end":
            checked += 1
            result = event["result"]
            recorded = results.get(result["call_id"])
            if recorded is None or recorded.is_error != result["is_error"] or \
                    [c.text for c in recorded.content] != [c["text"] for c in result["content"]]:
                missing.append(f"tool_end {result['call_id']}")
        elif event["type"] == "message_end":
            checked += 1
            message = event["message"]
            ids = [c["id"] for c in message["content"] if c["type"] == "tool_call"]
            text = "".join(c["text"] for c in message["content"] if c["type"] == "text")
            if not any(a.text == text and [c.id for c in a.tool_calls] == ids for a in answers):
                missing.append(f"message_end {text!r}")
    return checked, missing
