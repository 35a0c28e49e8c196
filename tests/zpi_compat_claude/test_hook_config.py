"""Parsing hooks.json, inline and settings hooks: everything usable is kept, every problem is a
diagnostic naming where it is."""

from __future__ import annotations

import pytest

from zpi_compat_claude.hooks import EVENTS, HookConfig, parse_hooks
from zpi_compat_claude.hooks.config import MATCH_FIELD


def cmd(text="true", **extra):
    return {"type": "command", "command": text, **extra}


def test_a_hooks_file_parses_into_events_groups_and_handlers():
    config, problems = parse_hooks({
        "description": "demo",
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [cmd("a", timeout=5)]},
                           {"hooks": [cmd("b", shell="sh")]}],
            "SessionStart": [{"matcher": "startup", "hooks": [cmd("c", once=True)]}],
        },
    }, "plugin/hooks/hooks.json")
    assert problems == []
    assert config.description == "demo"
    assert config.event_names() == ["SessionStart", "PreToolUse"]
    first, second = config.events["PreToolUse"]
    assert first.matcher.kind == "names" and second.matcher.kind == "all"
    (handler,) = first.handlers
    assert (handler.command, handler.timeout_s, handler.shell) == ("a", 5.0, "bash")
    assert handler.where == "plugin/hooks/hooks.json: hooks.PreToolUse[0].hooks[0]"
    assert second.handlers[0].shell == "sh"
    assert config.events["SessionStart"][0].handlers[0].once


def test_the_event_mapping_itself_is_accepted_as_from_settings():
    config, problems = parse_hooks({"Stop": [{"hooks": [cmd()]}]}, "settings.json")
    assert problems == [] and config.event_names() == ["Stop"]


def test_every_event_is_known_with_its_match_field():
    assert set(EVENTS) == set(MATCH_FIELD)
    assert MATCH_FIELD["PreToolUse"] == "tool_name" and MATCH_FIELD["Stop"] is None


@pytest.mark.parametrize(("data", "expected"), [
    ([], "hooks must be a JSON object, got list"),
    ({"hooks": []}, '"hooks" must be an object mapping event names'),
    ({"hooks": {"Stop": {}}}, "hooks.Stop: must be a list of matcher groups"),
    ({"hooks": {}, "extra": 1}, "unknown top-level field 'extra' ignored"),
    ({"hooks": {}, "description": 3}, '"description" must be a string'),
])
def test_bad_shapes_are_diagnostics(data, expected):
    config, problems = parse_hooks(data, "where")
    assert not config
    assert any(expected in p for p in problems), problems
    assert all(p.startswith("where: ") for p in problems)


def test_unknown_and_claude_only_events_are_reported():
    config, problems = parse_hooks({"hooks": {
        "PostToolUsed": [{"hooks": [cmd()]}],
        "Setup": [{"hooks": [cmd()]}],
        "Stop": [{"hooks": [cmd()]}],
    }}, "w")
    assert config.event_names() == ["Stop"]
    assert "unknown hook event 'PostToolUsed' (did you mean PostToolUse?)" in problems[0]
    assert "Setup is a Claude Code event this host does not have" in problems[1]


def test_an_invalid_regex_skips_only_its_group():
    config, problems = parse_hooks({"PreToolUse": [
        {"matcher": "Bash(", "hooks": [cmd("bad")]},
        {"matcher": "Bash", "hooks": [cmd("good")]},
    ]}, "w")
    (group,) = config.events["PreToolUse"]
    assert group.handlers[0].command == "good"
    assert len(problems) == 1 and "PreToolUse[0]: matcher 'Bash(' is not a valid" in problems[0]
    assert "handlers are skipped" in problems[0]


@pytest.mark.parametrize("kind", ["agent", "mcp_tool"])
def test_other_handler_types_are_not_supported_and_said_so(kind):
    config, problems = parse_hooks({"Stop": [{"hooks": [{"type": kind, "url": "x"}, cmd()]}]},
                                   "w")
    assert len(config.events["Stop"][0].handlers) == 1
    assert problems == [f"w: hooks.Stop[0].hooks[0]: handler type {kind!r} is not supported by "
                        "this host (only \"command\" and \"http\" and \"prompt\" handlers "
                        "run); skipped"]


