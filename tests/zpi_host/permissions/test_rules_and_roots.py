"""Permission rule syntax and matching (bash commands, path globs, other tools) and workspace
roots against real directories and symlinks."""

from __future__ import annotations

import os
from pathlib import Path

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

from zpi_host.permissions import (
    PATH_ARGUMENTS,
    RULE_ARGUMENTS,
    PermissionConfigError,
    PermissionRuleError,
    PermissionRules,
    Rule,
    WorkspaceRoots,
    build_policy,
    parse_rule,
    paths_of,
)

pytestmark = pytest.mark.anyio


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
    assert not parse_rule("BASH").matches_name("bash")  # names are case-sensitive
    assert not parse_rule("Mytool").matches_name("mytool")
    rules = PermissionRules.build(None, allow=("BASH(ls)", "Bash(ls)", "mcp__*", "reed"))
    warnings = rules.unknown_tool_rules(["read", "bash"])
    assert any("'BASH(ls)'" in w and "did you mean 'bash'" in w for w in warnings)
    assert not any("'Bash(ls)'" in w for w in warnings)  # Claude's spelling of bash
    assert any("'reed'" in w and "did you mean 'read'" in w for w in warnings)
    assert any("'mcp__*'" in w for w in warnings)


@pytest.mark.parametrize(("rule", "tool"), [
    ("Bash", "bash"), ("bash", "Bash"), ("Read", "read"), ("read", "Read"),
    ("Write", "write"), ("edit", "Edit"), ("Glob", "glob"), ("grep", "Grep"),
    ("Agent", "task"), ("Task", "task"), ("task", "Agent"), ("WebFetch", "web_fetch"),
    ("web_fetch", "WebFetch"), ("Skill", "skill"), ("TaskOutput", "task_output"),
])
def test_a_rule_names_a_tool_in_either_spelling(rule, tool):
    assert parse_rule(rule).matches_name(tool)
    assert not parse_rule(rule).matches_name("write" if tool != "write" else "read")


def test_an_mcp_server_rule_names_every_tool_of_that_server():
    rule = parse_rule("mcp__calc")
    assert rule.matches_name("mcp__calc") and rule.matches_name("mcp__calc__add")
    assert not rule.matches_name("mcp__calculator__add")  # another server
    assert not rule.matches_name("mcp__calcx")
    assert not parse_rule("mcp__calc__add").matches_name("mcp__calc__add__x")
    assert parse_rule("mcp__calc__*").matches_name("mcp__calc__divide")


def test_claude_spellings_keep_each_tools_pattern_semantics(ws):
    """``Bash(rm:*)`` is a command prefix on the kernel's bash, ``read(.env)`` a path on the
    SDK's Read (its ``file_path``), and a malformed command pattern is refused in either
    spelling, whichever tools are registered."""
    rules = PermissionRules.build(None, deny=("Bash(rm:*)", "read(.env)"))
    assert rules.find("deny", "tools", "bash", {"command": "rm -f x"}, ws) is not None
    assert rules.find("deny", "tools", "bash", {"command": "ls"}, ws) is None
    assert rules.find("deny", "tools", "read", {"path": ".env"}, ws) is not None
    with pytest.raises(PermissionRuleError, match="':\\*' may only end"):
        parse_rule("Bash(rm:* x)")


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
