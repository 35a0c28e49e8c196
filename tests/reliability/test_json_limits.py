"""JSON that parses in principle but not in Python: nesting deeper than the recursion limit
(``RecursionError``) and integers longer than 4,300 digits (a ``ValueError`` that is not a
``JSONDecodeError``). Every reader of a file or stream turns them into its typed error
(found while fuzzing for issue 11)."""

from __future__ import annotations

from pathlib import Path

import pytest

from zpi_compat_claude.hooks.output import interpret
from zpi_compat_claude.hooks.runner import CommandOutcome
from zpi_compat_claude.manifest import ManifestError, read_json
from zpi_host.providers.script import ScriptError, load_script
from zpi_host.settings.manager import SettingsManager
from zpi_host.transcript.errors import TranscriptError
from zpi_host.transcript.helpers import _summarize
from zpi_host.transcript.reader import parse_transcript

DEEP = '{"a": ' + "[" * 20_000 + "]" * 20_000 + "}"
LONG = '{"a": 1' + "2" * 5_000 + "}"
CASES = pytest.mark.parametrize("text", [DEEP, LONG], ids=["deep", "long-int"])


@CASES
def test_settings(tmp_path, text):
    (tmp_path / "settings.json").write_text(text)
    manager = SettingsManager(tmp_path, None)
    [problem] = manager.problems
    assert "JSON this host cannot read" in str(problem)


@CASES
def test_scripted_model_file(tmp_path, text):
    path = tmp_path / "script.jsonl"
    path.write_text('{"text": "a"}\n' + text + "\n")
    with pytest.raises(ScriptError, match=f"{path}:2: JSON this host cannot read"):
        load_script(path)


@CASES
def test_claude_manifest(tmp_path, text):
    path = tmp_path / "plugin.json"
    path.write_text(text)
    with pytest.raises(ManifestError, match="JSON this host cannot read"):
        read_json(path)


@CASES
def test_claude_hook_output(text):
    result = interpret("PreToolUse", CommandOutcome(0, stdout=text))
    assert any("printed invalid JSON" in p for p in result.problems)


@CASES
def test_transcript_line_and_session_summary(tmp_path, text):
    from zpi_host.providers.messages import TextContent, UserMessage
    from zpi_host.transcript import SessionManager

    session = SessionManager.create(cwd=tmp_path, agent_dir=tmp_path / "agent")
    session.append_message(UserMessage((TextContent("hi"),)))
    path = Path(session.path)
    session.close()
    header = path.read_text().splitlines()[0]
    for data in (header + "\n" + text + "\n", text + "\n"):
        path.write_text(data)
        with pytest.raises(TranscriptError):
            parse_transcript(path.read_bytes(), path)
        info = _summarize(path)  # what `sessions list` shows: a broken entry, not a crash
        assert info is not None
