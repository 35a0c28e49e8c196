"""The record and message codec: exact round trips, camelCase keys, unknown fields, strictness."""

from __future__ import annotations

import json
from typing import Any

import pytest

from zpi_host.providers.messages import TextContent, ToolResultMessage, UserMessage
from zpi_host.transcript import RecordError, message_from_json, message_to_json
from zpi_host.transcript.codec import decode_record, dump_line, encode_record
from zpi_host.transcript.records import (
    RECORD_TYPES,
    AssistantRecord,
    CompactionRecord,
    ContextRecord,
    CustomRecord,
    ForkOrigin,
    HeaderRecord,
    ModelChangeRecord,
    ReasoningLevelRecord,
    SnapshotRecord,
    TagRecord,
    TitleRecord,
    ToolResultRecord,
    ToolUseRecord,
    UserRecord,
    WarningRecord,
    message_fields,
)

ENV = {"uuid": "u-1", "parent_uuid": "u-0", "session_id": "s-1",
       "timestamp": "2025-01-31T12:00:00.123Z"}


def every_record(messages: list[Any]) -> list[Any]:
    records: list[Any] = [
        HeaderRecord(uuid="u-0", parent_uuid=None, session_id="s-1", timestamp=ENV["timestamp"],
                     cwd="/home/me/p", created_at=ENV["timestamp"]),
        HeaderRecord(uuid="u-0", parent_uuid=None, session_id="s-1", timestamp=ENV["timestamp"],
                     cwd="/p", created_at=ENV["timestamp"],
                     forked_from=ForkOrigin(session_id="s-0", uuid="x")),
        ToolUseRecord(**ENV, call_id="toolu_01", name="read", arguments={"path": "a", "n": [1]}),
        SnapshotRecord(**ENV, snapshot={"plugins": [{"name": "p", "version": "1"}], "n": None}),
        ModelChangeRecord(**ENV, provider="openai", model="gpt-x"),
        ReasoningLevelRecord(**ENV, level="high"),
        CompactionRecord(**ENV, summary="we did things", first_kept_uuid="u-0",
                         tokens_before=1000, tokens_after=100, read_files=("a.py",),
                         modified_files=("b.py", "c.py")),
        CompactionRecord(**ENV, summary="s", first_kept_uuid=None, tokens_before=0,
                         tokens_after=0),
        TitleRecord(**ENV, title="Fix the parser"),
        TagRecord(**ENV, tags=("bug", "parser")),
        CustomRecord(**ENV, namespace="memory.facts", data={"facts": ["x"], "n": 1.5}),
        CustomRecord(**ENV, namespace="plain", data=[1, "two", None]),
        WarningRecord(**ENV, code="torn_line_removed", text="removed 12 bytes"),
    ]
    for message in messages:
        cls, fields = message_fields(message)
        records.append(cls(**ENV, **fields))
    return records


def test_every_record_type_is_covered(messages: list[Any]) -> None:
    assert {type(r) for r in every_record(messages)} == set(RECORD_TYPES.values())


def test_every_record_round_trips_through_one_json_line(messages: list[Any]) -> None:
    for record in every_record(messages):
        line = dump_line(encode_record(record))
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        data = json.loads(line)
        assert list(data)[:5] == ["type", "uuid", "parentUuid", "sessionId", "timestamp"]
        assert data["type"] == record.type
        assert decode_record(data, type(record)) == record


def test_every_message_round_trips_exactly(messages: list[Any]) -> None:
    for message in messages:
        data = json.loads(json.dumps(message_to_json(message)))
        back = message_from_json(data)
        assert back == message
        assert type(back) is type(message)


def test_keys_are_camel_case(messages: list[Any]) -> None:
    result = message_to_json(ToolResultMessage("c", "read", (TextContent("x"),), True, {"a": 1}))
    assert set(result) == {"callId", "toolName", "content", "isError", "details", "role"}
    usage = message_to_json(messages[1])["usage"]
    assert usage == {"inputTokens": 10, "outputTokens": 20, "cacheReadTokens": 30,
                     "cacheWriteTokens": 40}
    image = message_to_json(messages[0])["content"][1]
    assert image == {"data": "iVBORw==", "mimeType": "image/png", "type": "image"}
    compaction = encode_record(every_record(messages)[6])
    assert {"firstKeptUuid", "tokensBefore", "tokensAfter", "readFiles",
            "modifiedFiles"} <= set(compaction)


