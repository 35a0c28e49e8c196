"""The per-project trust gate: what a cloned repository ships runs no program until the user
has trusted that project (docs/reliability.md, "What makes a program run").

Each "attack" is a tmp repository whose hook or plugin command writes a marker file at session
start; real ``zpi-host`` processes (tests/helpers/cli.py) and real SDK queries run in it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.cli import clean_environment, zpi

from zpi_host.settings.trust import is_trusted, project_root

SCRIPT_LINE = '{"text": "done"}\n'


def hook_group(command: str) -> dict:
    return {"hooks": [{"type": "command", "command": command}]}


def write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def zcode_config(repo: Path, marker: Path) -> None:
    """``.zcode/config.json`` switching its own hooks on."""
    write_json(repo / ".zcode" / "config.json", {"hooks": {"enabled": True, "events": {
        "SessionStart": [hook_group(f"touch {marker}")]}}})


def claude_settings_sources(repo: Path, marker: Path) -> None:
    """``.zpi/settings.json`` turning on the Claude settings files' hooks, and a hook there."""
    write_json(repo / ".zpi" / "settings.json",
               {"compat": {"claude": {"settings_sources": ["project"]}}})
    write_json(repo / ".claude" / "settings.json",
               {"hooks": {"SessionStart": [hook_group(f"touch {marker}")]}})


def claude_plugin_folder(folder: Path, marker: Path) -> Path:
    write_json(folder / ".claude-plugin" / "plugin.json", {"name": "shipped"})
    write_json(folder / "hooks" / "hooks.json",
               {"hooks": {"SessionStart": [hook_group(f"touch {marker}")]}})
    return folder


def claude_plugin_dirs(repo: Path, marker: Path) -> None:
    """``.zpi/settings.json`` naming a Claude plugin folder the repository ships."""
    claude_plugin_folder(repo / "tools" / "plug", marker)
    write_json(repo / ".zpi" / "settings.json",
               {"compat": {"claude": {"plugin_dirs": ["tools/plug"]}}})


def zcode_plugin_dirs(repo: Path, marker: Path) -> None:
    """``.zpi/settings.local.json`` naming a ZCode plugin folder the repository ships."""
    folder = repo / "tools" / "zplug"
    write_json(folder / ".zcode-plugin" / "plugin.json", {"name": "shipped-z"})
    write_json(folder / "hooks" / "hooks.json",
               {"hooks": {"SessionStart": [hook_group(f"touch {marker}")]}})
    write_json(repo / ".zpi" / "settings.local.json",
               {"compat": {"zcode": {"plugin_dirs": ["tools/zplug"]}}})


ATTACKS: dict[str, Callable[[Path, Path], None]] = {
    "zcode-config-hooks": zcode_config,
    "claude-settings-sources": claude_settings_sources,
    "claude-plugin-dirs": claude_plugin_dirs,
    "zcode-plugin-dirs": zcode_plugin_dirs,
}


#: the attacks whose programs wait for the trust (the compat opt-in in a project file is
#: ignored outright: see test_the_compat_opt_in_from_a_project_file_is_ignored_even_when_trusted)
GATED = sorted(set(ATTACKS) - {"claude-settings-sources"})


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.jsonl"
    path.write_text(SCRIPT_LINE * 4)
    return path


def cloned(tmp_path: Path, attack: str) -> tuple[Path, Path]:
    repo = tmp_path / "repo"
    repo.mkdir()
    marker = tmp_path / "MARKER"
    ATTACKS[attack](repo, marker)
    return repo, marker


def user_settings(tmp_path: Path) -> dict:
    path = tmp_path / "agent" / "settings.json"
    return json.loads(path.read_text()) if path.exists() else {}


@pytest.mark.parametrize("attack", GATED)
def test_an_untrusted_repository_runs_nothing_and_run_refuses_in_one_line(tmp_path, script,
                                                                         attack):
    repo, marker = cloned(tmp_path, attack)
    out = zpi(tmp_path, "run", "--cwd", str(repo), "--permission-mode", "plan",
              "--model", f"scripted:{script}", "go")
    assert not marker.exists()
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert "not trusted" in lines[0] and "--trust-project" in lines[0]
    named = str(repo / "tools") if attack.endswith("plugin-dirs") else str(marker)
    assert named in lines[0]  # names what would run: the hook command, the plugin folder
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("attack", GATED)
def test_trust_project_records_the_trust_and_then_it_runs(tmp_path, script, attack):
    repo, marker = cloned(tmp_path, attack)
    out = zpi(tmp_path, "run", "--cwd", str(repo), "--trust-project",
              "--model", f"scripted:{script}", "go")
    assert out.returncode == 0, out.stderr
    assert marker.exists()
    assert user_settings(tmp_path)["trusted_projects"] == [str(project_root(repo))]
    marker.unlink()
    again = zpi(tmp_path, "run", "--cwd", str(repo), "--model", f"scripted:{script}", "go")
    assert again.returncode == 0, again.stderr
    assert marker.exists()  # recorded once: not asked for again


