"""Fuzzing scripted model files (``--model scripted:PATH``, ``providers/script.py``): any file
loads into turns or raises :class:`ScriptError` naming file and line; the turns' events are
well-formed; and a run driven by a fuzzed script ends with a result (its tool calls answered
by tool errors where the arguments do not fit), never a traceback.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.reliability import scaled
from hypothesis import given, settings
from hypothesis import strategies as st

from zpi_host.errors import ZpiError
from zpi_host.providers.base import ToolCallEnd
from zpi_host.providers.script import ScriptedTurn, ScriptError, load_script

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True)
    | st.text(max_size=8) | st.sampled_from(["\ud800", "a.txt", "../x", "~/y"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=3),
    max_leaves=8,
)
TURN_KEYS = ["text", "thinking", "tool_calls", "usage", "id", "name", "arguments"]
# tools whose real execution is harmless in a scratch workspace (no bash: fuzzed commands)
SAFE_TOOLS = ["read", "write", "edit", "nope"]


@st.composite
def turns(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["object", "object", "object", "string", "random"]))
    if kind == "string":
        return draw(st.text(max_size=10))
    if kind == "random":
        return draw(json_values)
    turn: dict[str, Any] = {}
    for key in draw(st.lists(st.sampled_from(TURN_KEYS), max_size=4, unique=True)):
        if key == "tool_calls" and draw(st.booleans()):
            turn[key] = [{"name": draw(st.sampled_from(SAFE_TOOLS)),
                          "arguments": draw(st.dictionaries(
                              st.sampled_from(["path", "content", "old_text", "new_text",
                                               "edits", "offset", "limit", "x"]),
                              json_values, max_size=4)),
                          **({"id": draw(json_values)} if draw(st.booleans()) else {})}
                         for _ in range(draw(st.integers(0, 2)))]
        elif key == "usage" and draw(st.booleans()):
            turn[key] = draw(st.dictionaries(st.sampled_from(
                ["input_tokens", "output_tokens", "cache_read_tokens", "x"]),
                st.integers(-5, 10**20) | json_values, max_size=3))
        else:
            turn[key] = draw(json_values)
    return turn


def _line(turn: Any) -> bytes:
    return json.dumps(turn).encode()  # NaN and lone surrogates go in as Python writes them


lines = st.lists(st.one_of(turns().map(_line), st.binary(max_size=20),
                           st.sampled_from([b"", b"  ", b"{", b"NaN", b'"\\ud800"',
                                            b"[" * 5_000, b"1" * 5_000])),
                 max_size=5)


@given(lines)
def test_a_script_loads_or_names_the_line(raw_lines):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "script.jsonl"
        path.write_bytes(b"\n".join(raw_lines))
        try:
            loaded = load_script(path)
        except ScriptError as exc:
            assert str(path) in str(exc)
            return
    for number, turn in enumerate(loaded):
        events = list(turn.events(f"call_{number}"))
        for event in events:
            if isinstance(event, ToolCallEnd):
                json.dumps(event.arguments, allow_nan=False).encode("utf-8")


@given(turns())
def test_a_turn_parses_or_raises_a_script_error(turn):
    try:
        ScriptedTurn.parse(turn, "turn")
    except ScriptError as exc:
        assert str(exc).startswith("turn")


@settings(max_examples=scaled(20, 600))
@given(st.lists(turns(), min_size=1, max_size=4))
def test_a_run_driven_by_a_fuzzed_script_ends_with_a_result(script):
    from zpi_host.contract.plugins import PluginConfig, PluginHost
    from zpi_host.session.assembly import create_session

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        workspace = root / "workspace"
        workspace.mkdir()
        (workspace / "a.txt").write_text("one\ntwo\n")
        path = root / "script.jsonl"
        path.write_bytes(b"\n".join(_line(t) for t in script) + b"\n")

        async def run() -> None:
            try:
                session = await create_session(
                    model=f"scripted:{path}", cwd=workspace, agent_dir=root / "agent",
                    max_turns=4, host=PluginHost(PluginConfig(autoload=False)).load())
            except ZpiError:
                return  # a script that does not load is refused before the run
            try:
                result = await session.run("go")
            finally:
                await session.dispose()
            assert isinstance(result.result, str)
            if session.store.path is not None:
                from zpi_host.transcript.reader import read_transcript

                read_transcript(session.store.path)  # what was written reads back

        anyio.run(run)


@pytest.mark.parametrize(("content", "words"), [
    (b'{"text": "a"}\n\x80\n', ":2: not UTF-8 text"),
    (b'{"text": "a", "usage": {"cache_read_tokens": "x"}}\n', ":1: 'usage' must be"),
    (b'{"text": "a", "usage": {"input_tokens": true}}\n', ":1: 'usage' must be"),
    (b'{"tool_calls": [{"name": "read", "id": ["x"]}]}\n', ":1: tool_calls[0].id must be"),
    (b"[" * 100_000 + b"\n", ":1: "),
    (b'{"tool_calls": [{"name": "a", "id": "x"}, {"name": "b", "id": "x"}]}\n',
     ":1: tool_calls[1].id 'x' is used twice"),
])
def test_what_the_fuzzing_found_is_a_script_error(tmp_path, content, words):
    path = tmp_path / "script.jsonl"
    path.write_bytes(content)
    with pytest.raises(ScriptError) as caught:
        load_script(path)
    assert f"{path}{words}" in str(caught.value)
