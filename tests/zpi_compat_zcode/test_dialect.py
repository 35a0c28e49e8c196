"""ZCode's dialect applied by the shared engine, unit by unit: parsing (events, handler types,
timeouts, matchers), answers (output rules), the event JSON and the output cap. Each check is
next to the Claude behaviour it differs from, so both dialects stay pinned."""

from __future__ import annotations

from pathlib import Path

import pytest

from zpi_compat_claude.dialect import CLAUDE
from zpi_compat_claude.hooks import parse_hooks
from zpi_compat_claude.hooks.engine import camel_case, cap_output, project_dir_filled
from zpi_compat_claude.hooks.output import interpret
from zpi_compat_claude.hooks.runner import CommandOutcome
from zpi_compat_claude.manifest import ManifestError, read_manifest, resolve_component
from zpi_compat_zcode.dialect import ZCODE


def ok(stdout: str) -> CommandOutcome:
    return CommandOutcome(0, stdout)


def handlers(config, event="PreToolUse"):
    return [h for group in config.events[event] for h in group.handlers]


# ------------------------------------------------------------------------------ parsing


def test_process_and_command_handlers_and_their_timeouts():
    config, problems = parse_hooks({"PreToolUse": [{"hooks": [
        {"type": "process", "command": "python3", "args": ["a.py", "--x"], "timeoutMs": 1500},
        {"type": "command", "command": "echo hi", "timeout": 5},
        {"type": "command", "command": "echo both", "timeout": 5, "timeoutMs": 250},
        {"type": "command", "command": "echo off", "enabled": False},
    ]}]}, "w", ZCODE)
    assert problems == []
    process, shell, both = handlers(config)
    assert (process.command, process.args, process.timeout_s) == ("python3", ("a.py", "--x"),
                                                                  1.5)
    assert (shell.args, shell.timeout_s) == (None, 5.0)
    assert both.timeout_s == 0.25  # timeoutMs wins


def test_claude_has_no_process_handlers_nor_timeout_ms():
    config, problems = parse_hooks({"PreToolUse": [{"hooks": [
        {"type": "process", "command": "python3"},
        {"type": "command", "command": "echo", "timeoutMs": 250, "enabled": False}]}]},
        "w", CLAUDE)
    assert "unknown handler type 'process'" in problems[0]
    assert "unknown field 'enabled' ignored" in problems[1]
    assert "unknown field 'timeoutMs' ignored" in problems[2]
    (only,) = handlers(config)
    assert only.timeout_s is None


@pytest.mark.parametrize("args", ["a.py", ["a.py", 3]])
def test_process_args_must_be_a_list_of_strings(args):
    config, problems = parse_hooks({"Stop": [{"hooks": [
        {"type": "process", "command": "python3", "args": args}]}]}, "w", ZCODE)
    assert config.events == {} and "\"args\" must be a list of strings" in problems[0]


def test_only_the_seven_events():
    data = {event: [{"hooks": [{"type": "command", "command": "true"}]}] for event in (
        "SessionEnd", "PreCompact", "SubagentStop", "Stop")}
    config, problems = parse_hooks(data, "w", ZCODE)
    assert config.event_names() == ["Stop"]
    assert len(problems) == 3 and all("is not a ZCode event" in p for p in problems)
    claude, none = parse_hooks(data, "w", CLAUDE)
    assert none == [] and len(claude.event_names()) == 4


def test_matchers_exact_lists_regexes_and_the_agent_alias():
    config, problems = parse_hooks({"PreToolUse": [
        {"matcher": "Read, Grep", "hooks": [{"type": "command", "command": "a"}]},
        {"matcher": "Agent", "hooks": [{"type": "command", "command": "b"}]},
        {"matcher": "Ta.*", "hooks": [{"type": "command", "command": "c"}]},
        {"matcher": "(", "hooks": [{"type": "command", "command": "d"}]}]}, "w", ZCODE)
    spaced, agent, regex = config.events["PreToolUse"]
    assert "matcher '(' is not a valid regular expression" in problems[0]
    assert spaced.matcher.kind == "regex"  # ZCode: only letters, digits, _ and | are a list
    assert agent.matcher.matches("Task") and agent.matcher.matches("Agent")
    assert regex.matcher.matches("Agent")  # tried on the alias too
    claude, _ = parse_hooks({"PreToolUse": [
        {"matcher": "Read, Grep", "hooks": [{"type": "command", "command": "a"}]},
        {"matcher": "Agent", "hooks": [{"type": "command", "command": "b"}]}]}, "w", CLAUDE)
    names, claude_agent = claude.events["PreToolUse"]
    # Claude: Agent (the current name) and Task (what hooks are shown) are one tool too
    assert names.matcher.kind == "names" and claude_agent.matcher.matches("Task")


