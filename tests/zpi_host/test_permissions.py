"""Permissions: modes, rules, workspace roots, the evaluation order and the approver callback,
against real files, directories and symlinks."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import pytest

from zpi_host.decisions import CombinedToolDecision, ToolDecision
from zpi_host.permissions import (
    NO_APPROVER,
    PATH_ARGUMENTS,
    RULE_ARGUMENTS,
    Denial,
    PermissionAllow,
    PermissionConfigError,
    PermissionContext,
    PermissionDeny,
    PermissionPolicy,
    PermissionResult,
    PermissionRuleError,
    PermissionRules,
    Rule,
    WorkspaceRoots,
    build_policy,
    parse_rule,
    paths_of,
    summarize_input,
)
from zpi_host.permissions.approver import terminal_approver
from zpi_host.tools.base import Tool, ToolCall, ToolMetadata, ToolResult
from zpi_host.tools.bash import bash_tool
from zpi_host.tools.edit import edit_tool
from zpi_host.tools.read import read_tool
from zpi_host.tools.write import write_tool

pytestmark = pytest.mark.anyio

READ, WRITE, EDIT, BASH = read_tool(), write_tool(), edit_tool(), bash_tool()


def plugin_tool(name: str, *, read_only: bool = False) -> Tool:
    return Tool(name, "a plugin tool", {"type": "object"},
                lambda args, ctx: ToolResult.text("ok"), ToolMetadata(read_only=read_only))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace with src/, srcx/ and, next to it, an outside folder with a secret."""
    root = tmp_path / "ws"
    (root / "src" / "nested").mkdir(parents=True)
    (root / "src" / "a.py").write_text("a\n")
    (root / "src" / "nested" / "b.py").write_text("b\n")
    (root / "srcx").mkdir()
    (root / "srcx" / "a").write_text("x\n")
    (root / "top.txt").write_text("top\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    return root


@pytest.fixture
def outside(ws: Path) -> Path:
    return ws.parent / "outside"


def policy(ws: Path, mode: str = "default", *, allow: tuple[str, ...] = (),
           deny: tuple[str, ...] = (), ask: tuple[str, ...] = (), extra: tuple[Path, ...] = (),
           can_use_tool: Any = None) -> PermissionPolicy:
    rules = PermissionRules.build(None, allow=allow, deny=deny, ask=ask)
    return PermissionPolicy(mode, rules, WorkspaceRoots(ws, extra), can_use_tool)  # type: ignore[arg-type]


async def check(p: PermissionPolicy, tool: Tool, hook: Any = None, **arguments: Any
                ) -> PermissionResult:
    return await p.check(tool, ToolCall("call-1", tool.name, arguments), hook=hook)


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


# --------------------------------------------------------------------------- rule syntax

GOOD_RULES = {
    "bash": Rule("tools", "bash"),
    " bash(*) ": Rule("tools", "bash"),
    "edit(**)": Rule("tools", "edit"),
    "bash(git status:*)": Rule("tools", "bash", "git status:*"),
    "bash(npm run *)": Rule("tools", "bash", "npm run *"),
    "edit(src/**)": Rule("tools", "edit", "src/**"),
    "mcp__*": Rule("tools", "mcp__*"),
    "tool:read(/tmp/**)": Rule("tools", "read", "/tmp/**"),
    "command:/deploy": Rule("commands", "deploy"),
    "command:/plug:deploy(prod *)": Rule("commands", "plug:deploy", "prod *"),
    "skill:pdf": Rule("skills", "pdf"),
    "skills:pdf": Rule("skills", "pdf"),
    "agent:code-reviewer": Rule("agents", "code-reviewer"),
    "bash(echo $(date):*)": Rule("tools", "bash", "echo $(date):*"),
}


@pytest.mark.parametrize("text", list(GOOD_RULES))
def test_good_rules_parse(text):
    assert parse_rule(text) == GOOD_RULES[text]


def test_rule_round_trips_through_str():
    for rule in GOOD_RULES.values():
        assert parse_rule(str(rule)) == rule


@pytest.mark.parametrize(("text", "problem"), [
    ("", "must not be empty"),
    ("   ", "must not be empty"),
    ("bash(", "closed by ')'"),
    ("bash(ls)x", "closed by ')'"),
    ("bash()", "empty pattern"),
    ("ba sh", "may contain only"),
    ("bash)", "')' without '('"),
    ("Bash!", "may contain only"),
    ("foo:bar", "unknown dimension 'foo'"),
    ("bash(git:*status)", "':*' may only end the pattern"),
    ("bash(:*)", "needs a command before it"),
])
def test_bad_rules_name_the_rule_and_where_it_came_from(text, problem):
    with pytest.raises(PermissionRuleError) as info:
        parse_rule(text, source="setting permissions.allow[3]")
    message = str(info.value)
    assert problem in message and repr(text) in message
    assert "setting permissions.allow[3]" in message


def test_non_string_rule_is_an_error():
    with pytest.raises(PermissionRuleError, match="must be a string"):
        parse_rule(42)  # type: ignore[arg-type]


def test_tool_name_wildcards_and_case(ws):
    rule = parse_rule("mcp__*")
    assert rule.matches_name("mcp__github__create_issue")
    assert not rule.matches_name("xmcp__a")
    assert not parse_rule("Bash").matches_name("bash")  # names are case-sensitive
    rules = PermissionRules.build(None, allow=("Bash(ls)", "mcp__*", "reed"))
    warnings = rules.unknown_tool_rules(["read", "bash"])
    assert any("'Bash(ls)'" in w and "did you mean 'bash'" in w for w in warnings)
    assert any("'reed'" in w and "did you mean 'read'" in w for w in warnings)
    assert any("'mcp__*'" in w for w in warnings)


@pytest.mark.parametrize(("command", "allowed"), [
    ("git status", True), ("git status -s", True), ("git  status   --short", True),
    ("git stash", False), ("git statusx", False), ("git status && rm -rf x", False),
    ("git status; curl evil", False), ("git status $(rm -rf x)", False),
    ("git status | cat", False), ("git status `rm x`", False),
])
async def test_bash_prefix_rule(ws, command, allowed):
    p = policy(ws, "ask", allow=("bash(git status:*)",))
    assert (await check(p, BASH, command=command)).allowed is allowed


async def test_bash_glob_and_compound_allow(ws):
    p = policy(ws, "ask", allow=("bash(npm run *)", "bash(cat *)", "bash(make && make test)"))
    assert (await check(p, BASH, command="npm run test")).allowed
    assert (await check(p, BASH, command="npm run")).allowed
    assert (await check(p, BASH, command="npm run lint | cat x")).allowed  # both parts allowed
    assert not (await check(p, BASH, command="npm install")).allowed
    assert (await check(p, BASH, command="make && make test")).allowed  # exact line


@pytest.mark.parametrize(("path", "matches"), [
    ("src/a.py", True), ("src/nested/b.py", True), ("src/new/deep/file.txt", True),
    ("srcx/a", False), ("top.txt", False), ("./src/../src/a.py", True),
])
async def test_edit_path_glob(ws, path, matches):
    p = policy(ws, "ask", allow=("edit(src/**)",))
    assert (await check(p, EDIT, path=path)).allowed is matches


async def test_path_glob_forms(ws, outside, monkeypatch):
    home = Path(os.environ["HOME"])
    (home / "notes").mkdir()
    cases = [
        ("**/*.py", "src/nested/b.py", True), ("**/*.py", "top.txt", False),
        ("*.py", "src/nested/b.py", True),  # no '/': at any depth
        ("src/*.py", "src/nested/b.py", False), ("src/*.py", "src/a.py", True),
        ("src", "src/nested/b.py", True),  # a directory covers what is under it
        ("src/", "src/a.py", True), ("src/?.py", "src/a.py", True),
        (f"{outside}/**", str(outside / "secret.txt"), True),
        ("~/notes/**", str(home / "notes" / "x.md"), True),
        ("~/notes/**", str(outside / "secret.txt"), False),
    ]
    for pattern, path, expected in cases:
        p = policy(ws, "bypass", deny=(f"write({pattern})",))
        assert (not (await check(p, WRITE, path=path)).allowed) is expected, (pattern, path)


async def test_relative_patterns_are_relative_to_the_cwd_not_the_process(ws, monkeypatch,
                                                                         tmp_path):
    monkeypatch.chdir(tmp_path)
    p = policy(ws, "bypass", deny=("read(src/**)",))
    assert not (await check(p, READ, path=str(ws / "src" / "a.py"))).allowed


async def test_other_tools_match_a_canonical_argument_string(ws, monkeypatch):
    fetch = plugin_tool("fetch", read_only=True)
    p = policy(ws, deny=('fetch(*"url":"https://evil.example*)',))
    assert not (await check(p, fetch, url="https://evil.example/x", timeout=3)).allowed
    assert (await check(p, fetch, url="https://good.example")).allowed
    doc = policy(ws, deny=('fetch(*"url":"https://example.com/*)',))
    assert not (await check(doc, fetch, timeout=5, url="https://example.com/a")).allowed
    monkeypatch.setitem(RULE_ARGUMENTS, "fetch", "url")
    q = policy(ws, deny=("fetch(https://evil.*)",))
    assert not (await check(q, fetch, url="https://evil.example/x")).allowed


def test_allow_and_deny_of_the_same_pattern_is_an_error():
    with pytest.raises(PermissionRuleError) as info:
        PermissionRules.build({"allow": ["read", "bash(git push:*)"]}, deny=["bash(git push:*)"])
    message = str(info.value)
    assert "setting permissions.allow[1]" in message and "option deny[0]" in message
    with pytest.raises(PermissionRuleError, match="same pattern"):
        PermissionRules.build(None, allow=["bash"], deny=["bash(*)"])
    with pytest.raises(PermissionRuleError, match="same pattern"):
        PermissionRules.build({"allow": ["skill:pdf"], "deny": ["skills:pdf"]})
    # different dimensions, or allow and ask, are fine
    PermissionRules.build(None, allow=["skill:pdf"], deny=["pdf"], ask=["skill:pdf"])


# --------------------------------------------------------------------------- workspace roots


async def test_dotdot_escape_is_outside(ws, outside):
    result = await check(policy(ws), READ, path="src/../../outside/secret.txt")
    assert (result.behavior, result.source) == ("deny", "path")
    assert f"src/../../outside/secret.txt (resolves to {outside / 'secret.txt'})" in result.reason


async def test_absolute_path_outside(ws):
    result = await check(policy(ws), WRITE, path="/etc/zpi-test-never-written")
    assert (result.behavior, result.source) == ("deny", "path")


async def test_symlink_inside_pointing_outside(ws, outside):
    (ws / "innocent.txt").symlink_to(outside / "secret.txt")
    result = await check(policy(ws), EDIT, path="innocent.txt")
    assert (result.behavior, result.source) == ("deny", "path")
    assert str(outside / "secret.txt") in result.reason


async def test_new_file_under_a_symlinked_directory(ws, outside):
    (ws / "linked").symlink_to(outside, target_is_directory=True)
    result = await check(policy(ws), WRITE, path="linked/new/file.txt")
    assert (result.behavior, result.source) == ("deny", "path")
    assert not (outside / "new").exists()
    # a rule that names the link covers where it points; a link under a glob is not followed
    assert (await check(policy(ws, allow=("write(linked/**)",)), WRITE,
                        path="linked/new/file.txt")).allowed
    (ws / "src" / "escape").symlink_to(outside, target_is_directory=True)
    assert not (await check(policy(ws, allow=("write(src/**)",)), WRITE,
                            path="src/escape/new.txt")).allowed


async def test_symlink_to_inside_is_inside(ws):
    (ws / "alias").symlink_to(ws / "src", target_is_directory=True)
    assert (await check(policy(ws, "plan"), READ, path="alias/a.py")).allowed


async def test_symlinked_cwd_still_contains_its_files(ws, tmp_path):
    link = tmp_path / "ws-link"
    link.symlink_to(ws, target_is_directory=True)
    p = policy(link, "ask", allow=("write(src/**)",))
    assert (await check(p, WRITE, path="src/new.py")).allowed
    assert (await check(p, READ, path=str(ws / "top.txt"))).allowed


def test_workspace_roots_contains(ws, outside):
    roots = WorkspaceRoots(ws)
    assert roots.contains(ws) and roots.contains("src/a.py") and roots.contains("no/such/f")
    assert roots.contains(ws / "src" / ".." / "top.txt")
    assert not roots.contains("..") and not roots.contains(outside)
    assert not roots.contains(str(ws) + "x/a")  # a sibling with the same prefix
    assert roots.root_of("src") == ws.resolve()


async def test_extra_roots(ws, outside):
    p = policy(ws, extra=(outside,))
    assert (await check(p, WRITE, path=str(outside / "secret.txt"))).allowed
    assert p.roots.contains("../outside/secret.txt")


def test_extra_roots_from_settings_and_options(ws, outside, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    p = build_policy({"permissions": {"additional_directories": ["../outside"]}}, cwd=ws,
                     add_dirs=[str(other)])
    assert p.roots.roots == (ws.resolve(), outside.resolve(), other.resolve())
    with pytest.raises(PermissionConfigError, match=r"add_dirs\[0\].*does not exist"):
        build_policy({}, cwd=ws, add_dirs=[tmp_path / "missing"])
    with pytest.raises(PermissionConfigError, match="is not a directory"):
        build_policy({"permissions": {"additional_directories": ["top.txt"]}}, cwd=ws)


async def test_plugin_file_tool_via_path_arguments(ws, outside, monkeypatch):
    grep = plugin_tool("grep", read_only=True)
    monkeypatch.setitem(PATH_ARGUMENTS, "grep", ("path", "paths"))
    assert paths_of("grep", {"path": "a", "paths": ["b", 3, ""]}) == ["a", "b"]
    p = policy(ws)
    assert (await check(p, grep, path="src", paths=["srcx"])).allowed
    result = await check(p, grep, path="src", paths=["srcx", str(outside)])
    assert (result.behavior, result.source) == ("deny", "path")
    assert paths_of("nothing", {"path": "x"}) == []


async def test_each_path_may_be_covered_by_a_different_allow_rule(ws, monkeypatch):
    monkeypatch.setitem(PATH_ARGUMENTS, "copy", ("source", "destination"))
    copy = plugin_tool("copy")
    p = policy(ws, "ask", allow=("copy(src/**)", "copy(srcx/**)"))
    result = await check(p, copy, source="src/a.py", destination="srcx/b")
    assert result.allowed and "copy(src/**)" in result.reason and "copy(srcx/**)" in result.reason
    assert not (await check(p, copy, source="src/a.py", destination="top.txt")).allowed


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