def test_http_and_prompt_handlers_are_read():
    config, problems = parse_hooks({"Stop": [{"hooks": [
        {"type": "http", "url": "http://127.0.0.1:1/h", "headers": {"X-Token": "$TOKEN"},
         "allowedEnvVars": ["TOKEN"], "timeout": 5},
        {"type": "prompt", "prompt": "Done? $ARGUMENTS", "model": "fast", "extra": 1},
        {"type": "http", "url": "ftp://x"},
        {"type": "http", "url": "http://x", "headers": ["bad"]},
    ]}]}, "w")
    http, prompt, no_headers = config.events["Stop"][0].handlers
    assert (http.kind, http.command, http.headers, http.allowed_env, http.timeout_s) == (
        "http", "http://127.0.0.1:1/h", (("X-Token", "$TOKEN"),), ("TOKEN",), 5.0)
    assert (prompt.kind, prompt.command, prompt.model, prompt.timeout_s) == (
        "prompt", "Done? $ARGUMENTS", "fast", 30.0)
    assert no_headers.headers == ()
    text = "\n".join(problems)
    assert "unknown field 'extra' ignored" in text
    assert '"url" must start with http:// or https://' in text
    assert '"headers" must map names to text' in text


@pytest.mark.parametrize(("handler", "expected", "kept"), [
    ({"type": "shell", "command": "x"}, "unknown handler type 'shell'", False),
    ({"command": "x"}, "unknown handler type None", False),
    ({"type": "command"}, '"command" must be a non-empty string', False),
    ({"type": "command", "command": "  "}, '"command" must be a non-empty string', False),
    ("echo", "a handler must be an object", False),
    (cmd(shell="powershell"), "shell 'powershell' is not supported", False),
    (cmd(timeout=0), '"timeout" must be a number of seconds greater than 0', True),
    (cmd(timeout="5"), '"timeout" must be a number', True),
    (cmd(once="yes"), '"once" must be true or false', True),
    (cmd(extra=1), "unknown field 'extra' ignored", True),
    (cmd(**{"async": "yes"}), '"async" must be true or false', True),
    (cmd(**{"asyncRewake": True}), '"asyncRewake" is not supported', True),
    (cmd(**{"if": 3}), '"if" must be a permission rule', True),
    (cmd(**{"if": "Bash(git"}), '"if" must be a permission rule', True),
])
def test_bad_handlers(handler, expected, kept):
    config, problems = parse_hooks({"PreToolUse": [{"hooks": [handler]}]}, "w")
    assert any(expected in p for p in problems), problems
    assert bool(config) is kept
    if kept:  # a bad timeout falls back to the default (None: the plugin's)
        assert config.events["PreToolUse"][0].handlers[0].timeout_s is None


def test_an_if_rule_is_kept_on_its_handler():
    config, problems = parse_hooks({"PostToolUse": [{"matcher": "Bash", "hooks": [
        cmd(**{"if": "Bash(git commit:*)"}), cmd()]}]}, "w")
    assert problems == []
    assert [h.condition for h in config.events["PostToolUse"][0].handlers] == [
        "Bash(git commit:*)", None]


def test_async_handlers_are_marked_to_run_in_the_background():
    config, problems = parse_hooks({"PostToolUse": [{"hooks": [cmd(**{"async": True}),
                                                               cmd()]}]}, "w")
    assert problems == []
    assert [h.run_async for h in config.events["PostToolUse"][0].handlers] == [True, False]


def test_bad_groups():
    _, problems = parse_hooks({"PreToolUse": [
        "Bash", {"matcher": 3, "hooks": [cmd()]}, {"matcher": "Bash"},
        {"matcher": "Bash", "hooks": [cmd()], "extra": True},
    ]}, "w")
    assert "a matcher group must be an object" in problems[0]
    assert '"matcher" must be a string, got int' in problems[1]
    assert '"hooks" must be a list of handlers' in problems[2]
    assert "unknown field 'extra' ignored" in problems[3]


def test_a_matcher_on_an_event_without_one_is_ignored_with_a_note():
    config, problems = parse_hooks({"Stop": [{"matcher": "Bash", "hooks": [cmd()]}]}, "w")
    assert config.events["Stop"][0].matcher.kind == "all"
    assert "Stop has no matcher; 'Bash' is ignored" in problems[0]
    _, quiet = parse_hooks({"UserPromptSubmit": [{"matcher": "*", "hooks": [cmd()]}]}, "w")
    assert quiet == []


def test_groups_without_usable_handlers_leave_no_event():
    config, _ = parse_hooks({"Stop": [{"hooks": [{"type": "http"}]}], "SessionEnd": []}, "w")
    assert not config and config.event_names() == []


def test_none_is_an_empty_configuration():
    assert parse_hooks(None, "w") == (HookConfig(), [])


def test_configurations_merge_in_order():
    a, _ = parse_hooks({"Stop": [{"hooks": [cmd("a")]}]}, "a")
    b, _ = parse_hooks({"description": "b", "hooks": {
        "Stop": [{"hooks": [cmd("b")]}], "SessionEnd": [{"hooks": [cmd("c")]}]}}, "b")
    merged = a.merged(b)
    assert [g.handlers[0].command for g in merged.events["Stop"]] == ["a", "b"]
    assert merged.event_names() == ["Stop", "SessionEnd"] and merged.description == "b"
