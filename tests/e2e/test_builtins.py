"""Whole-process runs of the zpi-builtins services through ``zpi-host run``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.helpers.cli import EXE, clean_environment, zpi
from tests.helpers.terminal import Terminal


def test_ask_title_notify_and_instructions_in_one_run(tmp_path):
    log = tmp_path / "notified.txt"
    agent = tmp_path / "agent"
    agent.mkdir()
    notify = [sys.executable, "-c",
              f"import sys; open({str(log)!r}, 'a').write(' | '.join(sys.argv[1:]))"]
    (agent / "settings.json").write_text(json.dumps({"plugins": {"builtins": {
        "notify": {"command": notify, "min_run_seconds": 0},
        "instructions": {"disabled": ["git"]}}}}))
    script = tmp_path / "script.jsonl"
    turns = [{"tool_calls": [{"name": "ask_user", "arguments": {"questions": [
                 {"question": "Which colour?", "options": [{"label": "red"}]}]}}]},
             {"text": "I went with red."},
             {"purpose": "title", "text": "Choosing a colour"}]
    script.write_text("".join(json.dumps(t) + "\n" for t in turns))
    out = zpi(tmp_path, "run", "--model", f"scripted:{script}", "--output-format", "json",
              "paint the shed")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["result"] == "I went with red." and result["num_turns"] == 2
    listing = json.loads(zpi(tmp_path, "sessions", "list", "--json").stdout)
    assert [s["title"] for s in listing] == ["Choosing a colour"]
    transcript = next((agent / "sessions").rglob("*.jsonl")).read_text()
    assert "Which colour?" in transcript and "Nobody can answer questions" in transcript
    assert "# Editing" in transcript and "# Git safety" not in transcript  # the snapshot
    assert log.read_text().startswith("zpi | the run finished after")


def test_on_a_terminal_the_user_answers_the_question(tmp_path):
    """stdin and stderr on a pseudo-terminal: the question is shown there and the typed
    number picks the option."""
    import pty
    import select

    script = tmp_path / "script.jsonl"
    turns = [{"tool_calls": [{"name": "ask_user", "arguments": {"questions": [
                 {"question": "Which colour?", "options": [{"label": "red"},
                                                           {"label": "blue"}]}]}}]},
             {"text": "ok"}]
    script.write_text("".join(json.dumps(t) + "\n" for t in turns))
    master, slave = pty.openpty()
    environ = clean_environment(tmp_path)
    process = subprocess.Popen(
        [EXE, "run", "--model", f"scripted:{script}", "--output-format", "json",
         "--permission-mode", "bypass", "pick"],
        stdin=slave, stderr=slave, stdout=subprocess.PIPE, cwd=tmp_path, env=environ,
        text=True)
    os.close(slave)
    shown = b""
    try:
        while b"Answer with a number" not in shown:
            ready, _, _ = select.select([master], [], [], 30)
            assert ready, f"no question within 30 s; saw {shown!r}"
            shown += os.read(master, 4096)
        os.write(master, b"2\n")
        stdout, _ = process.communicate(timeout=30)
        assert json.loads(stdout)["result"] == "ok"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)
    assert b"Which colour?" in shown and b"2. blue" in shown
    assert process.returncode == 0
    transcript = next((tmp_path / "agent" / "sessions").rglob("*.jsonl")).read_text()
    assert "Which colour? -> blue" in transcript


def test_init_through_zpi_host_run_writes_agents_md_and_refuses_a_second_time(tmp_path):
    (tmp_path / "README.md").write_text("# Demo\n")
    script = tmp_path / "script.jsonl"
    turns = [{"tool_calls": [{"name": "bash", "arguments": {"command": "ls"}},
                             {"name": "read", "arguments": {"path": "README.md"}}]},
             {"text": "# AGENTS.md\n\nDemo project; no tests yet."}]
    script.write_text("".join(json.dumps(t) + "\n" for t in turns))
    out = zpi(tmp_path, "run", "--allow", "bash(ls)", "--model", f"scripted:{script}", "/init")
    assert out.returncode == 0, out.stderr
    assert "denied" not in out.stderr
    assert (tmp_path / "AGENTS.md").read_text() == "# AGENTS.md\n\nDemo project; no tests yet.\n"
    again = zpi(tmp_path, "run", "--model", f"scripted:{script}", "/init")
    assert again.returncode == 1
    assert f"{tmp_path / 'AGENTS.md'} already exists" in again.stderr
    assert "/init --force" in again.stderr and "Traceback" not in again.stderr
    listing = zpi(tmp_path, "--list-plugins")
    assert any(line.startswith("builtins:init") and "commands: init" in line
               for line in listing.stdout.splitlines())


def test_on_a_terminal_notify_writes_its_osc9_sequence(tmp_path):
    """stderr on a pseudo-terminal is the notify service's terminal port: a run longer than
    the threshold (0 s here) ends with an OSC 9 desktop notification there."""
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_text(json.dumps({"plugins": {"builtins": {
        "notify": {"terminal": "osc9", "min_run_seconds": 0}}}}))
    script = tmp_path / "script.jsonl"
    script.write_text(json.dumps({"text": "all done"}) + "\n")
    environ = {**clean_environment(tmp_path), "ZPI_AGENT_DIR": str(agent), "TERM": "xterm"}
    term = Terminal([EXE, "run", "--model", f"scripted:{script}", "hi"], cwd=tmp_path,
                    env=environ)
    assert term.finish() == 0
    assert "\x1b]9;zpi: the run finished after 0 s\x07" in term.output
    assert "all done" in term.text


def test_a_scripted_model_delegates_with_the_task_tool(tmp_path):
    (tmp_path / ".zpi" / "agents").mkdir(parents=True)
    (tmp_path / ".zpi" / "agents" / "counter.md").write_text(
        "---\ndescription: counts things\ntools: read\n---\nYou count things.\n")
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    script = tmp_path / "script.jsonl"
    turns = [{"tool_calls": [{"name": "task", "arguments": {
                 "agent_type": "counter", "description": "count lines",
                 "prompt": "How many lines has a.txt?"}}]},
             {"tool_calls": [{"name": "read", "arguments": {"path": "a.txt"}}]},
             {"text": "a.txt has 2 lines"},
             {"text": "The counter says: 2 lines."}]
    script.write_text("".join(json.dumps(t) + "\n" for t in turns))
    out = zpi(tmp_path, "run", "--model", f"scripted:{script}", "--output-format", "json",
              "--allow", "agent:counter", "count the lines of a.txt")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["result"] == "The counter says: 2 lines." and result["num_turns"] == 2
    (parent,) = (tmp_path / "agent" / "sessions").glob("*/*.jsonl")
    (child,) = (parent.parent / parent.stem / "subagents").glob("agent-*.jsonl")
    records = [json.loads(line) for line in parent.read_text().splitlines()]
    (call,) = [r for r in records if r["type"] == "tool_result"]
    assert call["message"]["content"][0]["text"] == "a.txt has 2 lines"
    stop = [r["data"] for r in records if r["type"] == "custom"][-1]
    assert stop["event"] == "stop" and child.name == f"agent-{stop['agent_id']}.jsonl"
    assert stop["tool_call_id"] == call["callId"]
    kinds = [(r["type"], r.get("name")) for r in map(json.loads, child.read_text().splitlines())]
    assert kinds == [("header", None), ("custom", None), ("user", None), ("assistant", None),
                     ("tool_use", "read"), ("tool_result", None), ("assistant", None)]
