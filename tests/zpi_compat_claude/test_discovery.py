"""Where folders come from: settings, Claude Code's installed plugins, Claude's settings files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zpi_compat_claude.discovery import (
    ClaudeSettings,
    ClaudeSettingsError,
    claude_home,
    claude_options,
    configured_folders,
    installed_folders,
    settings_file,
)


def write(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_settings_defaults_and_values(tmp_path):
    assert ClaudeSettings.from_settings({}, tmp_path) == ClaudeSettings()
    config = ClaudeSettings.from_settings({"compat": {"claude": {
        "plugin_dirs": ["rel/p", "~/abs", str(tmp_path / "x")],
        "use_installed": True, "settings_sources": ["project", "local", "project"],
        "plugins": {"kit": {"options": {"region": "us"}}}, "hook_timeout": 5,
    }}}, tmp_path)
    assert config.plugin_dirs == (tmp_path / "rel/p", Path.home() / "abs", tmp_path / "x")
    assert config.use_installed and config.settings_sources == ("project", "local")
    assert config.plugin_options == {"kit": {"region": "us"}}
    assert config.hook_timeout == 5.0


@pytest.mark.parametrize("claude, key", [
    ({"plugin_dirs": "one"}, "compat.claude.plugin_dirs must be a list"),
    ({"plugin_dirs": [1]}, "compat.claude.plugin_dirs must be a list"),
    ({"use_installed": "yes"}, "compat.claude.use_installed must be true or false"),
    ({"settings_sources": ["managed"]}, "compat.claude.settings_sources must be a list of"),
    ({"plugins": []}, "compat.claude.plugins must be an object"),
    ({"plugins": {"kit": {"options": 3}}}, "compat.claude.plugins.kit must be an object"),
    ({"hook_timeout": 0}, "compat.claude.hook_timeout must be a number of seconds"),
])
def test_bad_settings_name_the_key(tmp_path, claude, key):
    with pytest.raises(ClaudeSettingsError, match=key.replace(".", r"\.")):
        ClaudeSettings.from_settings({"compat": {"claude": claude}}, tmp_path)


def test_configured_folders_once_each(tmp_path):
    (tmp_path / "a").mkdir()
    config = ClaudeSettings(plugin_dirs=(tmp_path / "a", tmp_path / "b", tmp_path / "a"))
    assert [r.path for r in configured_folders(config)] == [tmp_path / "a", tmp_path / "b"]


def test_claude_home_and_settings_files(tmp_path, monkeypatch):
    assert claude_home() == Path.home() / ".claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cfg"))
    assert claude_home() == tmp_path / "cfg"
    home, cwd = tmp_path / "home", tmp_path / "proj"
    assert settings_file("user", home, cwd) == home / "settings.json"
    assert settings_file("project", home, cwd) == cwd / ".claude" / "settings.json"
    assert settings_file("local", home, cwd) == cwd / ".claude" / "settings.local.json"


@pytest.fixture
def claude(tmp_path: Path) -> tuple[Path, Path]:
    """A fake ~/.claude with four installed plugins and a project."""
    home, project = tmp_path / "home" / ".claude", tmp_path / "project"
    project.mkdir(parents=True)
    cache = home / "plugins" / "cache" / "market"
    for name in ("alpha", "beta", "gamma", "delta"):
        (cache / name / "1.0.0").mkdir(parents=True)
    write(home / "plugins" / "installed_plugins.json", {"version": 2, "plugins": {
        "alpha@market": [{"scope": "user", "installPath": str(cache / "alpha/1.0.0"),
                          "version": "1.0.0"}],
        "beta@market": [{"scope": "project", "projectPath": str(project),
                         "installPath": str(cache / "beta/1.0.0"), "version": "1.0.0"}],
        "gamma@market": [{"scope": "project", "projectPath": str(tmp_path / "other"),
                          "installPath": str(cache / "gamma/1.0.0")}],
        "delta@market": [{"scope": "user", "installPath": str(cache / "delta/1.0.0")}],
        "gone@market": [{"scope": "user", "installPath": str(cache / "gone/1.0.0")}],
    }})
    write(home / "settings.json", {"enabledPlugins": {
        "alpha@market": True, "gamma@market": True, "delta@market": True,
        "gone@market": True, "missing@market": True,
    }, "pluginConfigs": {"alpha@market": {"options": {"region": "ap"}}}})
    write(project / ".claude" / "settings.json", {"enabledPlugins": {"beta@market": True}})
    write(project / ".claude" / "settings.local.json", {"enabledPlugins": {
        "delta@market": False}})
    return home, project


def test_installed_and_enabled_plugins(claude):
    home, project = claude
    refs, broken = installed_folders(home, project)
    assert [(r.plugin_id, r.path.parts[-2]) for r in refs] == [
        ("alpha@market", "alpha"), ("beta@market", "beta")]
    assert refs[0].version == "1.0.0" and "installed by Claude Code" in refs[0].origin
    reasons = {b.name: b.reason for b in broken}
    assert "not a folder; reinstall it" in reasons["claude:gone"]
    assert "enabled in Claude's settings but not installed" in reasons["claude:missing"]
    assert claude_options(home, "alpha@market") == {"region": "ap"}
    assert claude_options(home, "beta@market") == {}


def test_installed_format_one(tmp_path):
    home = tmp_path / ".claude"
    (tmp_path / "p").mkdir()
    write(home / "plugins" / "installed_plugins.json", {"version": 1, "plugins": {
        "p@m": {"installPath": str(tmp_path / "p"), "version": "0.1"}}})
    write(home / "settings.json", {"enabledPlugins": {"p@m": True}})
    refs, broken = installed_folders(home, tmp_path)
    assert [r.path for r in refs] == [tmp_path / "p"] and broken == []


def test_nothing_installed_is_not_a_problem(tmp_path):
    assert installed_folders(tmp_path / ".claude", tmp_path) == ([], [])


def test_unreadable_files_become_one_failed_entry(tmp_path):
    home = tmp_path / ".claude"
    write(home / "plugins" / "installed_plugins.json", '{"plugins": {')
    write(home / "settings.json", "{oops")
    refs, broken = installed_folders(home, tmp_path)
    assert refs == [] and [b.name for b in broken] == ["claude:installed"]
    assert "installed_plugins.json: invalid JSON at line 1" in broken[0].reason
    assert "settings.json: invalid JSON at line 1, column 2" in broken[0].reason
    write(home / "plugins" / "installed_plugins.json", {"version": 9, "entries": []})
    write(home / "settings.json", {"enabledPlugins": "all"})
    refs, broken = installed_folders(home, tmp_path)
    assert "is this a newer format?" in broken[0].reason
    assert "enabledPlugins must be an object" in broken[0].reason