# ------------------------------------------------------------------------------ answers


def test_plain_stdout_never_reaches_the_model():
    assert interpret("SessionStart", ok("some context\n"), ZCODE).contexts == []
    assert interpret("UserPromptSubmit", ok("more\n"), ZCODE).contexts == []
    assert interpret("SessionStart", ok("some context\n"), CLAUDE).contexts == ["some context"]


@pytest.mark.parametrize("key", ["additionalContext", "additional_context"])
def test_top_level_additional_context(key):
    answer = ok(f'{{"{key}": "look here"}}')
    assert interpret("PostToolUse", answer, ZCODE).contexts == ["look here"]
    assert interpret("PostToolUse", answer, CLAUDE).contexts == []


def test_user_prompt_continue_false_blocks_the_prompt_only():
    answer = ok('{"continue": false, "reason": "no secrets"}')
    zcode = interpret("UserPromptSubmit", answer, ZCODE)
    assert (zcode.block, zcode.stop, zcode.reason) == (True, False, "no secrets")
    claude = interpret("UserPromptSubmit", answer, CLAUDE)
    assert (claude.block, claude.stop) == (False, True)
    elsewhere = interpret("PreToolUse", answer, ZCODE)
    assert elsewhere.stop  # continue: false still stops the run from other events


def test_post_tool_use_cannot_replace_the_output():
    answer = ok('{"hookSpecificOutput": {"hookEventName": "PostToolUse", '
                '"updatedToolOutput": "new"}}')
    zcode = interpret("PostToolUse", answer, ZCODE)
    assert zcode.updated_output is None
    assert zcode.problems == ["ZCode hooks cannot replace a tool's output: updatedToolOutput "
                              "ignored"]
    assert interpret("PostToolUse", answer, CLAUDE).updated_output == "new"


def test_output_over_the_cap_is_cut_and_said():
    big = '{"additionalContext": "' + "x" * 40_000 + '"}'
    capped = cap_output(ok(big), ZCODE.output_cap)
    assert len(capped.stdout.encode()) == 32 * 1024
    assert capped.dropped_bytes == len(big) - 32 * 1024
    result = interpret("SessionStart", capped, ZCODE)
    assert result.contexts == [] and any("printed invalid JSON" in p for p in result.problems)
    assert any("over the capture limit" in p for p in result.problems)
    assert cap_output(ok(big), None).stdout == big
    assert cap_output(ok("{}"), 64).stdout == "{}"


# ------------------------------------------------------------------------------ input


def test_camel_case_twins_and_project_dir_in_argv(tmp_path):
    assert [camel_case(k) for k in ("session_id", "hook_event_name", "cwd", "tool_use_id")] \
        == ["sessionId", "hookEventName", "cwd", "toolUseId"]
    assert project_dir_filled(["${ZCODE_PROJECT_DIR}/x", "${CLAUDE_PROJECT_DIR}", "$HOME"],
                              tmp_path) == [f"{tmp_path}/x", str(tmp_path), "$HOME"]


# ------------------------------------------------------------------------------ manifests


def write_manifest(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text)


def test_manifest_lookup_order_and_name_rule(tmp_path):
    write_manifest(tmp_path, ".claude-plugin/plugin.json", '{"name": "claude-side"}')
    assert read_manifest(tmp_path, [], ZCODE).name == "claude-side"  # the fallback
    write_manifest(tmp_path, ".zcode-plugin/plugin.json", '{"name": "z.side_2", "author": "J"}')
    assert read_manifest(tmp_path, [], ZCODE).name == "z.side_2"
    assert read_manifest(tmp_path, [], CLAUDE).name == "claude-side"
    for bad in ("-leading", "UPPER", "a" * 129, "spa ce"):
        write_manifest(tmp_path, ".zcode-plugin/plugin.json", f'{{"name": "{bad}"}}')
        with pytest.raises(ManifestError, match="must be lowercase letters"):
            read_manifest(tmp_path, [], ZCODE)


def test_bare_component_paths_stay_inside(tmp_path):
    (tmp_path / "skills").mkdir()
    assert resolve_component(tmp_path, "skills", "skills", ZCODE) == tmp_path / "skills"
    assert resolve_component(tmp_path, "./skills", "skills", ZCODE) == tmp_path / "skills"
    for escape in ("../x", "skills/../../x"):
        with pytest.raises(ManifestError, match="leads outside the plugin folder"):
            resolve_component(tmp_path, escape, "skills", ZCODE)
    for absolute in ("/etc", "~/x"):
        with pytest.raises(ManifestError, match="must be relative to the plugin folder"):
            resolve_component(tmp_path, absolute, "skills", ZCODE)
    with pytest.raises(ManifestError, match=r"must start with '\./'"):
        resolve_component(tmp_path, "skills", "skills", CLAUDE)
