"""Bad input through the real ``zpi-host`` process: a clear error or warning, never a traceback
(issue 11)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .test_cli import zpi

SESSION_ID = "0b2f2c1e-5b4c-4d1a-9a57-3c1f8c5a9d11"


def _env(tmp_path: Path) -> dict[str, str]:
    return {"ZPI_AGENT_DIR": str(tmp_path / "agent"), "ZPI_DISABLE_PLUGIN_AUTOLOAD": "1"}


def _script(tmp_path: Path, *turns: str) -> str:
    path = tmp_path / "script.jsonl"
    path.write_text("".join(t + "\n" for t in turns))
    return f"scripted:{path}"


def test_settings_of_the_wrong_type_are_warnings_and_the_run_works(tmp_path):
    (tmp_path / ".zpi").mkdir()
    (tmp_path / ".zpi/settings.json").write_text(json.dumps({
        "compaction": None, "plugins": None, "tools": {"output_limit_bytes": "x"},
        "sessions": [], "permissions": {"allow": "read"}}))
    out = zpi("run", "hi", "--model", _script(tmp_path, '{"text": "fine"}'), cwd=tmp_path,
              env_extra=_env(tmp_path))
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr and out.stdout.strip() == "fine"
    for key in ("compaction", "plugins", "tools.output_limit_bytes", "sessions",
                "permissions.allow"):
        assert f"settings.json: setting {key} must be" in out.stderr, key


STARTUP_ERRORS = [
    (["--model", "nope:x"], "unknown model provider 'nope'", 2),
    (["--resume", SESSION_ID], f"no session '{SESSION_ID}'", 1),
    (["--max-turns", "0"], "--max-turns must be at least 1", 2),
    (["--deny", "read(", "--model", "scripted:x"], "read(", 2),
]


@pytest.mark.parametrize("fmt", ["json", "stream-json"])
@pytest.mark.parametrize(("extra", "words", "code"), STARTUP_ERRORS)
def test_a_start_up_error_still_prints_a_result_object(tmp_path, fmt, extra, words, code):
    out = zpi("run", "hi", "--output-format", fmt, *extra, cwd=tmp_path,
              env_extra=_env(tmp_path))
    assert out.returncode == code, out.stderr
    assert "Traceback" not in out.stderr and words in out.stderr
    [line] = out.stdout.splitlines()
    result = json.loads(line)
    assert (result["type"], result["is_error"], result["num_turns"]) == ("result", True, 0)
    assert words in result["result"]
    normal = zpi("run", "hi", "--output-format", "json", "--model",
                 _script(tmp_path, '{"text": "ok"}'), cwd=tmp_path, env_extra=_env(tmp_path))
    assert set(json.loads(normal.stdout)) == set(result)  # the same shape as a finished run


def test_text_output_prints_nothing_on_stdout_for_a_start_up_error(tmp_path):
    out = zpi("run", "hi", "--model", "nope:x", cwd=tmp_path, env_extra=_env(tmp_path))
    assert (out.returncode, out.stdout) == (2, "")


def test_bad_json_values_in_tool_arguments_are_tool_errors(tmp_path):
    """A lone surrogate in a path crashed the CLI; NaN or Infinity ended the run."""
    (tmp_path / "a.txt").write_text("hello\n")
    model = _script(
        tmp_path,
        '{"tool_calls": [{"name": "read", "arguments": {"path": "\\ud800"}}]}',
        '{"tool_calls": [{"name": "write", "arguments": {"path": "\\udcff/x", "content": ""}}]}',
        '{"tool_calls": [{"name": "read", "arguments": {"path": "a.txt", "offset": NaN}}]}',
        '{"tool_calls": [{"name": "bash", "arguments": {"command": "true", '
        '"timeout": -Infinity}}]}',
        '{"tool_calls": [{"name": "read", "arguments": {"path": "a.txt"}}]}',
        '{"text": "done"}')
    out = zpi("run", "go", "--output-format", "stream-json", "--model", model, cwd=tmp_path,
              env_extra=_env(tmp_path))
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines()]
    ends = [e["result"] for e in events if e["type"] == "tool_end"]
    assert [r["is_error"] for r in ends] == [True, True, True, True, False]
    texts = [r["content"][0]["text"] for r in ends]
    assert "argument 'path'" in texts[0] and "lone surrogate" in texts[0]
    assert "argument 'path'" in texts[1]
    assert "argument 'offset'" in texts[2] and "NaN" in texts[2]
    assert "argument 'timeout'" in texts[3] and "-Infinity" in texts[3]
    assert "hello" in texts[4]
    assert events[-1]["type"] == "result" and events[-1]["result"] == "done"
    resumed = zpi("sessions", "show", events[-1]["session_id"], cwd=tmp_path,
                  env_extra=_env(tmp_path))
    assert resumed.returncode == 0, resumed.stderr


def test_sessions_show_prints_text_with_a_lone_surrogate(tmp_path):
    from zpi_host.providers.messages import TextContent, UserMessage
    from zpi_host.transcript import SessionManager

    manager = SessionManager.create(cwd=tmp_path, agent_dir=tmp_path / "agent",
                                    session_id=SESSION_ID)
    manager.append_message(UserMessage((TextContent("hi \ud800"),)))
    manager.close()
    out = zpi("sessions", "show", SESSION_ID, cwd=tmp_path, env_extra=_env(tmp_path))
    assert out.returncode == 0, out.stderr
    assert "hi \\ud800" in out.stdout


def test_sessions_show_and_resume_name_a_record_whose_type_is_a_list(tmp_path):
    from zpi_host.providers.messages import TextContent, UserMessage
    from zpi_host.transcript import SessionManager

    session = SessionManager.create(cwd=tmp_path, agent_dir=tmp_path / "agent",
                                    session_id=SESSION_ID)
    session.append_message(UserMessage((TextContent("hi"),)))
    path = Path(session.path)
    session.close()
    header, line = path.read_text().splitlines()
    record = json.loads(line)
    record["type"] = ["user"]
    path.write_text(header + "\n" + json.dumps(record) + "\n")
    for args in (["sessions", "show", SESSION_ID],
                 ["run", "hi", "--resume", SESSION_ID, "--model", "scripted:x"]):
        out = zpi(*args, cwd=tmp_path, env_extra=_env(tmp_path))
        assert "Traceback" not in out.stderr, args
        assert out.returncode != 0
        assert f"{path}:2: the field 'type' must be a string" in out.stderr, out.stderr


def test_a_nul_byte_in_a_path_is_a_tool_error(tmp_path):
    model = _script(tmp_path,
                    '{"tool_calls": [{"name": "read", "arguments": {"path": "a\\u0000b"}}]}',
                    '{"text": "done"}')
    out = zpi("run", "go", "--output-format", "json", "--model", model, cwd=tmp_path,
              env_extra=_env(tmp_path))
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
