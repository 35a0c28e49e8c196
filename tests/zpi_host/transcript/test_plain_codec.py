"""transcript.plain against the cattrs converter it stands in for: the same JSON objects and
records for what it accepts, and nothing accepted that the converter refuses."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from zpi_host.providers.messages import TextContent, ToolResultMessage
from zpi_host.transcript import codec, plain
from zpi_host.transcript.records import CustomRecord, ToolResultRecord

from .conftest import sample_messages
from .test_records import ENV, every_record


def converter_json(record: Any) -> dict[str, Any]:
    return codec._unstructure_fn(type(record))(record)  # type: ignore[no-any-return]


def converter_record(data: Any, cls: type) -> Any:
    return codec._structure_fn(cls)(data, cls)


@pytest.mark.parametrize("record", every_record(sample_messages()), ids=lambda r: r.TYPE)
def test_the_same_json_and_the_same_record_as_the_converter(record: Any) -> None:
    data = plain.unstructure(record)
    assert data == converter_json(record)
    assert list(data) == list(converter_json(record))  # the same key order, on disk too
    assert plain.structure(data, type(record)) == converter_record(data, type(record)) == record


def _wrong_values() -> list[Any]:
    return [None, 1, True, 1.5, "x", [], ["x"], {}, {"type": "text", "text": 1},
            {"type": "nope"}, [{"type": "text"}], [None]]


def _variants(data: Any) -> list[Any]:
    """``data`` with one value replaced (at any depth) or one key removed, each way."""
    found: list[Any] = []

    def walk(path: list[Any]) -> None:
        node = data
        for step in path:
            node = node[step]
        keys = list(node) if isinstance(node, dict) else range(len(node)) \
            if isinstance(node, list) else []
        for key in keys:
            for value in _wrong_values():
                changed = copy.deepcopy(data)
                target = changed
                for step in path:
                    target = target[step]
                target[key] = value
                found.append(changed)
            if isinstance(node, dict):
                removed = copy.deepcopy(data)
                target = removed
                for step in path:
                    target = target[step]
                del target[key]
                found.append(removed)
            walk([*path, key])

    walk([])
    return found


@pytest.mark.parametrize("record", every_record(sample_messages()), ids=lambda r: r.TYPE)
def test_nothing_accepted_that_the_converter_refuses(record: Any) -> None:
    cls = type(record)
    for data in _variants(plain.unstructure(record)):
        try:
            expected = converter_record(data, cls)
        except Exception:
            with pytest.raises(Exception):  # noqa: B017 - any failure falls back
                plain.structure(data, cls)
            continue
        try:
            got = plain.structure(data, cls)
        except plain.Unhandled:
            continue  # left to the converter: allowed
        assert got == expected, data


def test_values_plain_does_not_encode_go_to_the_converter() -> None:
    odd = CustomRecord(**ENV, namespace="x", data=[1, (2, 3), {"a": (1,)}])
    with pytest.raises(plain.Unhandled):
        plain.unstructure(odd)
    assert codec.encode_record(odd)["data"] == [1, [2, 3], {"a": (1,)}]
    proxy = ToolResultRecord(**ENV, call_id="c", message=ToolResultMessage(
        "c", "t", (TextContent("x"),), details=types.MappingProxyType({"a": 1})))
    with pytest.raises(plain.Unhandled):
        plain.unstructure(proxy)
    assert codec.encode_record(proxy)["message"] == converter_json(proxy)["message"]


def test_a_bad_record_is_still_explained() -> None:
    data = json.loads(codec.dump_line(codec.encode_record(every_record([])[0])))
    data["cwd"] = 5
    with pytest.raises(ValueError, match=r"expected a string, got an integer @ \$\.cwd"):
        codec.decode_record(data, type(every_record([])[0]))


def test_a_one_turn_run_imports_no_cattrs(tmp_path: Path) -> None:
    script = tmp_path / "hello.jsonl"
    script.write_text(json.dumps({"text": "hello"}) + "\n")
    code = ("import sys; from zpi_host.cli import main\n"
            f"try:\n    main(['run', '--model', 'scripted:{script}', 'hi'])\n"
            "except SystemExit:\n    pass\n"
            "print('cattrs' in sys.modules, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                               "ZPI_AGENT_DIR": str(tmp_path / "agent")})
    assert done.stdout.strip() == "hello", done.stderr
    assert done.stderr.strip().splitlines()[-1] == "False"
