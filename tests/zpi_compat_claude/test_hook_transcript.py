"""The Claude-shaped transcript hooks read: records, chaining, and keeping it up to date."""

from __future__ import annotations

import json

from zpi_compat_claude.hooks.transcript import (
    TranscriptMirror,
    claude_records,
    project_folder_name,
    transcript_for,
)
from zpi_host.providers.messages import (
    AssistantMessage,
    ContextMessage,
    TextContent,
    ThinkingContent,
    ToolCallContent,
    ToolResultMessage,
    UserMessage,
)

HISTORY = [
    UserMessage.text("fix it"),
    ContextMessage("from a hook", "claude:x"),
    AssistantMessage((ThinkingContent("hmm", "sig"), TextContent("reading"),
                      ToolCallContent("c1", "read", {"path": "a.py"})), "tool_use"),
    ToolResultMessage("c1", "read", (TextContent("1\tprint()"),)),
    AssistantMessage((ToolCallContent("c2", "bash", {"command": "ls", "timeout": 5}),)),
    ToolResultMessage("c2", "bash", (TextContent("boom"),), is_error=True),
]


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_records_have_claudes_shape():
    records = list(claude_records(HISTORY, session_id="s1", cwd="/w", version="1.0"))
    assert [r["type"] for r in records] == ["user", "user", "assistant", "user", "assistant",
                                            "user"]
    assert records[1]["isMeta"] is True
    thinking, text, tool_use = records[2]["message"]["content"]
    assert thinking == {"type": "thinking", "thinking": "hmm", "signature": "sig"}
    assert text == {"type": "text", "text": "reading"}
    assert tool_use == {"type": "tool_use", "id": "c1", "name": "Read",
                        "input": {"file_path": "/w/a.py"}}
    assert records[4]["message"]["content"][0]["input"] == {"command": "ls", "timeout": 5000}
    assert records[5]["message"]["content"] == [{"type": "tool_result", "tool_use_id": "c2",
                                                 "content": "boom", "is_error": True}]
    # toolUseResult: the response in tool_response's shape; "Error: ..." for a failure
    assert records[3]["toolUseResult"]["file"]["filePath"] == "/w/a.py"
    assert records[5]["toolUseResult"] == "Error: boom"
    assert "toolUseResult" not in records[0] and "toolUseResult" not in records[4]
    assert all(r["sessionId"] == "s1" and r["version"] == "1.0" for r in records)
    assert records[0]["parentUuid"] is None
    assert [r["parentUuid"] for r in records[1:]] == [r["uuid"] for r in records[:-1]]


def test_the_mirror_appends_and_rewrites_when_the_history_was_replaced(tmp_path):
    mirror = TranscriptMirror(tmp_path / "t.jsonl", "s1")
    history = HISTORY[:2]
    path = mirror.update(history, "/w")
    first = lines(path)
    assert len(first) == 2
    history = HISTORY[:4]
    mirror.update(history, "/w")
    grown = lines(path)
    assert grown[:2] == first and len(grown) == 4  # appended, earlier lines untouched
    assert grown[2]["parentUuid"] == grown[1]["uuid"]
    mirror.update(history, "/w")
    assert len(lines(path)) == 4  # nothing new: nothing written
    compacted = [UserMessage.text("summary"), *HISTORY[4:]]
    mirror.update(compacted, "/w")
    assert [r["message"]["content"][0].get("text") for r in lines(path)][:1] == ["summary"]
    assert len(lines(path)) == 3
    path.write_text("tampered\n")
    mirror.update(compacted, "/w")
    assert len(lines(path)) == 3  # changed by someone else: written again
    mirror.forget()
    assert path.exists()  # not in the private temporary folder: it stays


def test_one_file_per_session():
    a = transcript_for("session-a", HISTORY[:1], "/w")
    b = transcript_for("session-b", HISTORY[:1], "/w")
    assert a != b and a.parent == b.parent
    assert transcript_for("session-a", HISTORY[:3], "/w") == a
    assert len(lines(a)) == 3


def test_under_the_agent_dir_as_claude_code_lays_it_out(tmp_path):
    assert project_folder_name("/home/me/my_proj.v2") == "-home-me-my-proj-v2"
    path = transcript_for("session-c", HISTORY[:2], "/home/me/my_proj.v2", "1.0", tmp_path)
    assert path == tmp_path / "projects" / "-home-me-my-proj-v2" / "session-c.jsonl"
    assert len(lines(path)) == 2 and lines(path)[0]["sessionId"] == "session-c"


def test_a_redacted_thinking_block_keeps_claudes_shape():
    history = [UserMessage.text("hi"),
               AssistantMessage((ThinkingContent("", redacted="opaque=="), TextContent("hello")))]
    records = list(claude_records(history, session_id="s1", cwd="/w", version="1.0"))
    assert records[1]["message"]["content"] == [
        {"type": "redacted_thinking", "data": "opaque=="}, {"type": "text", "text": "hello"}]
