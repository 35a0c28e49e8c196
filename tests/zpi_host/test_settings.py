"""Settings: merge rules, broken files reported and never overwritten, surgical atomic writes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from zpi_host.settings.manager import DELETE, SettingsError, SettingsManager, merge_settings


def write(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


@pytest.fixture
def dirs(tmp_path):
    agent, project = tmp_path / "agent", tmp_path / "project"
    agent.mkdir()
    project.mkdir()
    return agent, project


def test_project_wins_key_by_key_objects_merge_at_every_depth_lists_add_up():
    """Claude Code's merge of settings files: more specific values win key by key, objects
    merge at any depth, lists are concatenated without repeats."""
    user = {"a": 1, "plugins": {"disabled": ["x"], "keep": True},
            "deep": {"inner": {"u": 1, "both": "user"}}, "list": [1, 2], "gone": [1]}
    project = {"a": 2, "plugins": {"disabled": ["y", "x"]},
               "deep": {"inner": {"p": 1, "both": "project"}}, "list": [3, 2], "gone": None}
    merged = merge_settings(user, project)
    assert merged == {"a": 2, "plugins": {"disabled": ["x", "y"], "keep": True},
                      "deep": {"inner": {"u": 1, "both": "project", "p": 1}},
                      "list": [1, 2, 3], "gone": None}
    assert user["plugins"] == {"disabled": ["x"], "keep": True}  # inputs untouched
    assert user["deep"] == {"inner": {"u": 1, "both": "user"}}


def test_a_project_adds_permission_rules_but_cannot_drop_the_users():
    user = {"permissions": {"deny": ["bash(rm:*)"], "allow": ["read"]}}
    project = {"permissions": {"deny": [], "allow": ["bash(make:*)"]}}
    assert merge_settings(user, project) == {
        "permissions": {"deny": ["bash(rm:*)"], "allow": ["read", "bash(make:*)"]}}


def test_a_list_that_is_one_value_is_replaced():
    key = ("plugins", "builtins", "notify", "command")

    def nested(value):
        return {key[0]: {key[1]: {key[2]: {key[3]: value}}}}

    merged = merge_settings(nested(["notify-send"]), nested(["osascript", "-e"]))
    assert merged == nested(["osascript", "-e"])


def test_files_are_read_and_merged(dirs):
    agent, project = dirs
    write(agent / "settings.json", {"model": "a", "requests": {"max_retries": 1}})
    write(project / ".zpi" / "settings.json", {"requests": {"read_timeout": 5}})
    manager = SettingsManager(agent, project)
    assert manager.settings == {"model": "a", "requests": {"max_retries": 1, "read_timeout": 5}}
    assert manager.get("requests.read_timeout") == 5
    assert manager.get("requests.nope", "d") == "d"
    assert manager.problems == ()
    with pytest.raises(TypeError):
        manager.settings["model"] = "b"  # type: ignore[index]


def test_a_broken_file_is_reported_with_position_and_the_other_still_applies(dirs):
    agent, project = dirs
    broken = write(agent / "settings.json", '{\n  "model": "a",\n  oops\n}')
    write(project / ".zpi" / "settings.json", {"model": "p"})
    before = broken.read_bytes()
    manager = SettingsManager(agent, project)
    assert manager.settings == {"model": "p"}
    (problem,) = manager.problems
    assert problem.path == broken
    assert "line 3, column 3" in problem.message
    assert str(problem) == (f"{broken}: line 3, column 3: invalid JSON (Expecting property "
                            "name enclosed in double quotes); the file was ignored and left "
                            "unchanged: fix it to apply its settings")  # each part said once
    with pytest.raises(SettingsError, match=r"line 3, column 3: invalid JSON"):
        manager.update("user", {"model": "b"})
    assert broken.read_bytes() == before


def test_non_object_settings_are_a_problem(dirs):
    agent, project = dirs
    write(agent / "settings.json", "[1, 2]")
    (problem,) = SettingsManager(agent, project).problems
    assert "must be a JSON object, got list" in problem.message


def test_update_changes_only_the_named_keys_and_keeps_what_others_wrote(dirs):
    agent, project = dirs
    path = write(agent / "settings.json", {"keep": {"x": 1}, "other": [1]})
    manager = SettingsManager(agent, project)
    # another writer changes the file after we loaded it
    write(path, {"keep": {"x": 1}, "other": [1], "theirs": True})
    manager.update("user", {"keep.y": 2, "plugins.disabled": ["a"], "other": DELETE})
    on_disk = json.loads(path.read_text())
    assert on_disk == {"keep": {"x": 1, "y": 2}, "theirs": True,
                       "plugins": {"disabled": ["a"]}}
    assert manager.get("plugins.disabled") == ["a"]
    manager.update("project", {"model": "p"})
    assert json.loads((project / ".zpi" / "settings.json").read_text()) == {"model": "p"}
    assert manager.settings["model"] == "p"
    assert not list(agent.glob(".settings.json.*"))  # no temp files left behind


def test_update_refuses_to_descend_into_a_non_object(dirs):
    agent, project = dirs
    write(agent / "settings.json", {"model": "a"})
    with pytest.raises(SettingsError, match="'model' is not an object"):
        SettingsManager(agent, project).update("user", {"model.x": 1})


BUMP = """
import sys
from pathlib import Path
from zpi_host.settings.manager import SettingsManager
manager = SettingsManager(Path(sys.argv[1]), None)
for i in range(20):
    manager.update("user", {f"{sys.argv[2]}.n{i}": i})
