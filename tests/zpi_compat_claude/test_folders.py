"""Plugin folders through a real PluginHost: what registers, what it contributes, why it fails,
what is frozen, and the Claude folders (``~/.claude``, ``.claude``, settings hooks)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path

import pytest
from helpers.claude_folders import (
    CORPUS,
    claude_settings,
    copy_plugin,
    folder_of,
    load_host,
    rows,
)

from zpi_compat_claude.folder import ClaudeFolderPlugin
from zpi_host.resources import ResourceLoader

HAVE_HOOKS = importlib.util.find_spec("zpi_compat_claude.hooks") is not None
needs_hooks = pytest.mark.skipif(not HAVE_HOOKS, reason="the hook engine "
                                 "(zpi_compat_claude.hooks) is not installed")


def load(zpi_env, tmp_path: Path, *names: str, **claude):
    """Copy corpus folders and load them; returns (host, rows by name, cwd)."""
    cwd = tmp_path / "project"
    cwd.mkdir(parents=True, exist_ok=True)
    dirs = [copy_plugin(name, tmp_path / "plugins") for name in names]
    settings = claude_settings(dirs, **claude)
    host = load_host(settings, cwd)
    return host, rows(host, cwd, settings), cwd


def resources_of(host, cwd: Path, agent_dir: Path) -> ResourceLoader:
    """The ResourceLoader a session would build from the host."""
    from zpi_host.contract.hookcalls import run_sync
    from zpi_host.session.assembly import load_resources

    return run_sync(load_resources(host, cwd, agent_dir, {}))  # type: ignore[no-any-return]


def test_manifest_less_plugin(zpi_env, tmp_path):
    host, found, _ = load(zpi_env, tmp_path, "minimal")
    row = found["claude:minimal"]
    assert (row["source"], row["status"], row["version"]) == ("claude", "ok", None)
    assert row["contributes"]["skills"] == ["minimal:tidy"]
    assert row["contributes"]["commands"] == ["minimal:hello"]
    assert row["contributes"]["agents"] == ["minimal:helper"]
    assert row["hooks"] == ["zpi_register_commands", "zpi_register_resources"]
    assert row["contributes"]["resources"] == [str(tmp_path / "plugins" / "minimal")]
    assert folder_of(host, "claude:minimal").warnings == []


def test_manifest_paths_replace_commands_and_agents_and_add_skills(zpi_env, tmp_path):
    host, found, _ = load(zpi_env, tmp_path, "full-manifest")
    row = found["claude:full-kit"]
    assert row["version"] == "2.1.0" and row["status"] == "ok"
    assert row["contributes"]["commands"] == ["full-kit:db:migrate", "full-kit:deploy",
                                              "full-kit:one"]
    assert row["contributes"]["agents"] == ["full-kit:planner"]
    assert row["contributes"]["skills"] == ["full-kit:base", "full-kit:extra"]
    warnings = folder_of(host, "claude:full-kit").warnings
    assert any("unknown field 'category'" in w for w in warnings)


def test_skill_locations_point_at_the_snapshot_with_their_files(zpi_env, tmp_path):
    host, _, cwd = load(zpi_env, tmp_path, "minimal", "one-skill", "full-manifest")
    loader = resources_of(host, cwd, zpi_env.agent_dir)
    skills = {skill.name: skill for skill in loader.skills}
    assert set(skills) == {"minimal:tidy", "one-skill:one-skill", "full-kit:base",
                           "full-kit:extra"}
    tidy = skills["minimal:tidy"]
    cache = zpi_env.agent_dir / "plugin-cache" / "claude"
    assert tidy.path.resolve().is_relative_to(cache / "minimal")
    assert (tidy.path.parent / "reference.md").read_text().startswith("# Import order")
    one = skills["one-skill:one-skill"]
    assert "reference.md" in one.description
    assert (one.path.parent / "reference.md").is_file()
    prompt = loader.skills_prompt()
    assert f"<location>{tidy.path}</location>" in prompt
    assert loader.diagnostics == ()


def test_skill_and_agent_text_gets_the_plugin_variables(zpi_env, tmp_path):
    settings = {"user-config": {"options": {"token": "s3cret", "region": "us-east"}}}
    host, _, cwd = load(zpi_env, tmp_path, "user-config", plugins=settings)
    root = folder_of(host, "claude:user-config").root
    loader = resources_of(host, cwd, zpi_env.agent_dir)
    skill = loader.skill("user-config:deploy-help")
    assert skill is not None and loader.diagnostics == ()
    text = skill.path.read_text()
    assert "Deploy to us-east with token ${user_config.token}." in text  # sensitive: kept
    assert f"`{root}/skills/deploy-help/scripts/check.sh` (plugin at {root})" in text
    assert (skill.path.parent / "reference.md").read_text() == "# Deploy reference\n"
    assert os.access(skill.path.parent / "scripts" / "check.sh", os.X_OK)
    data = zpi_env.agent_dir / "plugin-data" / "claude" / "user-config"
    agent = loader.agent("user-config:deployer")
    assert agent is not None
    assert agent.prompt == f"Use {root}/skills and keep state in {data}."
    assert data.is_dir()
    other = {"user-config": {"options": {"token": "s3cret", "region": "ap"}}}
    host2, _, _ = load(zpi_env, tmp_path / "2", "user-config", plugins=other)
    again = resources_of(host2, cwd, zpi_env.agent_dir).skill("user-config:deploy-help")
    assert "Deploy to ap" in again.path.read_text() and "us-east" in skill.path.read_text()


def test_agents_load_and_ignored_fields_warn(zpi_env, tmp_path):
    host, found, cwd = load(zpi_env, tmp_path, "agents-plugin")
    assert found["claude:agents-plugin"]["contributes"]["agents"] == [
        "agents-plugin:deep", "agents-plugin:reviewer"]
    warnings = folder_of(host, "claude:agents-plugin").warnings
    assert any("agent agents/review.md: hooks, mcpServers, permissionMode ignored" in w
               for w in warnings)
    agents = {a.name: a for a in resources_of(host, cwd, zpi_env.agent_dir).agents}
    assert agents["agents-plugin:reviewer"].tools == ("Read", "Grep", "Glob")
    assert agents["agents-plugin:deep"].prompt == "You dig."


def test_mcp_servers_are_listed_and_lsp_servers_reported_unsupported(zpi_env, tmp_path):
    host, found, _ = load(zpi_env, tmp_path, "servers")
    row = found["claude:servers"]
    assert row["status"] == "ok"
    assert row["contributes"]["unsupported"] == ["lspServers.pyright", "outputStyles"]
    assert row["contributes"]["mcp servers"] == ["files", "github"]
    warnings = " | ".join(folder_of(host, "claude:servers").warnings)
    assert "MCP servers are not supported" not in warnings
    assert "pyright ignored" in warnings


@pytest.mark.parametrize("name, listed, reason", [
    ("bad-json", "claude:bad-json", "plugin.json: invalid JSON at line 4, column 3"),
    ("bad-type", "claude:bad-type", "field 'commands' must be a string or a list, got number"),
    ("bad-name", "claude:Bad Name", "plugin name 'Bad Name' must be kebab-case"),
    ("bad-option", "claude:bad-option", "userConfig.level.type must be one of"),
    ("escape-dotdot", "claude:escape-dotdot", "skills path './../minimal/skills' leads "
     "outside the plugin folder"),
    ("escape-absolute", "claude:escape-absolute", "commands path '/etc' must start with './'"),
    ("escape-bare", "claude:escape-bare", "write \"./agents/\""),
])
def test_broken_folders_are_listed_with_the_reason(zpi_env, tmp_path, name, listed, reason):
    if name == "escape-dotdot":
        copy_plugin("minimal", tmp_path / "plugins")
    _, found, _ = load(zpi_env, tmp_path, name)
    row = found[listed]
    assert (row["status"], row["source"]) == ("failed", "claude")
    assert reason in row["error"]


def test_symlinks_leading_out_fail(zpi_env, tmp_path):
    outside = tmp_path / "outside" / "skills"
    (outside / "x").mkdir(parents=True)
    (outside / "x" / "SKILL.md").write_text("---\ndescription: x\n---\nx\n")
    default_link = tmp_path / "plugins" / "linked-default"
    default_link.mkdir(parents=True)
    os.symlink(outside, default_link / "skills")
    declared = tmp_path / "plugins" / "linked-declared"
    (declared / ".claude-plugin").mkdir(parents=True)
    (declared / ".claude-plugin" / "plugin.json").write_text(
        '{"name": "linked-declared", "skills": "./more"}')
    os.symlink(outside, declared / "more")
    settings = claude_settings([default_link, declared])
    found = rows(load_host(settings, tmp_path), tmp_path)
    assert "skills leads outside the plugin folder" in found["claude:linked-default"]["error"]
    assert f"resolves to {outside}" in found["claude:linked-declared"]["error"]


def test_missing_folder_and_duplicate_names(zpi_env, tmp_path):
    first = copy_plugin("minimal", tmp_path / "a")
    second = copy_plugin("minimal", tmp_path / "b")
    settings = claude_settings([first, tmp_path / "nope", second])
    found = rows(load_host(settings, tmp_path), tmp_path)
    assert found["claude:minimal"]["status"] == "ok"
    assert "is not a folder" in found["claude:nope"]["error"]
    duplicate = found[f"claude:minimal ({second})"]
    assert duplicate["status"] == "failed"
    assert f"another plugin named 'minimal' was loaded first from {first}" in duplicate["error"]


def test_bad_settings_fail_the_claude_plugin(zpi_env, tmp_path):
    host = load_host({"compat": {"claude": {"plugin_dirs": "x"}}}, tmp_path)
    record = host.get("claude")
    assert record is not None and record.status == "failed"
    assert "compat.claude.plugin_dirs must be a list" in (record.error or "")


def test_user_config_values_defaults_and_required(zpi_env, tmp_path):
    _, found, _ = load(zpi_env, tmp_path, "user-config")
    error = found["claude:user-config"]["error"]
    assert "option 'token' (API token) is required: set " \
        "compat.claude.plugins.user-config.options.token in settings" in error
    options = {"token": "s3cret", "retries": 5, "unknown": 1}
    host, found, _ = load(zpi_env, tmp_path / "2", "user-config",
                          plugins={"user-config": {"options": options}})
    plugin = host.get("claude:user-config").plugin
    assert plugin.option_env() == {
        "CLAUDE_PLUGIN_OPTION_REGION": "eu-west", "CLAUDE_PLUGIN_OPTION_TOKEN": "s3cret",
        "CLAUDE_PLUGIN_OPTION_RETRIES": "5", "CLAUDE_PLUGIN_OPTION_VERBOSE": "false"}
    assert plugin.substitute("t=${user_config.token} r=${CLAUDE_PLUGIN_ROOT} x=${user_config.x}"
                             ) == f"t=s3cret r={plugin.folder.root} x=${{user_config.x}}"
    assert any("options.unknown: the plugin declares no such userConfig option" in w
               for w in plugin.warnings)
    data = plugin.substitute("${CLAUDE_PLUGIN_DATA}")
    assert data == str(zpi_env.agent_dir / "plugin-data" / "claude" / "user-config")
    assert Path(data).is_dir()
    _, found, _ = load(zpi_env, tmp_path / "3", "user-config", plugins={
        "user-config": {"options": {"token": "t", "retries": 99}}})
    assert "options.retries must be at most 10, got 99" in found["claude:user-config"]["error"]


def test_snapshot_is_content_addressed(zpi_env, tmp_path):
    plugin = copy_plugin("placeholders", tmp_path)
    (plugin / ".git").mkdir()
    (plugin / ".git" / "HEAD").write_text("ref")
    script = plugin / "run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    settings = claude_settings([plugin])
    first = folder_of(load_host(settings, tmp_path), "claude:placeholders")
    assert first.root.parent == zpi_env.agent_dir / "plugin-cache" / "claude" / "placeholders"
    assert (first.root / "data.txt").read_text() == "data from the plugin\n"
    assert not (first.root / ".git").exists()
    assert os.access(first.root / "run.sh", os.X_OK)
    again = folder_of(load_host(settings, tmp_path), "claude:placeholders")
    assert again.root == first.root
    (plugin / "data.txt").write_text("edited\n")
    edited = folder_of(load_host(settings, tmp_path), "claude:placeholders")
    assert edited.root != first.root
    assert (edited.root / "data.txt").read_text() == "edited\n"
    assert (first.root / "data.txt").read_text() == "data from the plugin\n"


def test_snapshot_follows_inner_links_and_skips_outer_ones(zpi_env, tmp_path):
    plugin = copy_plugin("minimal", tmp_path / "plugins")
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "big.txt").write_text("outside")
    (tmp_path / "note.txt").write_text("linked file")
    (plugin / "inner.txt").write_text("inner file")
    os.symlink(shared, plugin / "shared")
    os.symlink(tmp_path / "note.txt", plugin / "note.txt")
    os.symlink(plugin / "inner.txt", plugin / "inner-link.txt")
    os.symlink(plugin / "skills", plugin / "skills-again")
    os.symlink(plugin, plugin / "skills" / "loop")
    folder = folder_of(load_host(claude_settings([plugin]), tmp_path), "claude:minimal")
    root = folder.root
    assert (root / "inner-link.txt").read_text() == "inner file"
    assert not (root / "inner-link.txt").is_symlink()
    assert (root / "skills-again" / "tidy" / "SKILL.md").is_file()
    # links leading outside are not copied and not kept: the rule of component/hook paths
    assert not os.path.lexists(root / "note.txt") and not os.path.lexists(root / "shared")
    assert not (root / "skills" / "loop").exists()
    assert any("symlink loop" in w for w in folder.warnings)
    for link, target in (("note.txt", tmp_path / "note.txt"), ("shared", shared)):
        assert any(w.startswith(f"{plugin / link}: skipped: a symlink that leads outside the "
                                f"plugin folder (it resolves to {target})")
                   for w in folder.warnings), folder.warnings


def test_a_huge_folder_is_refused(zpi_env, tmp_path, monkeypatch):
    import zpi_compat_claude.freeze as freeze

    monkeypatch.setattr(freeze, "MAX_ENTRIES", 3)
    _, found, _ = load(zpi_env, tmp_path, "placeholders")
    assert "is too large to snapshot (over 3 files" in found["claude:placeholders"]["error"]
    assert "is it really a plugin folder?" in found["claude:placeholders"]["error"]


def test_an_unwritable_cache_fails_with_the_reason(zpi_env, tmp_path):
    cache = zpi_env.agent_dir / "plugin-cache"
    cache.write_text("not a folder")
    _, found, _ = load(zpi_env, tmp_path, "minimal")
    error = found["claude:minimal"]["error"]
    assert error.startswith("cannot snapshot the plugin into ")
    assert "the agent dir must be writable" in error


def test_installed_plugins_load_when_asked(zpi_env, tmp_path):
    home = zpi_env.home / ".claude"
    install = copy_plugin("user-config", home / "plugins" / "cache" / "market", "user-config")
    (home / "plugins" / "installed_plugins.json").write_text(json.dumps({
        "version": 2, "plugins": {"user-config@market": [
            {"scope": "user", "installPath": str(install), "version": "0.9.0"}]}}))
    (home / "settings.json").write_text(json.dumps({
        "enabledPlugins": {"user-config@market": True},
        "pluginConfigs": {"user-config@market": {"options": {"token": "from-claude",
                                                              "region": "ap"}}}}))
    cwd = tmp_path / "project"
    cwd.mkdir()
    assert "claude:user-config" not in rows(load_host({}, cwd), cwd)
    settings = claude_settings(use_installed=True, plugins={
        "user-config": {"options": {"region": "us"}}})
    host = load_host(settings, cwd)
    assert rows(host, cwd)["claude:user-config"]["version"] == "0.9.0"
    env = host.get("claude:user-config").plugin.option_env()
    assert env["CLAUDE_PLUGIN_OPTION_TOKEN"] == "from-claude"
    assert env["CLAUDE_PLUGIN_OPTION_REGION"] == "us"  # settings win over Claude's values


def test_a_plugin_dir_overrides_the_installed_plugin(zpi_env, tmp_path):
    home = zpi_env.home / ".claude"
    install = copy_plugin("minimal", home / "plugins" / "cache")
    (home / "plugins" / "installed_plugins.json").write_text(json.dumps({
        "version": 2, "plugins": {"minimal@m": [{"installPath": str(install)}]}}))
    (home / "settings.json").write_text('{"enabledPlugins": {"minimal@m": true}}')
    local = copy_plugin("minimal", tmp_path / "dev")
    host = load_host(claude_settings([local], use_installed=True), tmp_path)
    folder = folder_of(host, "claude:minimal")
    assert folder.source == local
    assert any("installed plugin of the same name" in w for w in folder.warnings)


def test_project_and_user_claude_folders(zpi_env, tmp_path):
    user = zpi_env.home / ".claude"
    for base, command in ((user, "hi"), (tmp_path / ".claude", "hi")):
        (base / "commands").mkdir(parents=True)
        (base / "commands" / f"{command}.md").write_text(f"{base.name} says hi $ARGUMENTS\n")
    (user / "skills" / "mine").mkdir(parents=True)
    (user / "skills" / "mine" / "SKILL.md").write_text("---\ndescription: mine\n---\nx\n")
    project = tmp_path / ".claude"
    (project / "commands" / "frontend").mkdir()
    (project / "commands" / "frontend" / "bye.md").write_text("bye\n")
    (project / "agents").mkdir()
    (project / "agents" / "ops.md").write_text("---\ndescription: ops\n---\nYou operate.\n")
    host = load_host({}, tmp_path)
    found = rows(host, tmp_path)
    assert found["claude:user"]["contributes"] == {"commands": ["hi"], "skills": ["mine"],
                                                   "resources": [str(user)]}
    assert found["claude:project"]["contributes"]["commands"] == ["bye"]
    assert found["claude:project"]["contributes"]["agents"] == ["ops"]
    assert any("/hi is already defined in ~/.claude" in w
               for w in folder_of(host, "claude:project").warnings)
    loader = resources_of(host, tmp_path, zpi_env.agent_dir)
    assert [s.name for s in loader.skills] == ["mine"]
    assert [a.name for a in loader.agents] == ["ops"]
    # the folders' command files (an installed plugin may add commands of its own: /init)
    assert {c.name for c in loader.commands if c.path is not None} == {"hi", "bye"}


def test_home_as_project_loads_once(zpi_env):
    (zpi_env.home / ".claude" / "commands").mkdir(parents=True)
    (zpi_env.home / ".claude" / "commands" / "x.md").write_text("x\n")
    found = rows(load_host({}, zpi_env.home), zpi_env.home)
    assert "claude:user" in found and "claude:project" not in found


@needs_hooks
def test_settings_hooks_run_only_when_listed(zpi_env, tmp_path):
    claude_dir = tmp_path / ".claude"
    claude_dir.mkdir()
    hooks = {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "echo project"}]}]}
    (claude_dir / "settings.json").write_text(json.dumps({"hooks": hooks}))
    (claude_dir / "settings.local.json").write_text('{"hooks": {"Stop": [{"hooks": [')
    (zpi_env.home / ".claude").mkdir()
    (zpi_env.home / ".claude" / "settings.json").write_text(json.dumps(
        {"hooks": hooks, "disableAllHooks": True}))
    assert not any(n.startswith("claude:settings") for n in rows(load_host({}, tmp_path),
                                                                  tmp_path))
    settings = claude_settings(settings_sources=["user", "project", "local"])
    host = load_host(settings, tmp_path)
    found = rows(host, tmp_path)
    assert found["claude:settings-project"]["contributes"] == {"hooks": ["PreToolUse"]}
    assert "zpi_before_tool" in found["claude:settings-project"]["hooks"]
    assert host.get("claude:settings-project").plugin.root == claude_dir
    assert "settings.local.json: invalid JSON" in found["claude:settings-local"]["error"]
    assert "claude:settings-user" not in found  # disableAllHooks


@needs_hooks
def test_a_folder_with_hooks_is_one_combined_plugin(zpi_env, tmp_path):
    from zpi_compat_claude.hooks import ClaudeHooks

    plugin = copy_plugin("minimal", tmp_path / "plugins", "guarded")
    (plugin / "hooks").mkdir()
    (plugin / "hooks" / "hooks.json").write_text(json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command",
                                       "command": "${CLAUDE_PLUGIN_ROOT}/hooks/x.sh"}]},
        {"matcher": "Bash(", "hooks": [{"type": "command", "command": "true"}]}]}}))
    (plugin / ".claude-plugin").mkdir()
    (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps({
        "name": "guarded", "hooks": [
            "./hooks/hooks.json",
            {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "true"}]}]}},
        ]}))
    host = load_host(claude_settings([plugin], hook_timeout=7), tmp_path)
    found = rows(host, tmp_path)["claude:guarded"]
    assert found["status"] == "ok", found["error"]
    assert found["contributes"]["hooks"] == ["PreToolUse", "SessionStart"]
    assert {"zpi_before_tool", "zpi_session_start", "zpi_register_commands",
            "zpi_register_resources"} <= set(found["hooks"])
    obj = host.get("claude:guarded").plugin
    assert isinstance(obj, ClaudeFolderPlugin) and isinstance(obj, ClaudeHooks)
    assert obj.root == obj.folder.root and obj.timeout_s == 7.0
    assert obj.data_dir == zpi_env.agent_dir / "plugin-data" / "claude" / "guarded"
    warnings = " | ".join(obj.warnings)
    assert "listed twice" in warnings and "Bash(" in warnings


def test_a_dependency_that_is_not_loaded_warns(zpi_env, tmp_path):
    plugin = copy_plugin("minimal", tmp_path / "plugins", "needy")
    (plugin / ".claude-plugin").mkdir()
    (plugin / ".claude-plugin" / "plugin.json").write_text(
        '{"name": "needy", "dependencies": ["minimal", "absent@market"]}')
    base = copy_plugin("minimal", tmp_path / "plugins")
    folder = folder_of(load_host(claude_settings([plugin, base]), tmp_path), "claude:needy")
    assert [w for w in folder.warnings if "depends on" in w] == [
        "depends on plugin 'absent', which is not loaded; add its folder with --plugin-dir"]


def test_corpus_folders_stay_unchanged(zpi_env, tmp_path):
    """Loading straight from the corpus writes nothing into it (the cache is elsewhere)."""
    before = sorted(p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*"))
    load_host(claude_settings([CORPUS / "minimal", CORPUS / "placeholders"]), tmp_path)
    assert sorted(p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*")) == before
    shutil.rmtree(zpi_env.agent_dir / "plugin-cache")


def test_copies_unused_for_two_weeks_are_pruned_when_a_new_one_is_made(tmp_path):
    import os
    import time

    from zpi_compat_claude.freeze import KEEP_UNUSED_DAYS, freeze

    source = tmp_path / "plugin"
    (source / "skills" / "a").mkdir(parents=True)
    (source / "skills" / "a" / "SKILL.md").write_text("---\ndescription: one\n---\n")
    cache = tmp_path / "cache"
    first = freeze(source, cache, [])
    (cache / f"{first.key}.index.json").write_text("{}")  # a derived sibling
    old = time.time() - (KEEP_UNUSED_DAYS + 1) * 86_400
    os.utime(first.root, (old, old))
    (source / "skills" / "a" / "SKILL.md").write_text("---\ndescription: two\n---\n")
    second = freeze(source, cache, [])
    assert second.key != first.key and second.root.is_dir()
    assert not first.root.exists() and not (cache / f"{first.key}.index.json").exists()
    recent = freeze(source, cache, [])  # in use again: refreshed, not pruned
    assert recent.root == second.root and second.root.is_dir()


@needs_hooks
def test_hostile_settings_files_are_reported_not_read(zpi_env, tmp_path):
    """A FIFO ``.claude/settings.json`` used to block the load; a settings file linked out of
    the project, or to ``/dev/zero``, is refused (files a repository ships)."""
    claude_dir = tmp_path / ".claude"
    claude_dir.mkdir()
    os.mkfifo(claude_dir / "settings.json")
    (tmp_path.parent / "elsewhere.json").write_text('{"hooks": {}}')
    os.symlink(tmp_path.parent / "elsewhere.json", claude_dir / "settings.local.json")
    settings = claude_settings(settings_sources=["project", "local"])
    found = rows(load_host(settings, tmp_path), tmp_path)
    project, local = found["claude:settings-project"], found["claude:settings-local"]
    assert project["status"] == "failed"
    assert "settings.json: it is a FIFO (named pipe), not a regular file" in project["error"]
    assert local["status"] == "failed"
    assert (f"settings.local.json: it is a symlink to {tmp_path.parent}/elsewhere.json, "
            f"outside {tmp_path}") in local["error"]


def test_a_manifest_that_is_a_device_fails_its_folder(zpi_env, tmp_path):
    plugin = copy_plugin("minimal", tmp_path / "plugins", "zeroed")
    (plugin / ".claude-plugin").mkdir(exist_ok=True)
    manifest = plugin / ".claude-plugin" / "plugin.json"
    manifest.unlink(missing_ok=True)
    os.symlink("/dev/zero", manifest)
    found = rows(load_host(claude_settings([plugin]), tmp_path), tmp_path)
    [row] = [r for r in found.values() if r["status"] == "failed"]
    assert f"{manifest}: it is a symlink to /dev/zero, outside {plugin}" in row["error"]


def test_hostile_command_files_of_the_project_are_problems_of_its_folder(zpi_env, tmp_path):
    """``.claude/commands`` ships with the repository: a FIFO, a file over 4 MiB and a link
    out of the project are each a warning of ``claude:project`` in ``--list-plugins``, and
    none is read (the cache of parsed files does not serve them either)."""
    commands = tmp_path / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "good.md").write_text("fine\n")
    os.mkfifo(commands / "pipe.md")
    (commands / "big.md").write_text("x" * (4 * 1024 * 1024 + 1))
    (tmp_path.parent / "private.md").write_text("PRIVATE\n")
    os.symlink(tmp_path.parent / "private.md", commands / "out.md")
    for _ in range(2):  # the second load reads the cache the first one wrote
        row = rows(load_host({}, tmp_path), tmp_path)["claude:project"]
        assert row["status"] == "ok" and row["contributes"]["commands"] == ["good"]
        warnings = "\n".join(row["warnings"])
        assert (f"command {commands}/pipe.md: it is a FIFO (named pipe), not a regular file; "
                "it was not read") in warnings
        assert (f"command {commands}/big.md: it is {4 * 1024 * 1024 + 1} bytes, more than "
                "the 4 MiB a Markdown file may have") in warnings
        assert (f"command {commands}/out.md: it is a symlink to {tmp_path.parent}/private.md, "
                f"outside {tmp_path}") in warnings
