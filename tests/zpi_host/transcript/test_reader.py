"""Reading: the whole chain is validated; damage names file:line; a torn tail is dropped."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from zpi_host.errors import ZpiError
from zpi_host.providers.messages import UserMessage
from zpi_host.transcript import (
    TranscriptError,
    TranscriptVersionError,
    parse_transcript,
    read_transcript,
)
from zpi_host.transcript.codec import encode_record
from zpi_host.transcript.records import (
    HeaderRecord,
    TitleRecord,
    UserRecord,
)

SID = "5a0e3f49-2d4b-4c5e-9a43-6b1c4d2e8f10"
STAMP = "2025-01-31T12:00:00.000Z"


def header(**changes: Any) -> dict[str, Any]:
    data = encode_record(HeaderRecord(uuid="h", parent_uuid=None, session_id=SID,
                                      timestamp=STAMP, cwd="/p", created_at=STAMP))
    data.update(changes)
    return data


def user(uuid: str, parent: str | None, text: str = "hi", **changes: Any) -> dict[str, Any]:
    data = encode_record(UserRecord(uuid=uuid, parent_uuid=parent, session_id=SID,
                                    timestamp=STAMP, message=UserMessage.text(text)))
    data.update(changes)
    return data


def chain(n: int) -> list[dict[str, Any]]:
    records = [header()]
    for i in range(1, n + 1):
        records.append(user(f"u{i}", records[-1]["uuid"], f"message {i}"))
    return records


Write = Callable[..., Path]


def test_a_valid_file_reads_in_order(write_lines: Write) -> None:
    path = write_lines(chain(3))
    transcript = read_transcript(path)
    assert [r.uuid for r in transcript.records] == ["h", "u1", "u2", "u3"]
    assert transcript.session_id == SID
    assert transcript.warnings == ()
    assert transcript.linear
    assert transcript.valid_size == path.stat().st_size


def expect_error(path: Path, line: int, *fragments: str) -> TranscriptError:
    with pytest.raises(TranscriptError) as info:
        read_transcript(path)
    error = info.value
    assert isinstance(error, ZpiError)
    assert f"{path}:{line}: " in str(error)
    assert error.line == line and error.path == path
    for fragment in fragments:
        assert fragment in str(error)
    return error


def test_bad_json_in_the_middle(write_lines: Write) -> None:
    records: list[Any] = chain(4)
    records[2] = '{"type": "user", "uuid": '
    expect_error(write_lines(records), 3, "not valid JSON")


def test_bad_json_on_the_last_complete_line(write_lines: Write) -> None:
    records: list[Any] = [*chain(2), "{not json}"]
    expect_error(write_lines(records), 4, "not valid JSON")  # it has its newline: not torn


def test_missing_parent(write_lines: Write) -> None:
    records = chain(3)
    records[2]["parentUuid"] = "nowhere"
    expect_error(write_lines(records), 3, "parentUuid 'nowhere' does not name an earlier record")


def test_parent_must_be_earlier(write_lines: Write) -> None:
    records = chain(3)
    records[2]["parentUuid"] = "u3"
    expect_error(write_lines(records), 3, "does not name an earlier record")


def test_null_parent_after_the_header(write_lines: Write) -> None:
    records = chain(2)
    records[2]["parentUuid"] = None
    expect_error(write_lines(records), 3, "only the header may have no parent")


def test_duplicate_uuid(write_lines: Write) -> None:
    records = chain(3)
    records[3]["uuid"] = "u1"
    expect_error(write_lines(records), 4, "duplicate uuid 'u1'")


def test_future_version_says_upgrade(write_lines: Write) -> None:
    error = expect_error(write_lines([header(version=3), user("u1", "h")]), 1,
                         "version 3", "newer zpi-host", "upgrade zpi-host")
    assert isinstance(error, TranscriptVersionError)


def test_old_or_odd_versions_are_refused(write_lines: Write) -> None:
    for version in (1, "2", None):
        path = write_lines([header(version=version)], name=f"v{version}.jsonl")
        error = expect_error(path, 1, "unsupported transcript format version")
        assert isinstance(error, TranscriptVersionError)


def test_wrong_session_id(write_lines: Write) -> None:
    records = chain(2)
    records[2]["sessionId"] = "another"
    expect_error(write_lines(records), 3, "sessionId 'another' differs from the header's")


def test_missing_header(write_lines: Write) -> None:
    expect_error(write_lines(chain(2)[1:]), 1, "missing header", "'user' record")


def test_empty_file(write_lines: Write) -> None:
    expect_error(write_lines([]), 1, "empty")


def test_second_header(write_lines: Write) -> None:
    records = chain(1)
    records.append(header(uuid="h2", parentUuid="u1"))
    expect_error(write_lines(records), 3, "a second header")


def test_unknown_record_type(write_lines: Write) -> None:
    records = chain(1)
    records.append({**user("u2", "u1"), "type": "hologram"})
    expect_error(write_lines(records), 3, "unknown record type 'hologram'")


@pytest.mark.parametrize(("change", "fragment"), [
    ({"uuid": 5}, "expected a string, got an integer @ $.uuid"),
    ({"timestamp": "yesterday"}, "timestamp 'yesterday' is not an ISO 8601 UTC time"),
    ({"timestamp": "2025-01-31T12:00:00+02:00"}, "is not an ISO 8601 UTC time"),
    ({"message": {"role": "user", "content": "hi"}}, "expected an array"),
    ({"type": None}, "has no 'type'"),
])
def test_bad_fields_name_the_field(write_lines: Write, change: dict[str, Any],
                                   fragment: str) -> None:
    records = chain(2)
    records[2].update(change)
    expect_error(write_lines(records), 3, fragment)


def test_missing_field(write_lines: Write) -> None:
    records = chain(2)
    del records[2]["sessionId"]
    expect_error(write_lines(records), 3, "invalid 'user' record", "required field missing")


def test_line_that_is_not_an_object(write_lines: Write) -> None:
    records: list[Any] = [*chain(1), "[1, 2]", *chain(2)[2:]]
    expect_error(write_lines(records), 3, "expected a JSON object, got an array")


def test_empty_line_in_the_middle(write_lines: Write) -> None:
    records: list[Any] = chain(2)
    records.insert(2, "")
    expect_error(write_lines(records), 3, "empty line")


def test_invalid_utf8(tmp_path: Path) -> None:
    lines = [json.dumps(r).encode() for r in chain(3)]
    lines[2] = lines[2].replace(b"message 2", b"message \xff")
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    expect_error(path, 3, "not valid UTF-8")


def test_type_specific_rules(write_lines: Write) -> None:
    base = {"uuid": "x", "parentUuid": "u1", "sessionId": SID, "timestamp": STAMP}
    result = {"type": "tool_result", **base, "callId": "a",
              "message": {"role": "tool", "callId": "b", "toolName": "t",
                          "content": [], "isError": False, "details": None}}
    custom = {"type": "custom", **base, "namespace": "../bad", "data": 1}
    compaction = {"type": "compaction", **base, "summary": "s", "firstKeptUuid": "later",
                  "tokensBefore": 1, "tokensAfter": 1, "readFiles": [], "modifiedFiles": []}
    cases = [(result, "differs from its message's callId"), (custom, "must look like"),
             (compaction, "firstKeptUuid 'later' does not name an earlier record")]
    for i, (record, fragment) in enumerate(cases):
        expect_error(write_lines([*chain(1), record], name=f"c{i}.jsonl"), 3, fragment)


def test_branches_are_valid_and_marked_non_linear(write_lines: Write) -> None:
    records = chain(3)
    records.append(user("b1", "u1", "another branch"))
    transcript = read_transcript(write_lines(records))
    assert not transcript.linear


def test_torn_last_line_is_dropped_with_a_warning(write_lines: Write) -> None:
    path = write_lines(chain(2))
    complete = path.read_bytes()
    torn = json.dumps(user("u3", "u2"))[:37].encode()
    path.write_bytes(complete + torn)
    transcript = read_transcript(path)
    assert [r.uuid for r in transcript.records] == ["h", "u1", "u2"]
    assert len(transcript.warnings) == 1
    assert f"{path}:4: dropped a torn final line ({len(torn)} bytes" in transcript.warnings[0]
    assert transcript.valid_size == len(complete)
    assert transcript.size == len(complete) + len(torn)
    assert path.read_bytes() == complete + torn  # reading never repairs


def test_torn_multibyte_tail_is_dropped(write_lines: Write) -> None:
    path = write_lines(chain(1))
    path.write_bytes(path.read_bytes() + '{"type":"title","title":"é'.encode()[:-1])
    assert len(read_transcript(path).warnings) == 1


def test_complete_last_line_without_newline_is_kept(write_lines: Write) -> None:
    path = write_lines(chain(2), end="")
    transcript = read_transcript(path)
    assert [r.uuid for r in transcript.records] == ["h", "u1", "u2"]
    assert transcript.warnings == ()
    assert transcript.needs_newline


def test_damage_before_a_torn_tail_is_still_an_error(write_lines: Write) -> None:
    records: list[Any] = chain(3)
    records[1] = "garbage"
    path = write_lines(records)
    path.write_bytes(path.read_bytes() + b'{"type":')
    expect_error(path, 2, "not valid JSON")


def test_unknown_fields_are_kept(write_lines: Write) -> None:
    records = chain(1)
    records.append({"type": "title", "uuid": "t", "parentUuid": "u1", "sessionId": SID,
                    "timestamp": STAMP, "title": "T", "color": "blue"})
    title = read_transcript(write_lines(records)).records[-1]
    assert isinstance(title, TitleRecord) and title.extra == {"color": "blue"}


def test_parse_without_a_path_says_memory() -> None:
    with pytest.raises(TranscriptError, match="<memory>:1: "):
        parse_transcript(b"[]\n")
