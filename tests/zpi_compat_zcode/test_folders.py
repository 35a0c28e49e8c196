"""The ZCode corpus folder by folder through a real PluginHost: what registers as
``zcode:<name>``, what it contributes, why it fails; ZCode's personal folders; routing of
``--plugin-dir``; dual Claude/ZCode folders read by each adapter its own way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.zcode import (
    CORPUS,
    copy_plugin,
    load_host,
    personal_folders,
    rows,
    zcode_settings,
)

from zpi_host.resources import ResourceLoader


def load(tmp_path: Path, *names: str, **zcode):
    cwd = tmp_path / "project"
    cwd.mkdir(parents=True, exist_ok=True)
    dirs = [copy_plugin(name, tmp_path / "plugins") for name in names]
    host = load_host(zcode_settings(dirs, **zcode), cwd)
    return host, rows(host, cwd), cwd


def resources_of(host, cwd: Path, agent_dir: Path) -> ResourceLoader:
    from zpi_host.contract.hookcalls import run_sync
    from zpi_host.session.assembly import load_resources

    return run_sync(load_resources(host, cwd, agent_dir, {}))  # type: ignore[no-any-return]


def folder_of(host, name: str):
    return host.get(name).plugin.folder


# ------------------------------------------------------------------------------ the corpus


def test_zc_kit_dotted_name_string_author_bare_paths_default_version(zpi_env, tmp_path):
    host, found, cwd = load(tmp_path, "zc-kit")
    row = found["zcode:zc.kit_1"]
    assert (row["source"], row["status"], row["version"]) == ("zcode", "ok", "0.0.0")
    assert row["contributes"]["skills"] == ["zc.kit_1:base", "zc.kit_1:extra"]
    assert row["contributes"]["commands"] == ["zc.kit_1:git:commit", "zc.kit_1:tidy"]
    assert row["warnings"] == []  # displayName_i18n, description_i18n, icon are ZCode's fields
    loader = resources_of(host, cwd, zpi_env.agent_dir)
    base = next(s for s in loader.skills if s.name == "zc.kit_1:base")
    text = base.path.read_text()
    root = folder_of(host, "zcode:zc.kit_1").root
    assert f"{root}/scripts (also {root}/scripts)" in text  # ZCODE_ and CLAUDE_ names filled
    assert root.is_relative_to(zpi_env.agent_dir / "plugin-cache" / "zcode" / "zc.kit_1")


def test_dual_folder_is_zcode_first_for_zcode_and_claude_for_claude(zpi_env, tmp_path):
    dual = copy_plugin("dual", tmp_path / "plugins")
    settings = {"compat": {"zcode": {"plugin_dirs": [str(dual)]},
                           "claude": {"plugin_dirs": [str(dual)]}}}
    host = load_host(settings, tmp_path)
    zcode = rows(host, tmp_path)["zcode:dual-zc"]
    claude = rows(host, tmp_path, "claude:")["claude:dual-claude"]
    assert (zcode["version"], zcode["status"]) == ("1.2.0", "ok")
    assert (claude["version"], claude["status"]) == ("1.0.0", "ok")
    assert zcode["contributes"]["commands"] == ["dual-zc:hi"]
    assert zcode["contributes"]["hooks"] == claude["contributes"]["hooks"] == ["SessionStart"]
    # ZCode runs both handlers; Claude Code has no "process" handler type
    assert not any("process" in w for w in zcode["warnings"])
    assert any("unknown handler type 'process'" in w for w in claude["warnings"])


def test_a_claude_manifest_is_read_with_zcode_rules(zpi_env, tmp_path):
    _, found, _ = load(tmp_path, "legacy-kit")
    row = found["zcode:legacy.kit"]
    assert row["status"] == "ok" and row["contributes"]["commands"] == ["legacy.kit:check"]
    # the same folder as a Claude plugin: the name is not kebab-case, the path lacks ./
    claude = load_host({"compat": {"claude": {"plugin_dirs": [str(CORPUS / "legacy-kit")]}}},
                       tmp_path)
    failed = rows(claude, tmp_path, "claude:")["claude:legacy.kit"]
    assert failed["status"] == "failed" and "must be kebab-case" in failed["error"]


@pytest.mark.parametrize("name, plugin, reason", [
    ("bad-name", "zcode:Bad Name!", "plugin name 'Bad Name!' must be lowercase letters"),
    ("escape-dotdot", "zcode:escape-dotdot", "leads outside the plugin folder"),
    ("escape-absolute", "zcode:escape-absolute", "must be relative to the plugin folder"),
])
def test_broken_folders_fail_with_the_reason(zpi_env, tmp_path, name, plugin, reason):
    _, found, _ = load(tmp_path, name, "zc-kit")
    assert found[plugin]["status"] == "failed" and found[plugin]["source"] == "zcode"
    assert reason in found[plugin]["error"]
    assert found["zcode:zc.kit_1"]["status"] == "ok"  # the others load anyway


def test_a_hook_folder_lists_its_events_and_what_zcode_would_skip(zpi_env, tmp_path):
    host, found, _ = load(tmp_path, "hooks-zc")
    row = found["zcode:hooks-zc"]
    assert row["version"] == "0.3.0" and row["status"] == "ok"
    assert sorted(row["contributes"]["hooks"]) == sorted([
        "SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse",
        "PostToolUseFailure", "Stop"])
    assert {"zpi_session_start", "zpi_user_prompt", "zpi_before_tool", "zpi_permission_request",
            "zpi_after_tool", "zpi_tool_failed", "zpi_stop"} <= set(row["hooks"])
    assert "zpi_session_end" not in row["hooks"]
    warnings = " | ".join(row["warnings"])
    assert "SessionEnd is not a ZCode event" in warnings
    assert "matcher 'Bash(' is not a valid regular expression" in warnings
    plugin = host.get("zcode:hooks-zc").plugin
    assert plugin.dialect.name == "zcode" and plugin.timeout_s == 60.0
    pre = plugin._matching("PreToolUse", "Bash")
    assert len(pre) == 1 and pre[0].argv is not None  # the "enabled": false one is skipped
    assert pre[0].argv[:2] == ("python3", f"{plugin.root}/hooks/record.py")
    assert plugin._matching("PreToolUse", "Task")  # "Agent" matches Task: aliases
    start = plugin._matching("SessionStart", "startup")
    assert start[0].timeout_s == 20.0 and start[0].output_cap == 32 * 1024


def test_corpus_folders_stay_unchanged(zpi_env, tmp_path):
    before = sorted(p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*"))
    load_host(zcode_settings([CORPUS / "zc-kit", CORPUS / "hooks-zc", CORPUS / "dual"]),
              tmp_path)
    assert sorted(p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*")) == before


# ------------------------------------------------------------------------------ personal folders


def test_personal_skills_and_commands_from_zcode_and_agents_folders(zpi_env, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    personal_folders(zpi_env.home, project)
    host = load_host({}, project)
    found = rows(host, project)
    assert found["zcode:user"]["contributes"]["skills"] == ["home-skill"]
    assert found["zcode:user"]["contributes"]["commands"] == ["a:b", "review"]
    assert found["zcode:user-agents"]["contributes"]["skills"] == ["agents-skill"]
    assert found["zcode:project"]["contributes"]["skills"] == ["project-skill"]
    assert "commands" not in found["zcode:project"]["contributes"]  # /review: the user's wins
    assert any("/review is already defined in ~/.zcode" in w
               for w in found["zcode:project"]["warnings"])
    assert found["zcode:project-agents"]["contributes"] == {
        "commands": ["ops:deploy"], "resources": [str(project / ".agents")],
        "skills": ["shared"]}
    loader = resources_of(host, project, zpi_env.agent_dir)
    assert {s.name for s in loader.skills} >= {"home-skill", "agents-skill", "project-skill",
                                               "shared"}
    commands = {c.name for c in loader.commands}
    assert {"a:b", "review", "ops:deploy"} <= commands


def test_nothing_zcode_loads_nothing(zpi_env, tmp_path):
    found = rows(load_host({}, tmp_path), tmp_path)
    assert found == {}


# ------------------------------------------------------------------------------ routing


def test_plugin_dir_goes_to_zcode_when_the_folder_has_zcode_plugin(tmp_path):
    from zpi_host.settings.plugin_dirs import with_plugin_dirs

    zc = copy_plugin("zc-kit", tmp_path)
    dual = copy_plugin("dual", tmp_path)
    legacy = copy_plugin("legacy-kit", tmp_path)
    settings = {"compat": {"zcode": {"plugin_dirs": ["/kept"]}}}
    merged = with_plugin_dirs(settings, [zc, legacy, dual], [legacy])
    assert merged["compat"]["zcode"]["plugin_dirs"] == [str(zc), str(dual), str(legacy),
                                                        "/kept"]
    assert merged["compat"]["claude"]["plugin_dirs"] == [str(legacy)]
    assert settings["compat"]["zcode"]["plugin_dirs"] == ["/kept"]  # not modified


def test_a_bad_zcode_setting_fails_the_zcode_plugin(zpi_env, tmp_path):
    host = load_host({"compat": {"zcode": {"plugin_dirs": "not-a-list"}}}, tmp_path)
    record = host.get("zcode")
    assert record.status == "failed"
    assert "compat.zcode.plugin_dirs must be a list" in record.error


def test_installed_and_enabled_zcode_plugins(zpi_env, tmp_path):
    home = zpi_env.home / ".zcode"
    install = copy_plugin("zc-kit", home / "plugins" / "cache")
    other = copy_plugin("dual", home / "plugins" / "cache")
    (home / "plugins" / "installed_plugins.json").write_text(json.dumps({
        "version": 2, "plugins": {
            "zc.kit_1@market": [{"scope": "user", "installPath": str(install),
                                 "version": "2.0.0"}],
            "dual-zc@market": [{"scope": "user", "installPath": str(other)}]}}))
    (home / "cli").mkdir()
    (home / "cli" / "config.json").write_text(json.dumps({"enabledPlugins": {
        "zc.kit_1@market": True, "dual-zc@market": True, "gone@market": True}}))
    project = tmp_path / "project"
    (project / ".zcode").mkdir(parents=True)
    (project / ".zcode" / "config.json").write_text('{"enabledPlugins": {"dual-zc@market": false}}')
    assert "zcode:zc.kit_1" not in rows(load_host({}, project), project)  # off by default
    host = load_host(zcode_settings(use_installed=True), project)
    found = rows(host, project)
    assert found["zcode:zc.kit_1"]["status"] == "ok"
    assert "zcode:dual-zc" not in found  # the workspace config switched it off
    assert "not installed" in found["zcode:gone"]["error"]
    assert folder_of(host, "zcode:zc.kit_1").plugin_id == "zc.kit_1@market"
