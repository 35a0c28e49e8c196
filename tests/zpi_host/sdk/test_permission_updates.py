"""``updated_permissions``: every PermissionUpdate type of claude-agent-sdk, for the session
and persisted to the settings files."""

from __future__ import annotations

import json

import pytest

from zpi_host.sdk import (
    PermissionResultAllow,
    PermissionRuleValue,
    PermissionUpdate,
    UserMessage,
    query,
)

from .conftest import collect

pytestmark = pytest.mark.anyio


def results(messages):
    return [b for m in messages if isinstance(m, UserMessage) for b in m.content]


def bash(*commands: str) -> list[dict]:
    return [{"tool_calls": [{"name": "Bash", "arguments": {"command": c}}]} for c in commands]


def rules(kind: str, behavior: str, *texts: str, destination: str = "session"
          ) -> PermissionUpdate:
    values = []
    for text in texts:
        name, _, content = text.partition("(")
        values.append(PermissionRuleValue(name, content[:-1] if content else None))
    return PermissionUpdate(kind, values, behavior, destination=destination)


async def test_replace_and_remove_rules_for_the_session(scripted):
    asked = []
    answers = {"ls": [rules("replaceRules", "allow", "Bash(ls)")],
               "echo x": [rules("removeRules", "allow", "Bash(ls)"),
                          rules("addRules", "deny", "Bash(rm:*)")]}

    async def can_use_tool(tool_name, input_data, context):
        command = input_data["command"]
        asked.append(command)
        return PermissionResultAllow(updated_permissions=answers.get(command))

    scripted.turns(*bash("echo x", "ls", "echo x", "ls", "rm -f nothing"), "ok")
    options = scripted.options(can_use_tool=can_use_tool, allowed_tools=["Bash(echo x)"])
    outcome = results(await collect(query("go", options)))
    # echo x: allowed by the option's rule, until replaceRules replaced the allow rules
    assert asked == ["ls", "echo x", "ls"]
    assert [r.is_error for r in outcome] == [False, False, False, False, True]
    assert "Bash(rm:*)" in outcome[-1].content or "rm:*" in outcome[-1].content


async def test_add_and_remove_directories_for_the_session(scripted, tmp_path):
    outside = tmp_path / "notes"
    outside.mkdir()
    for name in ("a.txt", "b.txt", "c.txt"):
        (outside / name).write_text(name)
    asked = []

    async def can_use_tool(tool_name, input_data, context):
        what = input_data.get("file_path") or input_data["command"]
        asked.append(what)
        if what.endswith("a.txt"):
            return PermissionResultAllow(updated_permissions=[
                PermissionUpdate("addDirectories", directories=[str(outside)])])
        if what == "true":
            return PermissionResultAllow(updated_permissions=[
                PermissionUpdate("removeDirectories", directories=[str(outside)])])
        return PermissionResultAllow()

    reads = [{"tool_calls": [{"name": "Read", "arguments": {"file_path": str(outside / n)}}]}
             for n in ("a.txt", "b.txt", "c.txt")]
    write_b = {"tool_calls": [{"name": "Write", "arguments": {
        "file_path": str(outside / "b.txt"), "content": "new"}}]}
    scripted.turns(reads[0], reads[1], write_b, *bash("true"), reads[2], "ok")
    options = scripted.options(can_use_tool=can_use_tool, permission_mode="acceptEdits")
    outcome = results(await collect(query("go", options)))
    assert [r.is_error for r in outcome] == [False] * 5
    # b.txt was inside the added root (read, and written under acceptEdits, without asking);
    # removing the root made c.txt ask again
    assert asked == [str(outside / "a.txt"), "true", str(outside / "c.txt")]
    assert (outside / "b.txt").read_text() == "new"


