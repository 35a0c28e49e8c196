"""The settings schema: a value of the wrong type is a warning naming file, key and expected
type, and only that key falls back; the table agrees with the readers and the docs."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from zpi_host.settings import schema as settings_schema
from zpi_host.settings.manager import SettingsManager
from zpi_host.settings.schema import SCHEMA, Section, check_layer, find, settings_table

REPO = Path(__file__).resolve().parents[2]

# Each crashed a run with a traceback before (issue 11), with: key path, expected words.
WRONG = [
    ({"compaction": None}, "compaction", "must be an object"),
    ({"compaction": {"enabled": 1}}, "compaction.enabled", "must be true or false"),
    ({"plugins": None}, "plugins", "must be an object"),
    ({"tools": {"output_limit_bytes": "x"}}, "tools.output_limit_bytes",
     "must be a whole number >= 1"),
    ({"tools": []}, "tools", "must be an object"),
    ({"sessions": []}, "sessions", "must be an object"),
    ({"sessions": {"fsync": "always"}}, "sessions.fsync", 'must be one of "turn", "record"'),
    ({"permissions": {"allow": "bash"}}, "permissions.allow", "must be a list of strings"),
    ({"requests": {"max_retries": -1}}, "requests.max_retries", "whole number >= 0"),
    ({"compat": {"claude": {"plugin_dirs": "x"}}}, "compat.claude.plugin_dirs",
     "must be a list of strings"),
    ({"hooks": {"timeout": "soon"}}, "hooks.timeout", "seconds > 0 or null"),
    ({"model": 3}, "model", "must be a string or null"),
]


def _manager(tmp_path: Path, project: dict, user: dict | None = None) -> SettingsManager:
    agent, cwd = tmp_path / "agent", tmp_path / "project"
    (cwd / ".zpi").mkdir(parents=True)
    agent.mkdir()
    (cwd / ".zpi" / "settings.json").write_text(json.dumps(project))
    if user is not None:
        (agent / "settings.json").write_text(json.dumps(user))
    return SettingsManager(agent, cwd)


@pytest.mark.parametrize(("data", "key", "expected"), WRONG)
def test_a_wrong_type_is_a_warning_and_the_key_falls_back(tmp_path, data, key, expected):
    manager = _manager(tmp_path, {**data, "reasoning_level": "low"})
    [problem] = manager.problems
    text = str(problem)
    assert str(manager.project_path) in text and f"setting {key} " in text
    assert expected in text and "falls back" in text
    assert manager.get(key) is None  # dropped: the reader uses its default
    assert manager.get("reasoning_level") == "low"  # the rest of the file still applies
    assert json.loads(manager.project_path.read_text())  # the file is left as it was


def test_a_wrong_project_value_leaves_the_users_value(tmp_path):
    manager = _manager(tmp_path, {"tools": {"output_limit_bytes": "x"}},
                       user={"tools": {"output_limit_bytes": 100}})
    assert manager.get("tools.output_limit_bytes") == 100
    assert len(manager.problems) == 1


def test_unknown_keys_in_a_closed_section_are_dropped_with_a_suggestion(tmp_path):
    manager = _manager(tmp_path, {"compaction": {"enabeld": False, "enabled": False},
                                  "my_plugin": {"x": 1}})
    [problem] = manager.problems
    assert "compaction.enabeld is not a known setting (did you mean compaction.enabled?)" \
        in str(problem)
    assert manager.settings["compaction"] == {"enabled": False}
    assert manager.get("my_plugin.x") == 1  # top-level keys belong to plugins: kept, silent


def test_unknown_keys_in_an_open_section_are_kept_with_a_warning(tmp_path):
    manager = _manager(tmp_path, {"tools": {"output_limit_byte": 5}})
    [problem] = manager.problems
    assert "did you mean tools.output_limit_bytes?" in str(problem)
    assert "kept" in str(problem) and manager.get("tools.output_limit_byte") == 5


def test_in_memory_settings_are_checked_too():
    manager = SettingsManager.in_memory({"plugins": {"disabled": "x"}})
    assert "plugins.disabled must be a list of strings" in str(manager.problems[0])
    assert manager.get("plugins.disabled") is None


def test_update_checks_the_new_value(tmp_path):
    manager = _manager(tmp_path, {})
    manager.update("project", {"compaction.enabled": "yes"})
    assert "compaction.enabled" in str(manager.problems[0])
    assert manager.get("compaction.enabled") is None
    manager.update("project", {"compaction.enabled": False})
    assert manager.problems == () and manager.get("compaction.enabled") is False


def test_secrets_in_a_wrong_value_are_not_echoed():
    manager = SettingsManager.in_memory({"models": [{"api_key": "sk-secret-123"}]})
    text = str(manager.problems[0])
    assert "sk-secret" not in text and "a list of 1 item" in text


# ------------------------------------------------------------- the table and its readers


def test_defaults_and_choices_agree_with_the_readers():
    from zpi_compat_claude.discovery import SETTINGS_SOURCES
    from zpi_host.agent import compaction, loop, toolcalls
    from zpi_host.contract import hookrunner
    from zpi_host.permissions.policy import PERMISSION_KEYS
    from zpi_host.permissions.results import MODES
    from zpi_host.providers.catalog import RequestPolicy
    from zpi_host.session.options import REASONING_LEVELS

    default = settings_schema.default
    assert {f.name: f.default for f in attrs.fields(RequestPolicy)} == {
        name: default(f"requests.{name}") for name in _names("requests")}
    assert {f.name: f.default for f in attrs.fields(compaction.CompactionSettings)} == {
        name: default(f"compaction.{name}") for name in _names("compaction")}
    assert default("tools.output_limit_bytes") == toolcalls.DEFAULT_OUTPUT_LIMIT
    assert default("hooks.timeout") == hookrunner.DEFAULT_BUDGET_S
    assert default("hooks.max_stop_continuations") == loop.DEFAULT_MAX_STOP_CONTINUATIONS
    assert _names("hooks") == list(hookrunner.SETTINGS_KEYS)
    assert _names("permissions") == list(PERMISSION_KEYS)
    for key, choices in (("permissions.mode", MODES), ("reasoning_level", REASONING_LEVELS),
                         ("hooks.on_error", hookrunner.ON_ERROR)):
        node = find(key)
        for choice in choices:
            assert node.kind.accepts(choice), (key, choice)
        assert not node.kind.accepts("nonsense")
    assert find("compat.claude.settings_sources").kind.accepts(list(SETTINGS_SOURCES))


def _names(section: str) -> list[str]:
    node = find(section)
    assert isinstance(node, Section)
    return [child.name for child in node.children]


def test_docs_list_every_key():
    text = (REPO / "docs/sessions.md").read_text()
    missing = [path for path, _ in settings_table() if f"`{path}`" not in text]
    assert not missing, f"docs/sessions.md does not list: {missing}"


def test_check_layer_never_raises_on_odd_values():
    odd = {"compaction": {"enabled": float("nan")}, "requests": {"read_timeout": float("inf")},
           "hooks": {"timeout": 10**400}, "plugins": {"disabled": [None]}}
    clean, findings = check_layer(odd)
    assert {f.key for f in findings} == {"compaction.enabled", "requests.read_timeout",
                                        "plugins.disabled", "hooks.timeout"}
    assert clean == {"compaction": {}, "requests": {}, "hooks": {}, "plugins": {}}
    assert SCHEMA.name == ""


def test_updating_one_layer_keeps_the_other_layers_problems():
    manager = SettingsManager.in_memory({"tools": []}, {"sessions": []})
    manager.update("project", {"sessions.fsync": "record"})
    assert [p.key for p in manager.problems] == ["tools"]
    assert manager.get("sessions.fsync") == "record"
