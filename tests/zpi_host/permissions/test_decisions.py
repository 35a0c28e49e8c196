"""Permission decisions: modes, deny/ask/allow rules, the evaluation order, the approver, other
dimensions, settings and denial records."""

from __future__ import annotations

import io
from typing import Any

import pytest
from helpers.permission_checks import (
    BASH,
    EDIT,
    READ,
    WRITE,
    check,
    plugin_tool,
    policy,
)

from zpi_host.contract.decisions import CombinedToolDecision, ToolDecision
from zpi_host.permissions import (
    NO_APPROVER,
    Denial,
    PermissionAllow,
    PermissionConfigError,
    PermissionContext,
    PermissionDeny,
    PermissionPolicy,
    PermissionRules,
    WorkspaceRoots,
    build_policy,
    summarize_input,
)
from zpi_host.permissions.approver import terminal_approver
from zpi_host.tools.base import ToolCall

pytestmark = pytest.mark.anyio


# --------------------------------------------------------------------------- modes

INSIDE_CALLS = {"read": (READ, {"path": "src/a.py"}), "write": (WRITE, {"path": "new.txt"}),
                "edit": (EDIT, {"path": "src/a.py"}), "bash": (BASH, {"command": "ls"})}
MODE_MATRIX = {
    "default": {"read": "allow", "write": "allow", "edit": "allow", "bash": "allow"},
    "ask": {"read": "allow", "write": "deny", "edit": "deny", "bash": "deny"},
    "plan": {"read": "allow", "write": "deny", "edit": "deny", "bash": "deny"},
    "bypass": {"read": "allow", "write": "allow", "edit": "allow", "bash": "allow"},
}


@pytest.mark.parametrize("mode", list(MODE_MATRIX))
@pytest.mark.parametrize("tool_name", list(INSIDE_CALLS))
async def test_each_mode_with_read_only_and_side_effect_tools(ws, mode, tool_name):
    tool, args = INSIDE_CALLS[tool_name]
    result = await check(policy(ws, mode), tool, **args)
    assert result.behavior == MODE_MATRIX[mode][tool_name]
    if result.behavior == "deny":
        assert result.source == "mode"
    if mode == "ask" and result.behavior == "deny":
        assert "ask mode" in result.reason and NO_APPROVER in result.reason
    if mode == "plan" and result.behavior == "deny":
        assert "plan mode runs only read-only tools" in result.reason


@pytest.mark.parametrize("mode", ["default", "ask", "plan"])
async def test_plugin_side_effect_tool_follows_the_mode(ws, mode):
    result = await check(policy(ws, mode), plugin_tool("deploy"), target="prod")
    assert result.behavior == ("allow" if mode == "default" else "deny")
    reader = await check(policy(ws, mode), plugin_tool("lookup", read_only=True), q="x")
    assert reader.allowed


@pytest.mark.parametrize(("mode", "expected"), [
    ("default", "deny"), ("ask", "deny"), ("plan", "deny"), ("bypass", "allow")])
async def test_outside_path_per_mode(ws, outside, mode, expected):
    secret = outside / "secret.txt"
    result = await check(policy(ws, mode), READ, path=str(secret))
    assert result.behavior == expected
    if expected == "deny":
        assert result.source == "path"
        assert str(secret) in result.reason and str(ws) in result.reason
        assert f"--add-dir {outside}" in result.reason
        assert f"read({outside}/**)" in result.reason and NO_APPROVER in result.reason


async def test_mode_is_validated(ws):
    with pytest.raises(PermissionConfigError, match="unknown permission mode 'yolo'"):
        policy(ws, "yolo")
    p = policy(ws)
    p.mode = "plan"
    with pytest.raises(PermissionConfigError, match="default, ask, plan, bypass"):
        p.mode = "nope"  # type: ignore[assignment]


# --------------------------------------------------------------------------- deny / ask / allow


@pytest.mark.parametrize("mode", ["default", "ask", "plan", "bypass"])
async def test_deny_rules_apply_in_every_mode(ws, mode):
    p = policy(ws, mode, deny=("bash(rm:*)", "read(src/nested/**)"))
    result = await check(p, BASH, command="rm -rf build")
    assert (result.behavior, result.source) == ("deny", "rule")
    assert "bash(rm:*)" in result.reason and "option deny[0]" in result.reason
    read = await check(p, READ, path="src/nested/b.py")
    assert (read.behavior, read.source) == ("deny", "rule")
    assert (await check(p, READ, path="src/a.py")).allowed


