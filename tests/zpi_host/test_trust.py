"""The trust decision in the kernel: ``zpi_host.settings.trust`` and what ``create_session``
does with an untrusted project (ask, refuse, go on without), with real files under tmp_path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zpi_host.errors import UsageError
from zpi_host.session.assembly import create_session
from zpi_host.settings.manager import SettingsManager
from zpi_host.settings.trust import UntrustedProjectError, is_trusted, project_root, trust
from zpi_host.testing import ScriptedModel

pytestmark = pytest.mark.anyio


def untrusted_repo(tmp_path: Path) -> tuple[Path, Path]:
    repo, marker = tmp_path / "repo", tmp_path / "MARKER"
    (repo / ".zcode").mkdir(parents=True)
    (repo / ".zcode" / "config.json").write_text(json.dumps({"hooks": {"enabled": True, "events": {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": f"touch {marker}"}]}]}}}))
    return repo, marker


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("ZPI_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.delenv("ZPI_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    return tmp_path / "agent"


def test_trust_is_written_surgically_once_by_real_path(tmp_path):
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_text('{"model": "x:y", "trusted_projects": ["/elsewhere"]}')
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    manager = SettingsManager(agent, tmp_path / "link")
    assert trust(manager, tmp_path / "link") == project_root(real)
    trust(manager, real)
    data = json.loads((agent / "settings.json").read_text())
    assert data == {"model": "x:y", "trusted_projects": ["/elsewhere", str(real.resolve())]}
    assert is_trusted(manager.layer("user"), tmp_path / "link")


def test_a_trusted_projects_value_of_the_wrong_type_is_refused_not_overwritten(tmp_path):
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_text('{"trusted_projects": "/repo"}')
    with pytest.raises(UsageError, match="trusted_projects must be a list"):
        trust(SettingsManager(agent, tmp_path), tmp_path)
    assert json.loads((agent / "settings.json").read_text()) == {"trusted_projects": "/repo"}


async def test_refuse_untrusted_raises_a_typed_error_naming_what_would_run(env, tmp_path):
    repo, marker = untrusted_repo(tmp_path)
    with pytest.raises(UntrustedProjectError) as caught:
        await create_session(model="t:m", provider=ScriptedModel(["x"]), cwd=repo,
                             persist=False, refuse_untrusted=True)
    assert caught.value.root == project_root(repo)
    assert caught.value.withheld == (f"UserPromptSubmit hook `touch {marker}` (from "
                                     f"{repo / '.zcode' / 'config.json'})",)


async def test_ask_trust_is_asked_with_what_would_run_and_yes_is_recorded(env, tmp_path):
    repo, marker = untrusted_repo(tmp_path)
    asked = []

    async def ask(root, withheld):
        asked.append((root, withheld))
        return True

    session = await create_session(model="t:m", provider=ScriptedModel(["x"]), cwd=repo,
                                   persist=False, ask_trust=ask)
    try:
        await session.run("go")
    finally:
        await session.dispose()
    assert [root for root, _ in asked] == [project_root(repo)]
    assert marker.exists()
    assert json.loads((env / "settings.json").read_text())["trusted_projects"] == [
        str(project_root(repo))]


async def test_without_a_decision_a_session_goes_on_without_and_says_so(env, tmp_path):
    repo, marker = untrusted_repo(tmp_path)
    session = await create_session(model="t:m", provider=ScriptedModel(["x"]), cwd=repo,
                                   persist=False)
    try:
        assert any(w.startswith(f"not run, because the project {project_root(repo)} is not "
                                f"trusted: UserPromptSubmit hook `touch {marker}`")
                   for w in session.warnings), session.warnings
        await session.run("go")
    finally:
        await session.dispose()
    assert not marker.exists()
    assert not (env / "settings.json").exists()


def test_trust_project_must_be_a_bool(tmp_path):
    from zpi_host.session.options import SessionOptions

    with pytest.raises(UsageError, match="trust_project must be True, False or None"):
        SessionOptions.from_kwargs({"trust_project": "yes"})
