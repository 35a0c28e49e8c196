"""Fuzzing the transcript reader: mutated records, random lines and damaged bytes.

Whatever a session file holds, reading it (``parse_transcript``), resuming it
(``SessionManager.open``) and showing it (``get_session_info`` / ``get_session_messages``, what
``zpi-host sessions show`` does) either works or raises a :class:`TranscriptError` (or another
typed storage error) naming the line; nothing else escapes.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zpi_host.errors import ZpiError
from zpi_host.providers.messages import AssistantMessage, TextContent, ToolCallContent, UserMessage
from zpi_host.transcript import SessionManager
from zpi_host.transcript.errors import TranscriptError
from zpi_host.transcript.helpers import get_session_info, get_session_messages
from zpi_host.transcript.reader import parse_transcript

SESSION_ID = "0b2f2c1e-5b4c-4d1a-9a57-3c1f8c5a9d11"

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=12,
)
FIELD_NAMES = ["type", "uuid", "parentUuid", "sessionId", "timestamp", "message", "version",
               "cwd", "createdAt", "callId", "name", "arguments", "content", "role", "namespace",
               "data", "title", "tags", "summary", "firstKeptUuid", "tokensBefore",
               "tokensAfter", "text", "isError", "stopReason", "usage", "forkedFrom"]


def _sample_lines() -> list[dict[str, Any]]:
    """The records of a real session: header, user, assistant with a tool call, tool use,
    result, title, tags, custom."""
    with tempfile.TemporaryDirectory() as folder:
        manager = SessionManager.create(cwd=folder, agent_dir=Path(folder) / "agent",
                                        session_id=SESSION_ID)
        manager.append_message(UserMessage((TextContent("fix the bug"),)))
        manager.append_message(AssistantMessage(
            (TextContent("reading"), ToolCallContent("c1", "read", {"path": "a.py"})),
            "tool_use", provider="scripted", model="m"))
        manager.append_tool_use("c1", "read", {"path": "a.py"})
        from zpi_host.providers.messages import ToolResultMessage

        manager.append_message(ToolResultMessage("c1", "read", (TextContent("1\tx"),), False))
        manager.set_title("a title")
        manager.set_tags(["one"])
        manager.append_custom("tests.fuzz", {"n": 1})
        manager.close()
        path = next((Path(folder) / "agent").rglob("*.jsonl"))
        return [json.loads(line) for line in path.read_text().splitlines()]


SAMPLE = _sample_lines()


def _dump(records: list[Any]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def _read_all_ways(data: bytes) -> None:
    """Parse, resume and show ``data``; only typed errors may escape."""
    try:
        parse_transcript(data, Path("fuzz.jsonl"))
    except TranscriptError as exc:
        assert exc.line is not None and exc.line >= 1, exc
        assert str(exc).startswith("fuzz.jsonl:"), exc
    with tempfile.TemporaryDirectory() as folder:
        agent = Path(folder) / "agent"
        manager = SessionManager.create(cwd=folder, agent_dir=agent, session_id=SESSION_ID)
        path = manager.path
        manager.close()
        Path(path).write_bytes(data)
        with contextlib.suppress(ZpiError):
            info = get_session_info(SESSION_ID, agent_dir=agent)
            assert info is not None
            get_session_messages(SESSION_ID, agent_dir=agent)
        with contextlib.suppress(ZpiError):
            SessionManager.open(SESSION_ID, agent_dir=agent).close()


@st.composite
def mutated_records(draw: st.DrawFn) -> list[Any]:
    records: list[Any] = json.loads(json.dumps(SAMPLE))
    for _ in range(draw(st.integers(1, 3))):
        index = draw(st.integers(0, len(records) - 1))
        record = records[index]
        action = draw(st.sampled_from(["set", "delete", "replace", "nested", "drop", "dup"]))
        if action == "set" and isinstance(record, dict):
            record[draw(st.sampled_from(FIELD_NAMES))] = draw(json_values)
        elif action == "delete" and isinstance(record, dict) and record:
            record.pop(draw(st.sampled_from(sorted(record))))
        elif action == "replace":
            records[index] = draw(json_values)
        elif action == "nested" and isinstance(record, dict):
            message = record.get("message")
            if isinstance(message, dict):
                message[draw(st.sampled_from(FIELD_NAMES))] = draw(json_values)
                content = message.get("content")
                if isinstance(content, list) and content:
                    part = draw(st.integers(0, len(content) - 1))
                    if isinstance(content[part], dict):
                        content[part][draw(st.sampled_from(FIELD_NAMES))] = draw(json_values)
        elif action == "drop" and len(records) > 1:
            records.pop(index)
        elif action == "dup":
            records.insert(index, json.loads(json.dumps(record)))
    return records


@given(mutated_records())
def test_mutated_records_give_typed_errors(records):
    _read_all_ways(_dump(records))


@given(st.lists(st.one_of(json_values.map(lambda v: json.dumps(v).encode()),
                          st.binary(max_size=40),
                          st.sampled_from([b"[" * 5_000, b'{"uuid": 1' + b"0" * 5_000 + b"}"])),
                 max_size=6),
       st.booleans())
def test_random_lines_give_typed_errors(lines, keep_header):
    head = [json.dumps(SAMPLE[0]).encode()] if keep_header else []
    _read_all_ways(b"\n".join(head + lines) + b"\n")


@given(st.integers(0, 10_000), st.binary(min_size=0, max_size=8), st.integers(0, 8))
def test_damaged_bytes_give_typed_errors(at, insert, cut):
    data = bytearray(_dump(SAMPLE))
    at %= len(data)
    data[at:at + cut] = insert
    _read_all_ways(bytes(data))


@pytest.mark.parametrize("kind", [["user"], {"t": "user"}, 7, True, None])
def test_a_record_type_that_is_not_a_string_is_named(kind, tmp_path):
    """Issue 11: a record whose ``type`` is a list or an object crashed resume and show."""
    records = json.loads(json.dumps(SAMPLE))
    records[1]["type"] = kind
    with pytest.raises(TranscriptError) as caught:
        parse_transcript(_dump(records), tmp_path / "t.jsonl")
    assert caught.value.line == 2
    assert "'type'" in caught.value.problem


def test_a_torn_last_line_is_still_dropped_with_a_warning():
    data = _dump(SAMPLE) + b'{"type": ["user"'
    transcript = parse_transcript(data)
    assert len(transcript.records) == len(SAMPLE)
    assert "torn final line" in transcript.warnings[0]


@pytest.mark.parametrize(("index", "key", "value", "path"), [
    (0, "sessionId", None, "$.sessionId"),
    (1, "parentUuid", {"a": 1}, "$.parentUuid"),
    (3, "callId", 7, "$.callId"),
    (1, "uuid", ["x"], "$.uuid"),
])
def test_a_field_of_the_wrong_type_is_named_as_in_the_file(index, key, value, path):
    records = json.loads(json.dumps(SAMPLE))
    records[index][key] = value
    with pytest.raises(TranscriptError) as caught:
        parse_transcript(_dump(records), Path("t.jsonl"))
    assert caught.value.line == index + 1
    assert caught.value.problem.endswith(f"@ {path}"), caught.value.problem


plain_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["call_1", "read", "x.y", "hook"]) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["path", "hook", "n", "call_1"]) | st.text(max_size=8), inner,
        max_size=4),
    max_leaves=12,
)


def _twin(value: Any) -> Any:
    """A value Python finds equal to ``value`` that JSON writes differently: ``true`` for
    ``1``, ``1.0`` for ``1``, ``-0.0`` for ``0.0``, an object's keys in reverse order."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return bool(value) if value in (0, 1) else float(value) if abs(value) < 2**52 else value
    if isinstance(value, float):
        return -value if value == 0 else value
    if isinstance(value, list):
        return [_twin(v) for v in value]
    if isinstance(value, dict):
        return {k: _twin(value[k]) for k in reversed(list(value))}
    return value