async def test_deny_rule_finds_a_command_inside_a_compound_line(ws):
    p = policy(ws, "bypass", deny=("bash(git push:*)",))
    for command in ("git status && git push origin", "ls; git push", "echo $(git push)",
                    "FOO=1 git   push --force", "cd x | git push"):
        assert not (await check(p, BASH, command=command)).allowed, command
    assert (await check(p, BASH, command="git pushx")).allowed


async def test_deny_rule_matches_a_symlink_by_its_own_name(ws, outside):
    (ws / "link.txt").symlink_to(outside / "secret.txt")
    (ws / "alias.py").symlink_to(ws / "src" / "a.py")
    p = policy(ws, "bypass", deny=("read(link.txt)", "read(src/a.py)"))
    assert (await check(p, READ, path="link.txt")).source == "rule"
    assert (await check(p, READ, path="alias.py")).source == "rule"  # where it points


async def test_ask_rules_ask_and_without_approver_deny_saying_so(ws):
    p = policy(ws, ask=("bash(git push:*)",))
    result = await check(p, BASH, command="git push origin main")
    assert (result.behavior, result.source) == ("deny", "rule")
    assert result.reason.endswith(NO_APPROVER)
    assert "bash(git push:*)" in result.reason
    assert (await check(p, BASH, command="git status")).allowed


async def test_ask_rules_are_ignored_in_bypass_mode(ws):
    assert (await check(policy(ws, "bypass", ask=("bash",)), BASH, command="ls")).allowed


async def test_ask_rule_beats_allow_rule(ws):
    asked: list[str] = []

    def approver(name, arguments, context):
        asked.append(context.reason)
        return False

    p = policy(ws, ask=("bash(git push:*)",), allow=("bash(git:*)",), can_use_tool=approver)
    result = await check(p, BASH, command="git push")
    assert (result.behavior, result.source) == ("deny", "callback") and len(asked) == 1


async def test_allow_rules_turn_a_mode_ask_into_allow(ws):
    p = policy(ws, "ask", allow=("write(src/**)", "bash(git status:*)"))
    result = await check(p, WRITE, path="src/new.py")
    assert (result.behavior, result.source) == ("allow", "rule")
    assert "write(src/**)" in result.reason
    assert (await check(p, BASH, command="git status -s")).allowed
    top = await check(p, WRITE, path="top.txt")
    assert (top.behavior, top.source) == ("deny", "mode")


async def test_allow_rule_turns_an_outside_path_ask_into_allow(ws, outside):
    p = policy(ws, allow=(f"read({outside}/**)",))
    result = await check(p, READ, path=str(outside / "secret.txt"))
    assert (result.behavior, result.source) == ("allow", "rule")


async def test_a_tool_wide_allow_rule_does_not_open_paths_outside(ws, outside):
    p = policy(ws, "ask", allow=("write",))
    assert (await check(p, WRITE, path="inside.txt")).allowed
    result = await check(p, WRITE, path=str(outside / "new.txt"))
    assert (result.behavior, result.source) == ("deny", "path")
    assert "ask mode" not in result.reason  # the mode's ask was lifted, the path's was not


async def test_outside_ask_in_ask_mode_needs_both_lifted(ws, outside):
    p = policy(ws, "ask", allow=(f"write({outside}/**)",))
    result = await check(p, WRITE, path=str(outside / "new.txt"))
    assert result.allowed and "write(" in result.reason


# --------------------------------------------------------------------------- evaluation order


async def test_hook_deny_beats_an_allow_rule_and_bypass(ws):
    p = policy(ws, "bypass", allow=("write",))
    result = await check(p, WRITE, hook=ToolDecision.deny("no writes today"), path="a.txt")
    assert (result.behavior, result.source) == ("deny", "hook")
    assert "no writes today" in result.reason


async def test_deny_rule_beats_hook_allow(ws):
    p = policy(ws, deny=("write(src/**)",))
    result = await check(p, WRITE, hook=ToolDecision.allow("fine"), path="src/x.py")
    assert (result.behavior, result.source) == ("deny", "rule")