"""


def test_concurrent_writers_lose_nothing(dirs):
    agent, _ = dirs
    procs = [subprocess.Popen([sys.executable, "-c", BUMP, str(agent), key])
             for key in ("a", "b")]
    assert [proc.wait(60) for proc in procs] == [0, 0]
    data = json.loads((agent / "settings.json").read_text())
    assert len(data["a"]) == 20 and len(data["b"]) == 20


def test_in_memory_manager_has_the_same_api_and_touches_no_disk(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    manager = SettingsManager.in_memory({"a": {"x": 1}}, {"a": {"y": 2}})
    assert manager.settings == {"a": {"x": 1, "y": 2}}
    manager.update("project", {"a.z": 3, "a.x": DELETE})
    assert manager.settings == {"a": {"x": 1, "y": 2, "z": 3}}  # project layer: x was not set
    manager.update("user", {"a.x": DELETE})
    assert manager.settings == {"a": {"y": 2, "z": 3}}
    snap = manager.snapshot()
    manager.update("user", {"b": 1})
    assert "b" not in snap
    assert list(tmp_path.iterdir()) == []


def test_the_local_file_wins_and_sources_choose_the_files(dirs):
    agent, project = dirs
    write(agent / "settings.json", {"model": "u", "a": 1})
    write(project / ".zpi" / "settings.json", {"model": "p", "b": 2})
    write(project / ".zpi" / "settings.local.json", {"model": "l", "c": 3})
    assert SettingsManager(agent, project).settings == {"model": "l", "a": 1, "b": 2, "c": 3}
    assert SettingsManager(agent, project, ["user"]).settings == {"model": "u", "a": 1}
    assert SettingsManager(agent, project, ["local"]).settings == {"model": "l", "c": 3}
    assert SettingsManager(agent, project, []).settings == {}
    with pytest.raises(SettingsError, match="unknown setting source"):
        SettingsManager(agent, project, ["global"])


def test_edit_changes_one_file_in_place_keeping_other_keys(dirs):
    agent, project = dirs
    local = write(project / ".zpi" / "settings.local.json",
                  {"keep": {"x": 1}, "permissions": {"allow": ["read"]}})
    manager = SettingsManager(agent, project, ["user"])  # local is not read
    manager.edit("local", lambda data: data["permissions"]["allow"].append("bash(ls)"))
    assert json.loads(local.read_text()) == {"keep": {"x": 1},
                                             "permissions": {"allow": ["read", "bash(ls)"]}}
    assert manager.settings == {}  # written, but not a source of this manager

    def fail(data):
        data["keep"] = "changed"
        raise ValueError("no")

    with pytest.raises(ValueError):
        manager.edit("local", fail)
    assert json.loads(local.read_text())["keep"] == {"x": 1}