def test_a_plain_repository_is_never_asked_about(tmp_path, script):
    repo = tmp_path / "repo"
    (repo / ".zpi").mkdir(parents=True)
    write_json(repo / ".zpi" / "settings.json", {"model": None})
    out = zpi(tmp_path, "run", "--cwd", str(repo), "--model", f"scripted:{script}", "go")
    assert out.returncode == 0, out.stderr
    assert "trust" not in out.stderr
    assert "trusted_projects" not in user_settings(tmp_path)


def test_a_project_file_cannot_trust_itself(tmp_path, script):
    repo, marker = cloned(tmp_path, "zcode-config-hooks")
    write_json(repo / ".zpi" / "settings.json", {"trusted_projects": [str(repo)]})
    out = zpi(tmp_path, "run", "--cwd", str(repo), "--model", f"scripted:{script}", "go")
    assert out.returncode == 2
    assert not marker.exists()


def test_the_compat_opt_in_from_a_project_file_is_ignored_even_when_trusted(tmp_path, script):
    repo, marker = cloned(tmp_path, "claude-settings-sources")
    out = zpi(tmp_path, "run", "--cwd", str(repo), "--permission-mode", "plan",
              "--model", f"scripted:{script}", "go")
    assert out.returncode == 0, out.stderr  # nothing would run: nothing to trust
    assert not marker.exists()
    write_json(tmp_path / "agent" / "settings.json", {"trusted_projects": [str(repo)]})
    out = zpi(tmp_path, "run", "--cwd", str(repo), "--model", f"scripted:{script}", "go")
    assert out.returncode == 0, out.stderr
    assert not marker.exists()  # the opt-in is the user's: a project cannot switch it on
    assert "may not set compat.claude.settings_sources" in out.stderr


def test_the_users_own_opt_in_still_waits_for_the_projects_trust(tmp_path, script):
    repo, marker = cloned(tmp_path, "claude-settings-sources")
    (repo / ".zpi" / "settings.json").unlink()
    write_json(tmp_path / "agent" / "settings.json",
               {"compat": {"claude": {"settings_sources": ["project"]}}})
    out = zpi(tmp_path, "run", "--cwd", str(repo), "--model", f"scripted:{script}", "go")
    assert out.returncode == 2 and not marker.exists()
    out = zpi(tmp_path, "run", "--cwd", str(repo), "--trust-project",
              "--model", f"scripted:{script}", "go")
    assert out.returncode == 0 and marker.exists()


def test_what_the_user_chose_runs_without_trust(tmp_path, script):
    """A plugin folder in the user's settings, and one given with --plugin-dir, run in an
    untrusted project: the user wrote them."""
    repo = tmp_path / "repo"
    repo.mkdir()
    first, second = tmp_path / "FIRST", tmp_path / "SECOND"
    claude_plugin_folder(tmp_path / "mine", first)
    write_json(tmp_path / "agent" / "settings.json",
               {"compat": {"claude": {"plugin_dirs": [str(tmp_path / "mine")]}}})
    out = zpi(tmp_path, "run", "--cwd", str(repo), "--model", f"scripted:{script}", "go")
    assert out.returncode == 0, out.stderr
    assert first.exists()
    write_json(tmp_path / "agent" / "settings.json", {})
    folder = claude_plugin_folder(tmp_path / "other", second)
    write_json(folder / ".claude-plugin" / "plugin.json", {"name": "other"})
    out = zpi(tmp_path, "run", "--cwd", str(repo), "--plugin-dir", str(folder),
              "--model", f"scripted:{script}", "go")
    assert out.returncode == 0, out.stderr
    assert second.exists()
    assert not is_trusted(user_settings(tmp_path), repo)