async def test_hook_allow_skips_the_mode_and_the_path_check(ws, outside):
    plan = policy(ws, "plan")
    result = await check(plan, WRITE, hook=ToolDecision.allow("plugin says so"), path="a.txt")
    assert (result.behavior, result.source) == ("allow", "hook")
    read = await check(policy(ws), READ, hook=ToolDecision.allow(),
                       path=str(outside / "secret.txt"))
    assert read.allowed and read.reason == "allowed by a hook: no reason given"


async def test_hook_allow_still_meets_ask_rules(ws):
    p = policy(ws, ask=("bash",))
    result = await check(p, BASH, hook=ToolDecision.allow(), command="ls")
    assert (result.behavior, result.source) == ("deny", "rule")


async def test_hook_ask_goes_to_the_approver_even_with_an_allow_rule(ws):
    seen: list[PermissionContext] = []

    def approver(name, arguments, context):
        seen.append(context)
        return True

    hook = CombinedToolDecision("ask", updated_input=None)
    without = await check(policy(ws, allow=("bash",)), BASH, hook=hook, command="ls")
    assert (without.behavior, without.source) == ("deny", "hook")
    assert "a hook asks for approval" in without.reason and NO_APPROVER in without.reason
    with_approver = policy(ws, "bypass", allow=("bash",), can_use_tool=approver)
    result = await check(with_approver, BASH, hook=hook, command="ls")
    assert (result.behavior, result.source) == ("allow", "callback")
    assert seen[0].source == "hook"


async def test_hook_ask_loses_to_a_deny_rule(ws):
    p = policy(ws, deny=("bash",), can_use_tool=lambda *a: True)
    result = await check(p, BASH, hook=ToolDecision.ask("sure?"), command="ls")
    assert result.source == "rule"


async def test_checks_the_replaced_input_not_the_models(ws):
    p = policy(ws, deny=("bash(rm:*)",))
    call = ToolCall("c", "bash", {"command": "ls"})
    result = await p.check(BASH, call, {"command": "rm -rf /"})
    assert result.source == "rule"



# --------------------------------------------------------------------------- the approver


async def test_approver_allows_with_updated_input(ws):
    def approver(name, arguments, context):
        return PermissionAllow(updated_input={**arguments, "command": "git status"})

    p = policy(ws, "ask", can_use_tool=approver)
    result = await check(p, BASH, command="git status --porcelain")
    assert (result.behavior, result.source) == ("allow", "callback")
    assert result.updated_input == {"command": "git status"}


async def test_updated_input_meets_the_deny_rules_again(ws):
    p = policy(ws, "ask", deny=("bash(rm:*)",),
               can_use_tool=lambda n, a, c: PermissionAllow(updated_input={"command": "rm x"}))
    result = await check(p, BASH, command="ls")
    assert (result.behavior, result.source) == ("deny", "rule")


async def test_approver_denies_with_interrupt(ws):
    p = policy(ws, "ask", can_use_tool=lambda n, a, c: PermissionDeny("not now", interrupt=True))
    result = await check(p, WRITE, path="a.txt")
    assert (result.behavior, result.source, result.reason, result.interrupt) == (
        "deny", "callback", "not now", True)


@pytest.mark.parametrize(("answer", "allowed"), [(True, True), (False, False)])
async def test_approver_bool_answers(ws, answer, allowed):
    p = policy(ws, "ask", can_use_tool=lambda n, a, c: answer)
    result = await check(p, WRITE, path="a.txt")
    assert result.allowed is allowed and result.source == "callback"


@pytest.mark.parametrize("answer", ["yes", None, 1, {"behavior": "allow"},
                                    PermissionAllow(updated_input="rm")])  # type: ignore[arg-type]
async def test_approver_bad_answer_denies_naming_it(ws, answer):
    p = policy(ws, "ask", can_use_tool=lambda n, a, c: answer)
    result = await check(p, WRITE, path="a.txt")
    assert (result.behavior, result.source) == ("deny", "callback")
    named = "'rm'" if isinstance(answer, PermissionAllow) else repr(answer)[:20]
    assert named in result.reason


