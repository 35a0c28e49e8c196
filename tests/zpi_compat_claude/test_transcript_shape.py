"""The transcript a Claude hook reads (``transcript_path``) has Claude Code's shape and byte
form: compact JSON lines, so the loop plugins' ``grep '"role":"assistant"'`` finds the last
answer (ralph-loop's Stop hook reads it so), and user/assistant records with ``message.role``
and ``message.content``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.claude_hooks import make_hooks

from zpi_host.contract.plugins import PluginConfig, PluginHost
from zpi_host.session.assembly import create_session
from zpi_host.testing import ScriptedModel
from zpi_host.transcript.reader import parse_transcript

pytestmark = pytest.mark.anyio

#: ralph-loop's Stop hook logic (plugins/ralph-wiggum/hooks/stop-hook.sh, reduced to what
#: reads the transcript): the last assistant line's text blocks; the loop ends on the
#: completion promise, and ends (with a warning) when no assistant line is found.
RALPH_LIKE = r"""#!/bin/bash
set -euo pipefail
HOOK_INPUT=$(cat)
TRANSCRIPT_PATH=$(echo "$HOOK_INPUT" | jq -r '.transcript_path')
LAST_LINE=$(grep '"role":"assistant"' "$TRANSCRIPT_PATH" | tail -1 || true)
if [[ -z "$LAST_LINE" ]]; then
  echo "no assistant message found" >> "$LOG"
  exit 0
fi
LAST_OUTPUT=$(echo "$LAST_LINE" | jq -r '
  .message.content |
  map(select(.type == "text")) |
  map(.text) |
  join("\n")
')
echo "saw: $LAST_OUTPUT" >> "$LOG"
if echo "$LAST_OUTPUT" | grep -q '<promise>DONE</promise>'; then
  exit 0
fi
jq -n '{"decision": "block", "reason": "keep iterating"}'
"""


@pytest.mark.skipif(shutil.which("jq") is None, reason="the hook script needs jq")
async def test_a_ralph_like_stop_hook_finds_the_last_answer(zpi_env, zpi_plugins, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    script = tmp_path / "stop-hook.sh"
    script.write_text(RALPH_LIKE)
    script.chmod(0o755)
    log = tmp_path / "ralph.log"
    config = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": str(script)}]}]}}
    hooks, problems = make_hooks(config, tmp_path, name="ralph", env={"LOG": str(log)})
    assert problems == []
    zpi_plugins.register(hooks, "claude:ralph")
    model = ScriptedModel(["first try", "second try <promise>DONE</promise>", "never"])
    session = await create_session(model="t:m", provider=model, cwd=work,
                                   host=PluginHost(PluginConfig(autoload=False)).load())
    try:
        result = await session.run("loop")
    finally:
        await session.dispose()
    assert log.read_text().splitlines() == ["saw: first try",
                                            "saw: second try <promise>DONE</promise>"]
    assert len(model.requests) == 2 and "DONE" in result.result


async def test_the_hook_transcript_is_compact_and_claude_shaped(tmp_path):
    from zpi_compat_claude.hooks.transcript import transcript_for
    from zpi_host.providers.messages import AssistantMessage, TextContent, UserMessage

    messages = [UserMessage((TextContent("hi"),)),
                AssistantMessage((TextContent("héllo, \"you\": there"),), "end_turn")]
    path = transcript_for("shape-1", messages, tmp_path, agent_dir=tmp_path / "agent")
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2
    for line in lines:
        record = json.loads(line)
        assert line == json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    user, assistant = (json.loads(line) for line in lines)
    assert user["type"] == "user" and user["message"]["role"] == "user"
    assert user["message"]["content"] == [{"type": "text", "text": "hi"}]
    assert assistant["type"] == "assistant" and '"role":"assistant"' in lines[1]
    assert assistant["message"]["content"] == [{"type": "text",
                                                "text": "héllo, \"you\": there"}]
    assert assistant["parentUuid"] == user["uuid"]


async def test_a_transcript_written_with_spaced_separators_still_reads(zpi_env, tmp_path):
    """Transcripts written before the host wrote compact lines (or edited by hand) read the
    same."""
    work = tmp_path / "work"
    work.mkdir()
    session = await create_session(model="t:m", provider=ScriptedModel(["answer"]), cwd=work,
                                   host=PluginHost(PluginConfig(autoload=False)).load())
    try:
        await session.run("question")
        path = Path(session.store.path)
    finally:
        await session.dispose()
    data = path.read_bytes()
    spaced = b"".join(json.dumps(json.loads(line)).encode() + b"\n"
                      for line in data.splitlines())
    assert spaced != data and b'", "' in spaced
    compact, loose = parse_transcript(data, path), parse_transcript(spaced, path)
    assert loose.records == compact.records and not loose.warnings
