"""``.claude-plugin/plugin.json``: fields, types, names, userConfig and component paths."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers.claude_folders import CORPUS

from zpi_compat_claude.manifest import (
    ManifestError,
    UserOption,
    folder_name_problem,
    read_manifest,
    resolve_component,
)


def write_manifest(root: Path, data: object) -> Path:
    path = root / ".claude-plugin" / "plugin.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_no_manifest_is_fine():
    warnings: list[str] = []
    assert read_manifest(CORPUS / "minimal", warnings) is None
    assert warnings == []


def test_every_known_field_and_an_unknown_one():
    warnings: list[str] = []
    manifest = read_manifest(CORPUS / "full-manifest", warnings)
    assert manifest is not None
    assert (manifest.name, manifest.version) == ("full-kit", "2.1.0")
    assert manifest.commands == ("./custom/cmds/", "./extra/one.md")
    assert manifest.agents == ("./custom/agents/",)
    assert manifest.skills == ("./more-skills/",)
    assert manifest.raw["license"] == "MIT"
    assert len(warnings) == 1
    assert "unknown field 'category'" in warnings[0] and "plugin.json" in warnings[0]


def test_invalid_json_names_line_and_column():
    with pytest.raises(ManifestError) as info:
        read_manifest(CORPUS / "bad-json", [])
    message = str(info.value)
    assert "bad-json/.claude-plugin/plugin.json: invalid JSON at line 4, column 3" in message
    assert "Expecting ',' delimiter" in message


@pytest.mark.parametrize("data, expected", [
    ({"name": "x", "commands": 42}, "field 'commands' must be a string or a list, got number"),
    ({"name": "x", "keywords": "a,b"}, "field 'keywords' must be a list, got text"),
    ({"name": "x", "keywords": ["a", 1]}, "keywords[1] must be a string"),
    ({"name": "x", "author": "Ada"}, "field 'author' must be an object"),
    ({"name": "x", "author": {"name": 7}}, "author.name must be a string"),
    ({"name": "x", "hooks": 3}, "field 'hooks' must be a string or an object or a list"),
    ({"name": "x", "skills": ["./a", {}]}, "skills[1] must be a path string"),
    ({"name": "x", "mcpServers": [1]}, "mcpServers[0] must be a path string or an object"),
    ({"name": "x", "dependencies": [3]}, "dependencies[0] must be a plugin name"),
    ({"name": 5}, "field 'name' must be a string"),
    ([], "the manifest must be a JSON object, got list"),
    ({"version": "1"}, "the manifest has no \"name\""),
])
def test_wrong_types_fail_with_the_field(tmp_path, data, expected):
    write_manifest(tmp_path, data)
    with pytest.raises(ManifestError, match=r"plugin\.json") as info:
        read_manifest(tmp_path, [])
    assert expected in str(info.value)


@pytest.mark.parametrize("name", ["Bad Name", "under_score", "-lead", "trail-", "a--b", "Caps"])
def test_names_must_be_kebab_case(tmp_path, name):
    write_manifest(tmp_path, {"name": name})
    with pytest.raises(ManifestError, match="must be kebab-case"):
        read_manifest(tmp_path, [])


@pytest.mark.parametrize("name", ["a", "deploy-tools", "v2-kit", "x1"])
def test_kebab_names_pass(tmp_path, name):
    write_manifest(tmp_path, {"name": name})
    manifest = read_manifest(tmp_path, [])
    assert manifest is not None and manifest.name == name


def test_folder_names_without_a_manifest():
    assert folder_name_problem("My_Plugin.v2") is None
    problem = folder_name_problem("my plugin")
    assert problem is not None and "rename the folder" in problem


def test_dependencies_keep_the_plugin_name(tmp_path):
    write_manifest(tmp_path, {"name": "x", "dependencies": ["base@market", {"name": "util"}]})
    manifest = read_manifest(tmp_path, [])
    assert manifest is not None and manifest.dependencies == ("base", "util")


def test_user_config_options(tmp_path):
    manifest = read_manifest(CORPUS / "user-config", [])
    assert manifest is not None
    options = {o.key: o for o in manifest.user_config}
    assert options["region"].default == "eu-west" and options["region"].type == "string"
    assert options["token"].required and options["token"].sensitive
    assert options["retries"].env_name == "CLAUDE_PLUGIN_OPTION_RETRIES"
    assert UserOption("api-key.x").env_name == "CLAUDE_PLUGIN_OPTION_API_KEY_X"


@pytest.mark.parametrize("config, expected", [
    ({"level": {"type": "colour"}}, "userConfig.level.type must be one of string, number"),
    ({"level": "high"}, "userConfig.level must be an object"),
    ({"9lives": {"type": "string"}}, "option keys must be letters"),
    ({"n": {"type": "number", "default": "3"}}, "userConfig.n.default must be a number"),
    ({"n": {"type": "number", "default": 11, "max": 10}}, "must be at most 10"),
    ({"b": {"type": "boolean", "required": "yes"}}, "userConfig.b.required must be true or"),
    ({"s": {"type": "string", "multiple": True, "default": "a"}}, "must be a list"),
])
def test_bad_user_config_fails(tmp_path, config, expected):
    write_manifest(tmp_path, {"name": "x", "userConfig": config})
    with pytest.raises(ManifestError) as info:
        read_manifest(tmp_path, [])
    assert expected in str(info.value)


def test_option_value_checks():
    number = UserOption("n", "number", min=1, max=5)
    assert number.problem(3) is None and number.problem(True) is not None
    assert "at least 1" in (number.problem(0) or "")
    assert UserOption("b", "boolean").problem("true") is not None
    assert UserOption("d", "directory").problem("/tmp") is None
    assert UserOption("m", "string", multiple=True).problem(["a", 2]) is not None


def test_component_paths_must_start_with_dot_slash(tmp_path):
    (tmp_path / "agents").mkdir()
    assert resolve_component(tmp_path, "./agents/", "agents") == (tmp_path / "agents").resolve()
    with pytest.raises(ManifestError, match=r"must start with '\./'.*write \"\./agents/\""):
        resolve_component(tmp_path, "agents/", "agents")
    with pytest.raises(ManifestError, match=r"must start with '\./' \(relative to the plugin"):
        resolve_component(tmp_path, "/etc", "commands")


def test_component_paths_must_stay_inside(tmp_path):
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (tmp_path / "outside").mkdir()
    with pytest.raises(ManifestError, match="leads outside the plugin folder"):
        resolve_component(plugin, "./../outside", "skills")
    os.symlink(tmp_path / "outside", plugin / "linked")
    with pytest.raises(ManifestError, match=f"resolves to {tmp_path / 'outside'}"):
        resolve_component(plugin, "./linked", "skills")
    os.symlink(plugin / "real", plugin / "inner")
    (plugin / "real").mkdir()
    assert resolve_component(plugin, "./inner", "skills") == (plugin / "real").resolve()