def test_lines_are_ascii_so_any_string_survives() -> None:
    message = UserMessage.text("line\u2028sep \x85 \U0001f600 lone \udcff")
    record = UserRecord(**ENV, message=message)
    line = dump_line(encode_record(record))
    assert line.isascii()
    assert decode_record(json.loads(line), UserRecord) == record


def test_unknown_top_level_fields_are_kept_and_written_back() -> None:
    data = encode_record(TitleRecord(**ENV, title="t"))
    data["addedLater"] = {"x": 1}
    record = decode_record(data, TitleRecord)
    assert record.extra == {"addedLater": {"x": 1}}
    assert encode_record(record) == data


def test_unknown_fields_inside_a_message_are_ignored() -> None:
    data = message_to_json(UserMessage.text("hi"))
    data["newField"] = 1
    data["content"][0]["alsoNew"] = 2
    assert message_from_json(data) == UserMessage.text("hi")


@pytest.mark.parametrize(("change", "problem"), [
    (lambda d: d["content"][0].update(text=5),
     "expected a string, got an integer @ $.content[0].text"),
    (lambda d: d.update(content="text"), "expected an array, got a string @ $.content"),
    (lambda d: d["content"].append({"type": "video"}),
     "unknown type 'video' (expected one of: text, image) @ $.content[1]"),
    (lambda d: d.update(role="robot"), "unknown role 'robot'"),
    (lambda d: d.pop("content"), "required field missing @ $.content"),
])
def test_bad_messages_are_explained(change: Any, problem: str) -> None:
    data = message_to_json(UserMessage.text("hi"))
    change(data)
    with pytest.raises(RecordError, match="not a valid message") as info:
        message_from_json(data)
    assert problem in str(info.value)


def test_types_are_strict_not_coerced() -> None:
    data = encode_record(ToolUseRecord(**ENV, call_id="c", name="read", arguments={}))
    for key, value in (("callId", 7), ("name", None), ("arguments", [1]), ("uuid", 1)):
        bad = {**data, key: value}
        with pytest.raises(ValueError):
            decode_record(bad, ToolUseRecord)
    usage = message_to_json(AssistantRecord(**ENV, message=_assistant()).message)
    usage["usage"]["inputTokens"] = True  # a bool is not an int
    with pytest.raises(RecordError):
        message_from_json(usage)


def test_a_user_record_refuses_another_role() -> None:
    data = encode_record(UserRecord(**ENV, message=UserMessage.text("x")))
    data["message"]["role"] = "assistant"
    with pytest.raises(ValueError, match="role"):
        decode_record(data, UserRecord)


def test_non_json_data_is_a_record_error() -> None:
    record = CustomRecord(**ENV, namespace="p.x", data={"when": object()})
    with pytest.raises(RecordError, match="not JSON-serialisable"):
        dump_line(encode_record(record))
    with pytest.raises(RecordError):
        dump_line(encode_record(CustomRecord(**ENV, namespace="p.x", data=float("nan"))))


def test_context_record_carries_text_and_source() -> None:
    record = ContextRecord(**ENV, text="t", source="plugin-a")
    assert encode_record(record) == {"type": "context", "uuid": "u-1", "parentUuid": "u-0",
                                     "sessionId": "s-1", "timestamp": ENV["timestamp"],
                                     "text": "t", "source": "plugin-a"}


def test_tool_result_record_carries_the_call_id(messages: list[Any]) -> None:
    cls, fields = message_fields(messages[2])
    assert cls is ToolResultRecord and fields["call_id"] == "toolu_01"


def _assistant() -> Any:
    from zpi_host.providers.messages import AssistantMessage, Usage

    return AssistantMessage((TextContent("x"),), usage=Usage(1, 2, 3, 4))
