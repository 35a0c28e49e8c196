"""Provider keys stay secret: a key echoed back by the service in a malformed event appears
nowhere the host writes (stdout, stderr, the transcript, the events), and the commands the
host starts (bash, hook commands) do not get the key variables unless a setting passes them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from zpi_host.testing import ModelServer

EXE = shutil.which("zpi-host") or str(Path(sys.executable).with_name("zpi-host"))
KEY = "sk-live-REDACTME-0123456789abcdef"
CATALOG_KEY = "cat-REDACTME-fedcba9876543210"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ZPI_") and k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    home = tmp_path / "home"
    return {**env, "HOME": str(home), "ZPI_AGENT_DIR": str(home / ".zpi/agent"), **extra}


@pytest.mark.parametrize("fmt, variable, at", [("openai", "OPENAI_API_KEY", 2),
                                               ("anthropic", "ANTHROPIC_API_KEY", 4)])
@pytest.mark.parametrize("output", ["text", "stream-json", "json"])
def test_a_key_echoed_in_a_malformed_event_is_redacted_everywhere(tmp_path, fmt, variable, at,
                                                                 output):
    # after some text has streamed (the partial answer and its error are recorded); the key
    # comes twice: whole, and where the error's 200-character excerpt of the data cuts it
    echo = '{"e": "' + KEY + '", "pad": "' + "x" * 132 + KEY + '"'
    with ModelServer([{"text": "a fairly long answer that streams in pieces"}]) as server:
        server.fail_next(malformed=f"data: {echo}\n\n", at=at)
        out = subprocess.run(
            [EXE, "run", "--model", f"{fmt}:gpt-test", "--base-url", server.base_url,
             "--output-format", output, "say something"],
            capture_output=True, text=True, cwd=tmp_path, timeout=60,
            env=_env(tmp_path, **{variable: KEY}))
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr
    shown = out.stdout + out.stderr
    assert "broke off" in shown and "not valid JSON" in shown and "[redacted]" in shown
    if output == "stream-json":
        events = [json.loads(line) for line in out.stdout.splitlines()]
        (end,) = [e for e in events if e["type"] == "message_end"]
        assert "[redacted]" in end["message"]["error"]
    (transcript,) = (tmp_path / "home/.zpi/agent/sessions").rglob("*.jsonl")
    recorded = transcript.read_text()
    assert "not valid JSON" in recorded and "[redacted]" in recorded
    for text in (shown, recorded):
        assert "REDACTME" not in text  # neither the key nor a prefix left at an excerpt's cut


def _bash_run(tmp_path: Path, command: str, settings: dict | None = None,
              **env: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "script.jsonl"
    turns = [{"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}, "done"]
    script.write_text("".join(json.dumps(t) + "\n" for t in turns))
    full_env = _env(tmp_path, **env)
    if settings is not None:
        agent = Path(full_env["ZPI_AGENT_DIR"])
        agent.mkdir(parents=True, exist_ok=True)
        (agent / "settings.json").write_text(json.dumps(settings))
    return subprocess.run([EXE, "run", "--allow", "bash", "--model", f"scripted:{script}",
                           "--output-format", "stream-json", "go"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=60, env=full_env)


def _bash_output(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 0, out.stderr
    (end,) = [e for e in map(json.loads, out.stdout.splitlines()) if e["type"] == "tool_end"]
    return end["result"]["content"][0]["text"].strip()


PRINT = 'echo "openai=${OPENAI_API_KEY:-unset} mine=${MY_KEY:-unset} other=${OTHER:-unset}"'
CATALOG = {"models": {"mine": {"provider": "openai", "model": "m", "api_key_env": "MY_KEY"}}}


def test_bash_does_not_get_the_key_variables(tmp_path):
    out = _bash_run(tmp_path, PRINT, CATALOG, OPENAI_API_KEY=KEY, MY_KEY=CATALOG_KEY,
                    OTHER="kept")
    assert _bash_output(out) == "openai=unset mine=unset other=kept"


def test_a_setting_passes_all_or_some_key_variables(tmp_path):
    both = _bash_run(tmp_path, PRINT, {**CATALOG, "secrets": {"pass_to_commands": True}},
                     OPENAI_API_KEY=KEY, MY_KEY=CATALOG_KEY)
    # passed on purpose: the command sees the value (and what it prints is redacted)
    assert _bash_output(both) == "openai=[redacted] mine=[redacted] other=unset"
    some = _bash_run(tmp_path, 'echo "${OPENAI_API_KEY:-unset} ${#MY_KEY}"',
                     {**CATALOG, "secrets": {"pass_to_commands": ["MY_KEY"]}},
                     OPENAI_API_KEY=KEY, MY_KEY=CATALOG_KEY)
    assert _bash_output(some) == f"unset {len(CATALOG_KEY)}"


def test_a_bad_pass_setting_warns_and_passes_nothing(tmp_path):
    out = _bash_run(tmp_path, PRINT, {"secrets": {"pass_to_commands": "yes"}},
                    OPENAI_API_KEY=KEY)
    assert _bash_output(out).startswith("openai=unset")
    assert "secrets.pass_to_commands must be true, false or a list" in out.stdout


def test_a_project_may_not_pass_the_keys(tmp_path):
    (tmp_path / ".zpi").mkdir()
    (tmp_path / ".zpi" / "settings.json").write_text(
        json.dumps({"secrets": {"pass_to_commands": True}}))
    out = _bash_run(tmp_path, PRINT, None, OPENAI_API_KEY=KEY)
    assert _bash_output(out).startswith("openai=unset")
    assert "a project may not set secrets.pass_to_commands" in out.stdout