async def test_raising_approver_denies_with_the_error(ws):
    def approver(name, arguments, context):
        raise RuntimeError("UI went away")

    result = await check(policy(ws, "ask", can_use_tool=approver), BASH, command="ls")
    assert (result.behavior, result.source) == ("deny", "callback")
    assert "RuntimeError: UI went away" in result.reason


async def test_async_approver_and_its_context(ws):
    seen: list[tuple[str, dict[str, Any], PermissionContext]] = []

    async def approver(name, arguments, context):
        seen.append((name, arguments, context))
        return PermissionAllow()

    p = policy(ws, "ask", can_use_tool=approver)
    result = await check(p, BASH, command="git push origin main")
    assert result.allowed
    name, arguments, context = seen[0]
    assert (name, arguments) == ("bash", {"command": "git push origin main"})
    assert context.cwd == ws and context.mode == "ask" and context.call_id == "call-1"
    assert "ask mode" in context.reason and context.source == "mode"
    assert context.suggestions == ("bash(git push:*)",)


async def test_outside_path_context_suggests_a_rule_for_its_folder(ws, outside):
    seen: list[PermissionContext] = []

    def approver(name, arguments, context):
        seen.append(context)
        return False

    p = policy(ws, can_use_tool=approver)
    await check(p, READ, path=str(outside / "secret.txt"))
    assert seen[0].source == "path"
    assert seen[0].suggestions == (f"read({outside.resolve()}/**)",)
    assert seen[0].paths == (str((outside / "secret.txt").resolve()),)


async def test_approver_rules_are_remembered_for_the_session(ws):
    calls: list[str] = []

    def approver(name, arguments, context):
        calls.append(arguments["command"])
        return PermissionAllow(add_rules=context.suggestions)

    p = policy(ws, "ask", can_use_tool=approver)
    assert (await check(p, BASH, command="git push origin")).allowed
    second = await check(p, BASH, command="git push upstream")
    assert (second.allowed, second.source, calls) == (True, "rule", ["git push origin"])
    bad = policy(ws, "ask", can_use_tool=lambda n, a, c: PermissionAllow(add_rules=["b a d"]))
    result = await check(bad, BASH, command="ls")
    assert result.source == "callback" and "add_rules are invalid" in result.reason


async def test_no_approver_denies_with_the_documented_reason(ws):
    result = await check(policy(ws, "ask"), BASH, command="ls")
    assert result.reason == f"ask mode: every call of a tool with side effects needs " \
                            f"approval; {NO_APPROVER}"
    assert NO_APPROVER == ("needs approval and no approver is configured (pass can_use_tool "
                           "or use --allow RULE)")


@pytest.mark.parametrize(("hook_answer", "expected"), [
    (ToolDecision.allow("hook ok"), ("allow", "hook")),
    (ToolDecision.deny("hook no"), ("deny", "hook")),
    (CombinedToolDecision(None), ("allow", "callback")),
])
async def test_permission_request_hook_answers_before_the_approver(ws, hook_answer, expected):
    reasons: list[str] = []

    async def ask_hook(reason):
        reasons.append(reason)
        return hook_answer

    p = policy(ws, "ask", can_use_tool=lambda n, a, c: True)
    result = await p.check(BASH, ToolCall("c", "bash", {"command": "ls"}), ask_hook=ask_hook)
    assert (result.behavior, result.source) == expected
    assert reasons and "ask mode" in reasons[0]


async def test_terminal_approver(ws):
    out = io.StringIO()
    p = policy(ws, "ask", can_use_tool=terminal_approver(io.StringIO("y\nno way\na\n"), out))
    assert (await check(p, BASH, command="make test")).allowed
    denied = await check(p, BASH, command="rm -rf /")
    assert denied.reason == "denied by the user: no way"
    assert (await check(p, BASH, command="git push x")).allowed
    assert (await check(p, BASH, command="git push y")).source == "rule"  # remembered
    assert "needs approval: ask mode" in out.getvalue() and "bash(git push:*)" in out.getvalue()
    eof = policy(ws, "ask", can_use_tool=terminal_approver(io.StringIO(""), io.StringIO()))
    assert "end of input" in (await check(eof, WRITE, path="a")).reason