@given(st.dictionaries(st.text(max_size=8), plain_values, max_size=4),
       st.sampled_from(["same", "twin", "other"]),
       st.dictionaries(st.text(max_size=8), plain_values, max_size=4),
       plain_values, st.one_of(st.none(), st.dictionaries(st.text(max_size=8), plain_values,
                                                          max_size=3)),
       st.sampled_from(["call_1", "call_2"]), st.sampled_from(["read", "bash"]))
def test_records_read_back_write_the_same_lines(call_args, journal, other, data, details,
                                                 journal_id, journal_name):
    """Whatever values a call, its journal record, a plugin record and a result hold (equal
    ones, ``1`` against ``true``, ``0.0`` against ``-0.0``, keys in another order), the records
    read back encode to exactly the lines they were read from: sharing equal values across
    records never changes one."""
    from zpi_host.providers.messages import ToolResultMessage
    from zpi_host.transcript.codec import dump_line, encode_record

    with tempfile.TemporaryDirectory() as tmp:
        with SessionManager.create(Path(tmp, "project"), agent_dir=Path(tmp, "agent")) as manager:
            manager.append_message(AssistantMessage(
                (ToolCallContent("call_1", "read", call_args),), "tool_use"))
            journal_args = {"same": call_args, "twin": _twin(call_args), "other": other}
            manager.append_tool_use(journal_id, journal_name, journal_args[journal])
            manager.append_custom("x.y", {"twin": _twin(data), "data": data})
            manager.append_custom("x.y", data)
            manager.append_message(ToolResultMessage("call_1", "read", (TextContent("ok"),),
                                                     False, details))
            path = manager.path
        assert path is not None
        lines = path.read_bytes().splitlines(keepends=True)
        records = parse_transcript(path.read_bytes(), path).records
    assert [dump_line(encode_record(r)) for r in records] == lines
