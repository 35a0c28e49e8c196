"""Shared test configuration. The zpi fixtures (zpi_env, zpi_plugins, zpi_dist,
zpi_host_factory) come from the zpi_host.testing pytest plugin, loaded by its entry point."""

from pathlib import Path

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _no_real_home(tmp_path_factory: pytest.TempPathFactory,
                  monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test reads or writes the developer's ~/.zpi or ~/.claude (sessions, settings):
    HOME points at a fresh folder unless a test (or zpi_env) chooses another."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("ZPI_AGENT_DIR", raising=False)
    return home
