"""``zpi-host chat`` on a real pseudo-terminal: prompts, slash commands, Ctrl-C, Ctrl-D; and
approvals asked on the terminal while the live display runs."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

from tests.helpers.terminal import Terminal

EXE = shutil.which("zpi-host") or str(Path(sys.executable).with_name("zpi-host"))
#: prompt-toolkit turns bracketed paste on each time it waits for a line
READY = "\x1b[?2004h"


class Chat:
    """A chat process and the number of prompts answered so far."""

    def __init__(self, tmp_path: Path, *args: str, command: tuple[str, ...] = ("chat",),
                 **env_extra: str):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("ZPI_", "OPENAI_", "ANTHROPIC_")) and k != "NO_COLOR"}
        env.update({"HOME": str(tmp_path / "home"), "ZPI_AGENT_DIR": str(tmp_path / "agent"),
                    "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1", **env_extra})
        self.term = Terminal([EXE, *command, *args], cwd=tmp_path, env=env)
        self.prompts = 0

    def say(self, text: str) -> None:
        """Wait for the next prompt, then type ``text`` and Enter."""
        self.prompts += 1
        self.term.wait_for_raw(READY, self.prompts)
        self.term.send(text + "\r")

    def expect(self, pattern: str) -> str:
        return self.term.read_until(pattern)

    def leave(self) -> int:
        self.prompts += 1
        self.term.wait_for_raw(READY, self.prompts)
        self.term.send("\x04")  # Ctrl-D
        return self.term.finish()


def script(tmp_path: Path, *turns: dict) -> str:
    path = tmp_path / "script.jsonl"
    path.write_text("".join(json.dumps(turn) + "\n" for turn in turns))
    return f"scripted:{path}"


def test_a_chat_runs_prompts_in_one_session_and_ctrl_c_stops_only_the_run(tmp_path):
    model = script(tmp_path, {"text": "Hello! How can I help?"},
                   {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 30"}}]},
                   {"text": "still here"})
    chat = Chat(tmp_path, "--model", model, "--allow", "bash")
    header = chat.expect(r"session ([0-9a-f-]{36})")
    session_id = re.search(r"session ([0-9a-f-]{36})", header).group(1)
    chat.say("hi")
    chat.expect(r"Hello! How can I help\?")
    chat.say("wait a while")
    chat.expect(r"⠋ bash sleep 30 · ")
    chat.term.send("\x03")  # Ctrl-C: SIGINT for the run
    chat.expect(r"✗ bash sleep 30 · error: interrupted")
    chat.expect(r"interrupted: the run stopped; the session goes on")
    # the Ctrl-C line clears the spinner first: it stands alone on the screen
    assert "\r\x1b[Kzpi-host: SIGINT: stopping the run" in chat.term.output
    assert "zpi-host: SIGINT: stopping the run (again to exit at once)" in chat.term.screen
    chat.say("are you there?")
    chat.expect(r"still here")
    chat.say("/cost")
    chat.expect(r"tokens: \d+ in, \d+ out, .*cost \$0\.0000")
    assert chat.leave() == 0
    (transcript,) = (tmp_path / "agent/sessions").rglob("*.jsonl")
    assert transcript.stem == session_id
    text = transcript.read_text()
    assert all(p in text for p in ("hi", "wait a while", "are you there?"))


def test_slash_commands_and_plugin_commands(tmp_path):
    (tmp_path / ".zpi/commands").mkdir(parents=True)
    (tmp_path / ".zpi/commands/shout.md").write_text(
        "---\ndescription: say it loudly\n---\nShout $ARGUMENTS.\n")
    model = script(tmp_path, {"text": "LOUD"})
    chat = Chat(tmp_path, "--model", model, "--allow", "bash(git status:*)")
    chat.say("/help")
    chat.expect(r"/compact \[TEXT\]")
    chat.expect(r"/shout\s+say it loudly")
    chat.say("/permissions")
    chat.expect(r"mode: ask")  # the CLI's default: reads run, edits and commands ask
    shown = chat.expect(r"rule\(s\) of the host itself")
    assert re.search(r"allow:\s+'bash\(git status:\*\)'", shown) and "spill" not in \
        shown.split("allow:")[1].split("(and")[0]
    chat.say("/context")
    chat.expect(r"context: .*tokens")
    chat.say("/model")
    chat.expect(r"model: scripted:")
    chat.say("/shout hello")
    chat.expect(r"LOUD")
    chat.say("/clear")
    chat.expect(r"new session [0-9a-f-]{36}")
    chat.say("/resume")
    chat.expect(r"\d+ msgs\s+Shout hello")
    assert chat.leave() == 0


def test_zpi_host_alone_on_a_terminal_opens_a_chat(tmp_path):
    chat = Chat(tmp_path, "--cwd", str(tmp_path), command=(),
                ZPI_MODEL=script(tmp_path, {"text": "hi"}))
    chat.expect(r"zpi-host chat · scripted:.* · /help for commands, Ctrl-D to leave")
    assert chat.leave() == 0


def test_ask_mode_asks_on_the_terminal_while_the_display_waits(tmp_path):
    model = script(tmp_path, {"tool_calls": [{"name": "bash", "arguments": {
        "command": "echo approved-and-ran"}}]}, {"text": "done"})
    term = Chat(tmp_path, "--permission-mode", "ask", "--model", model, "go",
                command=("run",)).term
    term.read_until(r"allow\? \[y\]es")
    term.send("y\r")
    assert term.finish() == 0
    assert "│ approved-and-ran" in term.text and term.screen[-2] == "done"
    assert re.fullmatch(r"2 turns · 0 in, 0 out tokens · \$0\.0000 · \d+\.\ds", term.screen[-1])


def test_the_approval_question_shows_every_control_character_of_the_command(tmp_path):
    """A carriage return and an erase-line in a command would redraw the question so that
    the person approves "echo hello" while "rm -rf" runs: the question shows them instead."""
    model = script(tmp_path, {"tool_calls": [{"name": "bash", "arguments": {
        "command": "touch gone\r\u001b[2Kecho hello"}}]}, {"text": "done"})
    term = Chat(tmp_path, "--permission-mode", "ask", "--model", model, "go",
                command=("run",)).term
    term.read_until(r"allow\? \[y\]es")
    assert "bash:\r\n    touch gone^M^[[2Kecho hello\r\n" in term.output
    assert "\x1b[2K" not in term.output
    term.send("n\r")
    assert term.finish() == 0
    assert not (tmp_path / "gone").exists()


def test_a_chat_asks_before_a_command_by_default_and_shows_every_line(tmp_path):
    """The CLI's default mode is Claude Code's: a command asks; the question shows each line
    of a multi-line command (the second one would otherwise run unseen)."""
    model = script(tmp_path, {"tool_calls": [{"name": "bash", "arguments": {
        "command": "echo build step\ntouch important.txt"}}]}, {"text": "done"})
    chat = Chat(tmp_path, "--model", model)
    chat.say("build")
    chat.prompts += 1
    chat.term.wait_for_raw(READY, chat.prompts)
    shown = chat.expect(r"allow\? \[y\]es")
    assert re.search(r"bash:\s*\n\s+echo build step\s*\n\s+touch important\.txt", shown)
    chat.term.send("n\r")
    chat.expect(r"done")
    assert chat.leave() == 0
    assert not (tmp_path / "important.txt").exists()


def test_a_run_at_a_terminal_asks_about_an_edit_with_its_diff(tmp_path):
    """The default mode at a terminal: the edit asks, and the question shows what it would
    change; the read before it ran unasked."""
    (tmp_path / "greet.py").write_text('def greet():\n    return "Helo"\n')
    model = script(tmp_path,
                   {"tool_calls": [{"name": "read", "arguments": {"path": "greet.py"}}]},
                   {"tool_calls": [{"name": "edit", "arguments": {"path": "greet.py", "edits": [
                       {"old_text": '"Helo"', "new_text": '"Hello"'}]}}]},
                   {"text": "fixed"})
    term = Chat(tmp_path, "--model", model, "go", command=("run",)).term
    shown = term.read_until(r"allow\? \[y\]es")
    assert re.search(r"edit:\s*\n\s+greet\.py\s*\n\s+\+1 -1 lines \(.*greet\.py\)", shown)
    assert re.search(r'\n\s+-    return "Helo"\s*\n\s+\+    return "Hello"', shown)
    # the question's diff is coloured as the display's is
    assert '\x1b[31m-    return "Helo"\x1b[0m' in term.output
    assert '\x1b[32m+    return "Hello"\x1b[0m' in term.output
    term.send("y\r")
    assert term.finish() == 0
    assert '"Hello"' in (tmp_path / "greet.py").read_text()


def test_a_chat_asks_for_approval_at_its_prompt(tmp_path):
    model = script(tmp_path,
                   {"tool_calls": [{"name": "bash", "arguments": {"command": "echo ran-one"}}]},
                   {"text": "first done"},
                   {"tool_calls": [{"name": "bash", "arguments": {"command": "echo ran-two"}}]},
                   {"text": "second done"})
    chat = Chat(tmp_path, "--permission-mode", "ask", "--model", model)
    chat.say("one")
    chat.prompts += 1  # the approval question is a prompt too
    chat.term.wait_for_raw(READY, chat.prompts)
    chat.expect(r"needs approval: .*\n.*allow\? \[y\]es")
    chat.term.send("y\r")
    chat.expect(r"│ ran-one")
    chat.expect(r"first done")
    chat.say("two")
    chat.prompts += 1
    chat.term.wait_for_raw(READY, chat.prompts)
    chat.term.send("\x03")  # Ctrl-C at the question: no
    chat.expect(r"✗ bash echo ran-two · error: .*denied by the user")
    chat.expect(r"second done")
    assert chat.leave() == 0
    assert "│ ran-two" not in chat.term.text  # the denied command never ran


def test_a_chat_asks_the_models_questions_at_its_prompt(tmp_path):
    """builtins:ask in a chat: the question and its options at the chat's prompt, a number
    picks one; Ctrl-C at the next question declines and the model is told nobody answered."""
    question = {"tool_calls": [{"name": "ask_user", "arguments": {"questions": [
        {"question": "Which colour?", "header": "Paint",
         "options": [{"label": "red"}, {"label": "blue", "description": "calm"}]}]}}]}
    model = script(tmp_path, question, {"text": "painted it"}, question, {"text": "guessed"})
    chat = Chat(tmp_path, "--model", model)
    chat.say("paint the shed")
    chat.prompts += 1  # the question is a prompt too
    chat.term.wait_for_raw(READY, chat.prompts)
    chat.expect(r"\[Paint\] Which colour\?\s+1\. red\s+2\. blue - calm\s+"
                r"Answer with a number, or type your own answer:")
    chat.term.send("2\r")
    chat.expect(r"painted it")
    chat.say("again")
    chat.prompts += 1
    chat.term.wait_for_raw(READY, chat.prompts)
    chat.term.send("\x03")  # Ctrl-C at the question: nobody answers
    chat.expect(r"guessed")
    assert chat.leave() == 0
    (transcript,) = (tmp_path / "agent/sessions").rglob("*.jsonl")
    text = transcript.read_text()
    assert "Which colour? -> blue" in text
    assert "Nobody can answer questions" in text and "Ctrl-C or Ctrl-D at the question" in text


def test_init_in_a_chat_writes_agents_md_and_refuses_to_overwrite(tmp_path):
    model = script(tmp_path,
                   {"tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}]},
                   {"text": "# AGENTS.md\n\nChat-made."})
    chat = Chat(tmp_path, "--model", model, "--allow", "bash(ls)")
    chat.say("/help")
    chat.expect(r"/init\s+explore the project and write AGENTS\.md")
    chat.say("/init")
    chat.expect(r"Chat-made\.")
    chat.say("/init")
    chat.expect(r"error: .*AGENTS\.md already exists")
    assert chat.leave() == 0
    assert (tmp_path / "AGENTS.md").read_text() == "# AGENTS.md\n\nChat-made.\n"


def _untrusted_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A cloned repository whose ``.zcode/config.json`` switches on a hook writing a marker."""
    repo, marker = tmp_path / "repo", tmp_path / "MARKER"
    (repo / ".zcode").mkdir(parents=True)
    (repo / ".zcode/config.json").write_text(json.dumps({"hooks": {"enabled": True, "events": {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": f"touch {marker}"}]}]}}}))
    return repo, marker


def test_chat_asks_once_to_trust_a_project_showing_what_would_run(tmp_path):
    repo, marker = _untrusted_repo(tmp_path)
    model = script(tmp_path, {"text": "one"}, {"text": "two"})
    chat = Chat(tmp_path, "--cwd", str(repo), "--model", model)
    chat.expect(r"is not trusted\. Trusting it would run:")
    chat.expect(re.escape(f"touch {marker}"))
    chat.say("y")
    chat.expect(r"trusted .*recorded in your user settings")
    chat.say("hi")
    chat.expect(r"one")
    assert marker.exists()
    chat.say("/clear")  # the session is opened again: trusted now, not asked again
    chat.say("again")
    chat.expect(r"again[\s\S]*one")  # /clear starts the scripted model over
    assert chat.leave() == 0
    assert chat.term.text.count("Trusting it would run:") == 1
    settings = json.loads((tmp_path / "agent/settings.json").read_text())
    assert settings["trusted_projects"] == [str(repo.resolve())]


def test_chat_answered_no_goes_on_without_what_the_project_would_run(tmp_path):
    repo, marker = _untrusted_repo(tmp_path)
    model = script(tmp_path, {"text": "one"}, {"text": "two"})
    chat = Chat(tmp_path, "--cwd", str(repo), "--model", model)
    chat.expect(r"Trust this project and run them\?")
    chat.say("n")
    chat.expect(r"continuing without them")
    chat.say("hi")
    chat.expect(r"one")
    chat.say("/clear")  # not asked again in this chat
    chat.say("again")
    chat.expect(r"again[\s\S]*one")  # /clear starts the scripted model over
    assert chat.leave() == 0
    assert chat.term.text.count("Trusting it would run:") == 1
    assert not marker.exists()
    settings = tmp_path / "agent/settings.json"  # the shipped defaults: no trust recorded
    assert "trusted_projects" not in json.loads(settings.read_text())


def test_a_failed_model_switch_keeps_the_old_session(tmp_path):
    """``/model`` with a model that cannot be opened says why, and the chat goes on in the
    session it had (the old one is not closed before the new one opens)."""
    model = script(tmp_path, {"text": "an answer"})  # each opening replays the script
    chat = Chat(tmp_path, "--model", model)
    header = chat.expect(r"session ([0-9a-f-]{36})")
    session_id = re.search(r"session ([0-9a-f-]{36})", header).group(1)
    chat.say("hi")
    chat.expect(r"an answer")
    chat.say("/model nosuchprovider:nosuchmodel")
    chat.expect(r"error: .*nosuchprovider")
    chat.say("/model")
    chat.expect(r"model: scripted:")
    chat.say("still there?")
    shown = chat.expect(r"still there\?[\s\S]*an answer")
    assert "Traceback" not in shown and "AttributeError" not in shown
    assert chat.leave() == 0
    (transcript,) = (tmp_path / "agent/sessions").rglob("*.jsonl")
    assert transcript.stem == session_id
    assert "still there?" in transcript.read_text()


def test_tab_completes_commands_and_mentions_and_a_mention_sends_the_file(tmp_path):
    (tmp_path / "notes.txt").write_text("the secret word is kiwi\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src/app.py").write_text("print('hi')\n")
    model = script(tmp_path,
                   {"thinking": "The notes name a fruit.", "text": "It is kiwi.",
                    "usage": {"input_tokens": 900, "output_tokens": 5}},
                   {"text": "ok"})
    chat = Chat(tmp_path, "--model", model)
    chat.prompts += 1
    chat.term.wait_for_raw(READY, chat.prompts)
    chat.term.send("/mod\t")  # one command starts so: Tab completes it
    chat.expect(r"/model")
    chat.term.send("\r")
    chat.expect(r"model: scripted")
    chat.prompts += 1
    chat.term.wait_for_raw(READY, chat.prompts)
    chat.term.send("what does @no\t")
    chat.expect(r"@notes\.txt")
    chat.term.send(" say?\r")
    chat.expect(r"It is kiwi\.")
    chat.expect(r"1 turn · 900 in, 5 out tokens")  # the footer of each turn
    chat.say("/context")
    shown = chat.expect(r"tool_results: \d+")
    block = shown[shown.rindex("context: "):]
    total = int(re.search(r"context: (?:about )?(\d+) tokens", block).group(1))
    parts = [int(n) for n in re.findall(r"^\s+\w+: (\d+)\s*$", block, re.MULTILINE)]
    assert len(parts) == 4 and sum(parts) == total  # the categories add up to the total
    chat.prompts += 1
    chat.term.wait_for_raw(READY, chat.prompts)
    chat.term.send("\x0f")  # Ctrl-O: the last reasoning, whole
    chat.expect(r"The notes name a fruit\.")
    chat.prompts += 1  # the prompt is drawn again under what Ctrl-O printed
    chat.term.wait_for_raw(READY, chat.prompts)
    chat.term.send("@src/\t")
    chat.expect(r"@src/app\.py")
    chat.term.send("\r")
    chat.expect(r"\bok\b")
    assert chat.leave() == 0
    (transcript,) = (tmp_path / "agent/sessions").rglob("*.jsonl")
    text = transcript.read_text()
    assert "what does @notes.txt say?" in text
    assert '<file path=\\"notes.txt\\">\\nthe secret word is kiwi\\n</file>' in text
    assert '<file path=\\"src/app.py\\">' in text


def test_rewind_lists_the_prompts_and_puts_the_files_back(tmp_path):
    """/rewind: each prompt with how many files changed since, a number picks one, the files
    come back as they were before it (a file created since is deleted) and the chat says so;
    /rewind N picks directly. The chat's sessions keep checkpoints without any option."""
    (tmp_path / "notes.txt").write_text("original\n")
    model = script(
        tmp_path,
        {"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
        {"tool_calls": [{"name": "write", "arguments": {"path": "notes.txt",
                                                        "content": "first change\n"}}]},
        {"text": "changed it"},
        {"tool_calls": [{"name": "write", "arguments": {"path": "made.txt",
                                                        "content": "new\n"}},
                        {"name": "write", "arguments": {"path": "notes.txt",
                                                        "content": "second change\n"}}]},
        {"text": "changed more"})
    chat = Chat(tmp_path, "--model", model, "--permission-mode", "acceptEdits")
    chat.say("change the notes")
    chat.expect(r"changed it")
    chat.say("change them again")
    chat.expect(r"changed more")
    assert (tmp_path / "notes.txt").read_text() == "second change\n"
    chat.say("/rewind")
    chat.prompts += 1  # the choice is a prompt too
    chat.term.wait_for_raw(READY, chat.prompts)
    chat.expect(r"1\. change the notes  \(2 files since\)\s+2\. change them again  "
                r"\(2 files since\)\s+rewind to which prompt\? \[1-2, Enter: none\]")
    chat.term.send("2\r")
    chat.expect(r"rewound the files to before 'change them again':")
    chat.expect(r"deleted .*made\.txt \(created since\)")
    assert (tmp_path / "notes.txt").read_text() == "first change\n"
    assert not (tmp_path / "made.txt").exists()
    chat.say("/rewind 1")
    chat.expect(r"rewound the files to before 'change the notes':\s+restored .*notes\.txt")
    assert (tmp_path / "notes.txt").read_text() == "original\n"
    chat.say("/rewind 7")
    chat.expect(r"error: /rewind: there is no prompt 7; give 1 to 2")
    chat.say("/rewind")
    chat.prompts += 1
    chat.term.wait_for_raw(READY, chat.prompts)
    chat.term.send("\r")  # Enter alone: nothing
    chat.expect(r"nothing rewound")
    assert chat.leave() == 0
    assert (tmp_path / "notes.txt").read_text() == "original\n"