def test_the_trust_of_a_folder_covers_the_folders_inside(tmp_path):
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    assert is_trusted({"trusted_projects": [str(tmp_path / "a")]}, inner)
    assert not is_trusted({"trusted_projects": [str(inner)]}, tmp_path / "a")
    assert not is_trusted({"trusted_projects": "not a list"}, inner)


# ------------------------------------------------------------------------------------ SDK


@pytest.fixture
def sdk_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key, value in clean_environment(tmp_path).items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("ZPI_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    return tmp_path


async def sdk_query(repo: Path, agent_dir: Path, **options: object) -> list:
    from zpi_host.sdk import AgentOptions, query
    from zpi_host.testing import ScriptedModel

    opts = AgentOptions(cwd=repo, agent_dir=agent_dir, model="scripted:memory",
                        provider=ScriptedModel(["done"]), permission_mode="plan",
                        **options)  # type: ignore[arg-type]
    return [message async for message in query(prompt="go", options=opts)]


@pytest.mark.anyio
@pytest.mark.parametrize("attack", sorted(ATTACKS))
async def test_sdk_without_project_sources_loads_no_project_file(sdk_env, attack):
    repo, marker = cloned(sdk_env, attack)
    messages = await sdk_query(repo, sdk_env / "agent", setting_sources=[])
    assert messages[-1].subtype == "success"
    assert not marker.exists()


@pytest.mark.anyio
@pytest.mark.parametrize("attack", sorted(ATTACKS))
async def test_sdk_default_sources_run_nothing_of_an_untrusted_project(sdk_env, attack):
    repo, marker = cloned(sdk_env, attack)
    messages = await sdk_query(repo, sdk_env / "agent")
    assert messages[-1].subtype == "success"
    assert not marker.exists()


@pytest.mark.anyio
async def test_sdk_naming_the_project_source_is_the_programs_trust(sdk_env):
    repo, marker = cloned(sdk_env, "zcode-config-hooks")
    await sdk_query(repo, sdk_env / "agent", setting_sources=["user", "project"])
    assert marker.exists()
    assert "trusted_projects" not in user_settings(sdk_env)  # the program's, not recorded


def test_the_listing_says_what_waits_for_the_trust(tmp_path):
    repo, marker = cloned(tmp_path, "zcode-config-hooks")
    out = zpi(tmp_path, "--list-plugins", "--json", "--cwd", str(repo))
    assert out.returncode == 0, out.stderr
    assert "is not trusted" in out.stderr and f"touch {marker}" in out.stderr
    assert "zcode:config" not in {row["name"] for row in json.loads(out.stdout)}
    write_json(tmp_path / "agent" / "settings.json", {"trusted_projects": [str(repo)]})
    out = zpi(tmp_path, "--list-plugins", "--json", "--cwd", str(repo))
    assert "not trusted" not in out.stderr
    assert "zcode:config" in {row["name"] for row in json.loads(out.stdout)}


def test_an_untrusted_projects_allow_rules_and_hook_policies_are_not_applied(tmp_path):
    """A repository cannot let the model's commands run unasked, widen the workspace or make
    the user's guard hooks fail open before it is trusted; the warning names each setting."""
    repo = tmp_path / "repo"
    write_json(repo / ".zpi" / "settings.json", {
        "permissions": {"allow": ["bash"], "additional_directories": [str(tmp_path)]},
        "hooks": {"on_error": "fail-open"}})
    marker = tmp_path / "ran"
    script = tmp_path / "bash.jsonl"
    script.write_text(json.dumps({"tool_calls": [{"name": "bash", "arguments": {
        "command": f"touch {marker}"}}]}) + "\n" + SCRIPT_LINE)
    out = zpi(tmp_path, "run", "--cwd", str(repo), "--output-format", "json",
              "--model", f"scripted:{script}", "go")
    assert out.returncode == 0, out.stderr
    assert not marker.exists()
    assert [d["tool"] for d in json.loads(out.stdout)["denials"]] == ["bash"]
    warning = next(line for line in out.stderr.splitlines() if "not applied" in line)
    for key in ("permissions.allow", "permissions.additional_directories", "hooks.on_error"):
        assert key in warning, warning
    assert "--trust-project" in warning
    trusted = zpi(tmp_path, "run", "--cwd", str(repo), "--trust-project", "--output-format",
                  "json", "--model", f"scripted:{script}", "go")
    assert trusted.returncode == 0, trusted.stderr
    assert marker.exists() and "not applied" not in trusted.stderr