async def test_settings_destinations_persist_atomically_keeping_other_keys(scripted,
                                                                          tmp_path):
    extra = tmp_path / "extra"
    extra.mkdir()
    project = scripted.cwd / ".zpi" / "settings.json"
    project.parent.mkdir()
    project.write_text(json.dumps({"keep": {"me": 1}, "permissions": {"allow": ["Read"]}}))
    user = scripted.agent_dir / "settings.json"
    user.write_text(json.dumps({"model": "scripted:memory"}))
    asked = []

    async def can_use_tool(tool_name, input_data, context):
        asked.append(input_data["command"])
        return PermissionResultAllow(updated_permissions=[
            rules("addRules", "allow", "Bash(echo one)", destination="localSettings"),
            rules("addRules", "deny", "Bash(rm:*)", destination="projectSettings"),
            PermissionUpdate("addDirectories", directories=[str(extra)],
                             destination="userSettings"),
            PermissionUpdate("setMode", mode="plan", destination="userSettings"),
        ])

    scripted.turns(*bash("echo one"), "ok")
    await collect(query("go", scripted.options(can_use_tool=can_use_tool)))
    assert asked == ["echo one"]
    local = scripted.cwd / ".zpi" / "settings.local.json"
    assert json.loads(local.read_text()) == {"permissions": {"allow": ["Bash(echo one)"]}}
    assert json.loads(project.read_text()) == {
        "keep": {"me": 1}, "permissions": {"allow": ["Read"], "deny": ["Bash(rm:*)"]}}
    assert json.loads(user.read_text()) == {"model": "scripted:memory", "permissions": {
        "additional_directories": [str(extra)], "mode": "plan"}}
    assert not list(local.parent.glob(".settings*"))  # no temporary file left

    # the next session reads them: echo one is allowed by the local file's rule (the program
    # names the project's files, as claude-agent-sdk needs: its explicit trust in the project)
    scripted.turns(*bash("echo one"), "ok")
    outcome = results(await collect(query("again", scripted.options(
        can_use_tool=can_use_tool, setting_sources=["user", "project", "local"]))))
    assert [r.is_error for r in outcome] == [False] and asked == ["echo one"]


async def test_an_update_that_cannot_be_applied_applies_none_and_denies(scripted, tmp_path):
    user = scripted.agent_dir / "settings.json"
    user.write_text('{"model": "x", oops')
    before = user.read_bytes()
    answers = [
        [rules("addRules", "allow", "Bash(echo again)"),
         PermissionUpdate("addDirectories", directories=[str(tmp_path / "missing")])],
        [rules("addRules", "allow", "Bash(echo again)"),
         PermissionUpdate("setMode", mode="acceptEdits", destination="userSettings")],
        [PermissionUpdate("setMode", mode="bypassPermissions",
                          destination="projectSettings")],
        [rules("addRules", "allow", "Bash(echo again)", destination="userSettings")],
        [PermissionUpdate("resetEverything")],
        [rules("addRules", "sometimes", "Bash(x)")],
        [PermissionUpdate("removeDirectories", directories=[3])],
    ]
    asked = []

    async def can_use_tool(tool_name, input_data, context):
        asked.append(input_data["command"])
        return PermissionResultAllow(updated_permissions=answers[len(asked) - 1])

    scripted.turns(*bash(*["echo again"] * len(answers)), "ok")
    outcome = results(await collect(query("go", scripted.options(can_use_tool=can_use_tool))))
    assert len(asked) == len(answers)  # no rule was added by a refused answer
    assert all(r.is_error and "none was applied" in r.content for r in outcome)
    reasons = [r.content for r in outcome]
    assert "does not exist" in reasons[0]
    assert "cannot be kept in a settings file" in reasons[1]
    assert "may not choose bypassPermissions" in reasons[2]
    assert "settings.json" in reasons[3] and "invalid JSON" in reasons[3]
    assert "unknown type" in reasons[4] and "behavior 'sometimes'" in reasons[5]
    assert "directories must be a non-empty list of paths" in reasons[6]
    assert user.read_bytes() == before  # a broken file is never overwritten
    assert not (scripted.cwd / ".zpi").exists()


async def test_settings_destinations_need_settings_files(scripted):
    async def can_use_tool(tool_name, input_data, context):
        return PermissionResultAllow(updated_permissions=[
            rules("addRules", "allow", "Bash(true)", destination="userSettings")])

    scripted.turns(*bash("true"), "ok")
    options = scripted.options(can_use_tool=can_use_tool, settings="{}")
    (outcome,) = results(await collect(query("go", options)))
    assert outcome.is_error and "destination 'session'" in outcome.content
