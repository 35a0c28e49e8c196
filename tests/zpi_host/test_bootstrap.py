"""The agent directory's bootstrap: shipped files written only when absent, updated on a new
host version only while unchanged since shipped (told by content) and not ``metadata.custom``,
never through a symlink; the first run of a command does the same once per version."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from zpi_host.errors import ZpiError
from zpi_host.providers.builtin_catalog import builtin_services
from zpi_host.providers.catalog import CatalogError, resolve_model
from zpi_host.session.bootstrap import (
    MANIFEST,
    BootstrapError,
    ensure_agent_dir,
    init_agent_dir,
    is_customised,
    shipped_files,
)

HANDOFF_SKILL = Path(__import__("zpi_builtins").__file__).with_name("skills") / "handoff" / \
    "SKILL.md"


def actions(outcomes):
    return {o.path: o.action for o in outcomes}


def test_a_fresh_directory_gets_every_shipped_file_once(tmp_path):
    agent = tmp_path / "agent"
    outcomes = init_agent_dir(agent, version="1.0")
    assert actions(outcomes) == {"settings.json": "written", "agents/default.md": "written",
                                 "agents/explore.md": "written",
                                 "skills/handoff/SKILL.md": "written"}
    settings = json.loads((agent / "settings.json").read_text())
    assert settings["services"] == {k: dict(v) for k, v in builtin_services().items()}
    assert (agent / "skills/handoff/SKILL.md").read_text() == HANDOFF_SKILL.read_text()
    assert "name: explore" in (agent / "agents/explore.md").read_text()
    record = json.loads((agent / MANIFEST).read_text())
    assert record["version"] == "1.0" and set(record["files"]) == set(actions(outcomes))
    before = {p: p.read_bytes() for p in agent.rglob("*") if p.is_file()}
    again = init_agent_dir(agent, version="1.0")  # idempotent
    assert set(actions(again).values()) == {"current"}
    assert {p: p.read_bytes() for p in agent.rglob("*") if p.is_file()} == before


def test_unchanged_files_are_updated_on_a_new_version_changed_ones_never(tmp_path):
    agent = tmp_path / "agent"
    init_agent_dir(agent, version="1", files={"a.md": "one\n", "b.md": "one\n"})
    (agent / "b.md").write_text("mine\n")  # the user's change
    out = init_agent_dir(agent, version="2", files={"a.md": "two\n", "b.md": "two\n"})
    assert actions(out) == {"a.md": "updated", "b.md": "kept"}
    assert (agent / "a.md").read_text() == "two\n"
    assert (agent / "b.md").read_text() == "mine\n"
    assert "changed since" in {o.path: o.reason for o in out}["b.md"]
    # the change stays the user's at every later version, even back to the shipped text
    (agent / "b.md").write_text("mine, again\n")
    out = init_agent_dir(agent, version="3", files={"a.md": "three\n", "b.md": "three\n"})
    assert actions(out) == {"a.md": "updated", "b.md": "kept"}
    assert (agent / "b.md").read_text() == "mine, again\n"


def test_a_same_timestamp_does_not_hide_a_change(tmp_path):
    agent = tmp_path / "agent"
    init_agent_dir(agent, version="1", files={"a.md": "one\n"})
    stat = (agent / "a.md").stat()
    (agent / "a.md").write_text("onE\n")
    os.utime(agent / "a.md", ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same size and mtime
    out = init_agent_dir(agent, version="2", files={"a.md": "two\n"})
    assert actions(out) == {"a.md": "kept"} and (agent / "a.md").read_text() == "onE\n"


def test_metadata_custom_keeps_a_file_as_it_is(tmp_path):
    agent = tmp_path / "agent"
    shipped = {"agents/x.md": "---\nname: x\ndescription: d\nmetadata:\n  custom: true\n---\nb\n",
               "settings.json": json.dumps({"metadata": {"custom": True}}) + "\n"}
    init_agent_dir(agent, version="1", files=shipped)
    out = init_agent_dir(agent, version="2", files={p: "new\n" for p in shipped})
    assert actions(out) == {"agents/x.md": "kept", "settings.json": "kept"}
    assert all("metadata.custom" in o.reason for o in out)
    assert (agent / "agents/x.md").read_text() == shipped["agents/x.md"]
    assert is_customised("s.json", '{"metadata": {"custom": "yes"}}')
    assert not is_customised("s.json", '{"metadata": {"custom": false}}')
    assert not is_customised("s.md", "---\nname: x\n---\n")
    assert not is_customised("s.json", "not json")


def test_a_file_that_was_there_first_or_a_link_is_never_touched(tmp_path):
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_text('{"model": "mine"}\n')
    outside = tmp_path / "outside.md"
    outside.write_text("not yours\n")
    (agent / "agents").mkdir()
    (agent / "agents" / "default.md").symlink_to(outside)
    out = init_agent_dir(agent, version="1")
    assert actions(out)["settings.json"] == "kept"
    assert actions(out)["agents/default.md"] == "kept"
    assert "symbolic link" in {o.path: o.reason for o in out}["agents/default.md"]
    assert (agent / "settings.json").read_text() == '{"model": "mine"}\n'
    assert outside.read_text() == "not yours\n"
    record = json.loads((agent / MANIFEST).read_text())["files"]
    assert "settings.json" not in record and "agents/default.md" not in record
    out = init_agent_dir(agent, version="2")  # still not ours at the next version
    assert (agent / "settings.json").read_text() == '{"model": "mine"}\n'


def test_a_symlinked_folder_fails_that_file_alone(tmp_path):
    agent = tmp_path / "agent"
    agent.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (agent / "agents").symlink_to(elsewhere)
    out = init_agent_dir(agent, version="1")
    assert actions(out) == {"settings.json": "written", "agents/default.md": "failed",
                            "agents/explore.md": "failed", "skills/handoff/SKILL.md": "written"}
    assert list(elsewhere.iterdir()) == []  # nothing written through the link
    warnings: list[str] = []
    (agent / MANIFEST).unlink()
    ensure_agent_dir(agent, warnings.append)
    assert len(warnings) == 2 and all("was not set up" in w for w in warnings)
    cli = subprocess.run([sys.executable, "-m", "zpi_host", "init-agent-dir", "--agent-dir",
                          str(agent)], capture_output=True, text=True, timeout=60)
    assert cli.returncode == 1 and "failed   agents/default.md" in cli.stdout
    assert "could not be set up" in cli.stderr


def test_a_deleted_shipped_file_comes_back_a_same_version_change_does_not(tmp_path):
    agent = tmp_path / "agent"
    init_agent_dir(agent, version="1", files={"a.md": "one\n"})
    (agent / "a.md").unlink()
    assert actions(init_agent_dir(agent, version="1", files={"a.md": "one\n"})) == \
        {"a.md": "written"}
    out = init_agent_dir(agent, version="1", files={"a.md": "edited in place\n"})
    assert actions(out) == {"a.md": "current"} and (agent / "a.md").read_text() == "one\n"


def test_a_broken_record_is_rewritten_and_updates_nothing(tmp_path):
    agent = tmp_path / "agent"
    init_agent_dir(agent, version="1", files={"a.md": "one\n"})
    (agent / MANIFEST).write_text("{not json")
    out = init_agent_dir(agent, version="2", files={"a.md": "two\n"})
    assert actions(out) == {"a.md": "kept"} and (agent / "a.md").read_text() == "one\n"
    assert json.loads((agent / MANIFEST).read_text())["version"] == "2"


def test_the_first_run_sets_up_once_per_version(tmp_path):
    agent = tmp_path / "agent"
    warnings: list[str] = []
    assert actions(ensure_agent_dir(agent, warnings.append))["settings.json"] == "written"
    assert ensure_agent_dir(agent, warnings.append) == []  # set up: one read, no work
    record = json.loads((agent / MANIFEST).read_text())
    record["version"] = "0.0.0-older"
    (agent / MANIFEST).write_text(json.dumps(record))
    assert set(actions(ensure_agent_dir(agent, warnings.append)).values()) == {"current"}
    assert warnings == []
    blocked = tmp_path / "file"
    blocked.write_text("x")
    assert ensure_agent_dir(blocked, warnings.append) == []
    assert len(warnings) == 1 and "was not set up" in warnings[0] and str(blocked) in warnings[0]


def test_shipped_paths_from_a_distribution_stay_inside(tmp_path):
    from zpi_host.session import bootstrap

    with pytest.raises(BootstrapError, match="not a path inside"):
        bootstrap._check_relative("../x.md", "bad")
    with pytest.raises(BootstrapError):
        bootstrap._check_relative(MANIFEST, "bad")
    assert "skills/handoff/SKILL.md" in shipped_files()  # zpi-builtins' entry point
    assert issubclass(BootstrapError, ZpiError)


def test_settings_services_extend_the_presets():
    settings = {"services": {"mine": {"base_url": "http://127.0.0.1:9/v1"},
                             "ollama": {"base_url": "http://127.0.0.1:11435/v1"}}}
    mine = resolve_model("mine:m1", settings)
    assert (mine.provider, mine.model, mine.base_url, mine.api_key_env) == \
        ("openai", "m1", "http://127.0.0.1:9/v1", None)
    ollama = resolve_model("ollama:qwen3", settings)
    assert ollama.base_url == "http://127.0.0.1:11435/v1"
    assert ollama.api_key_env == builtin_services()["ollama"]["api_key_env"]
    with pytest.raises(CatalogError, match=r"services\.bad\.base_url"):
        resolve_model("bad:m", {"services": {"bad": {"base_url": "ftp://x"}}})
    with pytest.raises(CatalogError, match=r"services\.bad\.colour"):
        resolve_model("bad:m", {"services": {"bad": {"base_url": "http://x", "colour": 1}}})


def test_the_command_and_the_first_run(tmp_path):
    agent = tmp_path / "agent"
    exe = [sys.executable, "-m", "zpi_host"]
    env = {**os.environ, "ZPI_AGENT_DIR": str(agent), "HOME": str(tmp_path)}
    out = subprocess.run([*exe, "init-agent-dir", "--json"], capture_output=True, text=True,
                         env=env, timeout=60, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert {r["action"] for r in rows} == {"written"} and len(rows) == 4
    fresh = tmp_path / "fresh"
    script = tmp_path / "s.jsonl"
    script.write_text('{"text": "hi there"}\n')
    run = subprocess.run([*exe, "run", "--model", f"scripted:{script}", "hi"],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path,
                         env={**env, "ZPI_AGENT_DIR": str(fresh)})
    assert run.returncode == 0 and "hi there" in run.stdout, run.stderr
    assert (fresh / "agents" / "explore.md").is_file() and (fresh / MANIFEST).is_file()
