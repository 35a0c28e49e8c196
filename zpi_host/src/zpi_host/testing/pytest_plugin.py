"""pytest fixtures for zpi plugin authors (loaded through the ``pytest11`` entry point).

* ``zpi_env``: HOME, ``ZPI_AGENT_DIR`` and every ``ZPI_*`` control isolated under ``tmp_path``.
* ``zpi_plugins``: register a plugin object for the duration of one test; every PluginHost
  created meanwhile loads it (source ``local``).
* ``zpi_dist``: install a real distribution with entry points under ``tmp_path``.
* ``zpi_host_factory``: build a loaded PluginHost with chosen controls.
* ``zpi_model_server``: a started loopback model server (OpenAI and Anthropic formats).

Kept import-light: pytest loads this module in every project that installs zpi-host.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest


class ZpiEnv:
    """Paths of the isolated environment a test runs in."""

    def __init__(self, home: Path, agent_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.home, self.agent_dir, self._mp = home, agent_dir, monkeypatch

    def set(self, name: str, value: str) -> None:
        """Set an environment variable for this test only."""
        self._mp.setenv(name, value)


@pytest.fixture
def zpi_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ZpiEnv:
    """Isolate the home and agent directories under ``tmp_path`` and clear ``ZPI_*`` controls,
    so that a developer's own plugins and settings never leak into a test."""
    home = tmp_path / "home"
    agent_dir = home / ".zpi" / "agent"
    agent_dir.mkdir(parents=True)
    for name in [n for n in os.environ if n.startswith("ZPI_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ZPI_AGENT_DIR", str(agent_dir))
    return ZpiEnv(home, agent_dir, monkeypatch)


class ZpiPlugins:
    """Registers plugins for one test; everything is undone at teardown."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []

    def register(self, plugin: object, name: str | None = None) -> str:
        """Load ``plugin`` (a module, class instance or namespace with ``@hookimpl``
        functions) in every PluginHost created until the test ends. Returns its name."""
        from ..contract.plugins import register_process_plugin

        name = name or getattr(plugin, "__name__", None) or type(plugin).__name__
        self._undo.append(register_process_plugin(plugin, name))
        return name

    def close(self) -> None:
        while self._undo:
            self._undo.pop()()


@pytest.fixture
def zpi_plugins() -> Iterator[ZpiPlugins]:
    """Register temporary plugins: ``zpi_plugins.register(MyPlugin())``."""
    plugins = ZpiPlugins()
    try:
        yield plugins
    finally:
        plugins.close()


class ZpiDists:
    """Installs real distributions under ``tmp_path`` and removes them at teardown."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._installed: list[Any] = []

    def install(
        self,
        name: str,
        modules: Mapping[str, str],
        entry_points: Mapping[str, str] | None = None,
        *,
        group: str = "zpi.plugins",
        version: str = "1.0",
    ) -> Any:
        """Install distribution ``name`` with ``modules`` (name -> source) and entry points
        ``{ep name: "module"}`` in ``group``."""
        from .distributions import install_distribution

        dist = install_distribution(
            self._root / f"dist-{len(self._installed)}", name, modules=modules,
            entry_points={group: dict(entry_points or {})}, version=version,
        )
        self._installed.append(dist)
        return dist

    def close(self) -> None:
        while self._installed:
            self._installed.pop().remove()


@pytest.fixture
def zpi_dist(tmp_path: Path) -> Iterator[ZpiDists]:
    """Install real entry-point distributions: ``zpi_dist.install("my-dist", {...}, {...})``."""
    dists = ZpiDists(tmp_path / "site")
    try:
        yield dists
    finally:
        dists.close()


@pytest.fixture
def zpi_host_factory(zpi_env: ZpiEnv) -> Callable[..., Any]:
    """Build and load a PluginHost: ``zpi_host_factory(autoload=False, disabled=["x"])``."""

    def make(
        *,
        autoload: bool = True,
        load_only: Iterable[str] | None = None,
        disabled: Iterable[str] = (),
        strict: bool = False,
        trace: bool = False,
    ) -> Any:
        from ..contract.plugins import PluginConfig, PluginHost

        config = PluginConfig(load_only=load_only, disabled=disabled, autoload=autoload,
                              strict=strict, trace=trace)
        return PluginHost(config).load()

    return make


@pytest.fixture
def zpi_model_server() -> Iterator[Any]:
    """A started :class:`~zpi_host.testing.ModelServer` on 127.0.0.1 (no turns yet: use
    ``add_turns``); point a provider at ``zpi_model_server.base_url``. Closed at teardown."""
    from .model_server import ModelServer

    with ModelServer() as server:
        yield server
