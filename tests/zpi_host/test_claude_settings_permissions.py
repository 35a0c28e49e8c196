"""The ``permissions`` of Claude Code's settings files (``~/.claude/settings.json``, the
project's ``.claude/settings.json`` and ``.claude/settings.local.json``) in a session: rules in
Claude's spelling, ``additionalDirectories``, ``defaultMode``; what loosens waits for the
project's trust, what tightens always applies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zpi_host.session.assembly import create_session
from zpi_host.testing import ScriptedModel

pytestmark = pytest.mark.anyio


def write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def bash(*commands: str) -> dict:
    return {"tool_calls": [{"name": "bash", "arguments": {"command": c}} for c in commands]}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


async def session_in(project: Path, turns=("ok",), **options):
    events: list = []
    session = await create_session(model="t:m", provider=ScriptedModel(list(turns)),
                                   cwd=project, **options)
    session.subscribe(events.append)
    return session, events


def warnings(session, events) -> list[str]:
    return [*session.take_warnings(), *(e.message for e in events if e.type == "warning")]


def rule_texts(session, kind: str) -> list[str]:
    """The rules of ``kind`` from Claude's files (and the mode they chose)."""
    return [r.text for r in session.permissions.rules.of(kind)
            if ".claude" in r.source or r.source == "Claude defaultMode"]


async def test_the_users_claude_rules_apply_in_claudes_spelling(zpi_env, project):
    write_json(zpi_env.home / ".claude/settings.json", {"permissions": {
        "allow": ["Bash(echo:*)"], "deny": ["Bash(touch:*)"], "defaultMode": "plan"}})
    session, _ = await session_in(project, [bash("echo hi", "touch made.txt"), "done"],
                                  permission_mode="ask")
    try:
        await session.run("go")
    finally:
        await session.dispose()
    echo, touch = [m for m in session.messages if getattr(m, "role", "") == "tool"]
    assert not echo.is_error and echo.content[0].text.strip() == "hi"
    assert touch.is_error and "Bash(touch:*)" in touch.content[0].text
    assert not (project / "made.txt").exists()
    assert session.permissions.mode == "ask"  # the option wins over defaultMode


async def test_the_users_default_mode_applies_when_nothing_else_chooses(zpi_env, project):
    write_json(zpi_env.home / ".claude/settings.json", {"permissions": {"defaultMode": "plan"}})
    session, _ = await session_in(project)
    assert session.permissions.mode == "plan"
    await session.dispose()
    write_json(zpi_env.agent_dir / "settings.json", {"permissions": {"mode": "ask"}})
    session, _ = await session_in(project)
    assert session.permissions.mode == "ask"  # this host's own settings win
    await session.dispose()


async def test_an_untrusted_projects_loosening_is_held_back(zpi_env, project, tmp_path):
    extra = tmp_path / "extra"
    extra.mkdir()
    write_json(project / ".claude/settings.json", {"permissions": {
        "allow": ["Bash(echo:*)"], "deny": ["Bash(rm:*)"], "ask": ["Read(secret/**)"],
        "additionalDirectories": [str(extra)], "defaultMode": "acceptEdits"}})
    write_json(project / ".claude/settings.local.json",
               {"permissions": {"allow": ["Write"]}})
    session, events = await session_in(project, trust_project=False)
    try:
        said = warnings(session, events)
        assert rule_texts(session, "allow") == []
        assert rule_texts(session, "deny") == ["Bash(rm:*)"]
        assert rule_texts(session, "ask") == ["Read(secret/**)"]
        assert extra.resolve() not in session.permissions.roots.roots
        assert session.permissions.mode == "default"
        (held,) = [w for w in said if w.startswith("not applied, because the project")]
        for part in ('permissions.allow[0] "Bash(echo:*)"', "additionalDirectories[0]",
                     'defaultMode "acceptEdits"', "settings.local.json permissions.allow[0]"):
            assert part in held, (part, held)
    finally:
        await session.dispose()
    session, events = await session_in(project, trust_project=True)
    try:
        assert rule_texts(session, "allow") == ["Bash(echo:*)", "Write", "edit", "write",
                                                "notebook_edit", "batch_edit"]  # acceptEdits
        assert extra.resolve() in session.permissions.roots.roots
        assert session.permissions.mode == "ask"
        assert not [w for w in warnings(session, events) if "not applied" in w]
    finally:
        await session.dispose()


async def test_a_project_may_not_choose_bypass(zpi_env, project):
    write_json(project / ".claude/settings.json",
               {"permissions": {"defaultMode": "bypassPermissions"}})
    session, events = await session_in(project, trust_project=True)
    try:
        assert session.permissions.mode == "default"
        assert any("may not set permissions.defaultMode to bypassPermissions" in w
                   for w in warnings(session, events))
    finally:
        await session.dispose()


async def test_bad_entries_are_warnings_and_the_rest_applies(zpi_env, project):
    write_json(project / ".claude/settings.json", {"permissions": {
        "deny": ["Bash(rm:*", "Bash(rm:*)"], "allow": "Bash", "defaultMode": "dontAsk"}})
    session, events = await session_in(project, trust_project=True)
    try:
        said = "\n".join(warnings(session, events))
        assert rule_texts(session, "deny") == ["Bash(rm:*)"]
        assert "permissions.deny[0]" in said and "permissions.allow must be a list" in said
        assert "defaultMode 'dontAsk' is not supported" in said
    finally:
        await session.dispose()


async def test_switched_off_by_the_user_only(zpi_env, project):
    write_json(project / ".claude/settings.json", {"permissions": {"deny": ["Bash(rm:*)"]}})
    write_json(project / ".zpi/settings.json",
               {"compat": {"claude": {"read_permissions": False}}})
    session, events = await session_in(project, trust_project=True)
    try:
        assert rule_texts(session, "deny") == ["Bash(rm:*)"]
        assert any("may not set compat.claude.read_permissions" in w
                   for w in warnings(session, events))
    finally:
        await session.dispose()
    write_json(zpi_env.agent_dir / "settings.json",
               {"compat": {"claude": {"read_permissions": False}}})
    session, _ = await session_in(project, trust_project=True)
    try:
        assert rule_texts(session, "deny") == []
    finally:
        await session.dispose()


async def test_setting_sources_without_the_project_read_no_project_file(zpi_env, project):
    write_json(project / ".claude/settings.json", {"permissions": {"deny": ["Bash(rm:*)"]}})
    write_json(zpi_env.home / ".claude/settings.json", {"permissions": {"deny": ["Write"]}})
    session, _ = await session_in(project, setting_sources=["user"])
    assert rule_texts(session, "deny") == ["Write"]
    await session.dispose()
    session, _ = await session_in(project, setting_sources=[])
    assert rule_texts(session, "deny") == []
    await session.dispose()