async def test_interactive_policy_uses_the_terminal(ws, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    monkeypatch.setattr("sys.stderr", io.StringIO())
    p = PermissionPolicy("ask", PermissionRules(), WorkspaceRoots(ws), interactive=True)
    assert (await check(p, WRITE, path="a.txt")).source == "callback"


# --------------------------------------------------------------------------- other dimensions


async def test_named_dimensions(ws):
    p = build_policy({"permissions": {"deny": ["skill:secret*"], "ask": ["command:/deploy"],
                                      "allow": ["agent:explore"]}}, cwd=ws, mode="ask")
    assert (await p.check_named("skills", "secret-keys")).source == "rule"
    deploy = await p.check_named("commands", "/deploy", "prod")
    assert (deploy.behavior, deploy.source) == ("deny", "rule")
    assert (await p.check_named("agents", "explore")).allowed
    other = await p.check_named("agents", "writer")
    assert (other.behavior, other.source) == ("deny", "mode")
    p.mode = "default"
    assert (await p.check_named("agents", "writer")).allowed
    seen: list[tuple[str, Any]] = []

    def approver(name, arguments, context):
        seen.append((name, arguments))
        return True

    p.can_use_tool = approver
    assert (await p.check_named("commands", "deploy", "prod")).allowed
    assert seen == [("command:deploy", {"name": "deploy", "arguments": "prod"})]


# --------------------------------------------------------------------------- settings


def test_build_policy_from_settings_and_options(ws):
    settings = {"permissions": {"mode": "plan", "allow": ["read"], "deny": ["bash(rm:*)"],
                                "ask": ["bash(git push:*)"]}}
    p = build_policy(settings, cwd=ws)
    assert p.mode == "plan" and [str(r) for r in p.rules.allow] == ["read"]
    assert p.rules.deny[0].source == "setting permissions.deny[0]"
    q = build_policy(settings, cwd=ws, mode="bypass", allow=["write"], option_source="--allow")
    assert q.mode == "bypass" and q.rules.allow[1].source == "--allow allow[0]"
    assert build_policy(None, cwd=ws).mode == "default"


@pytest.mark.parametrize(("settings", "options", "problem"), [
    ({"permissions": {"mode": "auto"}}, {}, "setting permissions.mode: unknown permission mode"),
    ({}, {"mode": "yolo"}, "option permission_mode: unknown permission mode 'yolo'"),
    ({"permissions": {"defaultMode": "plan"}}, {}, "unknown key(s) defaultMode"),
    ({"permissions": ["read"]}, {}, "setting permissions must be an object"),
    ({"permissions": {"allow": "read"}}, {}, "permissions.allow must be a list"),
    ({"permissions": {"deny": ["bash("]}}, {}, "(from setting permissions.deny[0])"),
    ({}, {"allow": ["ok", "Bad Rule"]}, "(from option allow[1])"),
    ({}, {"allow": "read"}, "option allow must be a list"),
    ({"permissions": {"additional_directories": "x"}}, {}, "must be a list of directories"),
    ({}, {"can_use_tool": "yes"}, "can_use_tool must be callable"),
])
def test_build_policy_errors(ws, settings, options, problem):
    with pytest.raises(PermissionConfigError) as info:
        build_policy(settings, cwd=ws, **options)
    assert problem in str(info.value)


# --------------------------------------------------------------------------- denial records


async def test_denial_record(ws):
    result = await check(policy(ws, deny=("bash",)), BASH, command="echo " + "x" * 500)
    denial = result.denial("bash", "call-1", {"command": "echo " + "x" * 500})
    assert denial.source == "rule" and denial.call_id == "call-1"
    assert len(denial.input_summary) == 200 and denial.input_summary.endswith("…")
    data = denial.to_json()
    assert data == {"tool": "bash", "call_id": "call-1", "input_summary": denial.input_summary,
                    "reason": result.reason, "source": "rule"}
    assert Denial.from_json(data) == denial
    assert result.message("bash").startswith("permission denied for bash: denied by rule")
    assert result.details() == {"denied": True, "permission_source": "rule", "interrupt": False}


def test_input_summaries():
    assert summarize_input("read", {"path": "src/a.py", "limit": 3}) == "src/a.py"
    assert summarize_input("bash", {"command": "ls\n  -la"}) == "ls -la"
    assert summarize_input("other", {"b": 1, "a": "x"}) == '{"b":1,"a":"x"}'
