"""Test support for zpi plugin authors and for the host's own tests.

Importing this package is cheap; the pytest fixtures live in ``zpi_host.testing.pytest_plugin``
(registered through the ``pytest11`` entry point, so they are available in any project that
installs zpi-host).
"""

from typing import Any

from .distributions import FakeDistribution, install_distribution

__all__ = ["FakeDistribution", "FunctionModel", "ModelServer", "ScriptedModel",
           "install_distribution", "run_session_store_conformance"]


def __getattr__(name: str) -> Any:
    if name in ("FunctionModel", "ScriptedModel"):
        from . import models

        return getattr(models, name)
    if name == "ModelServer":
        from .model_server import ModelServer

        return ModelServer
    if name == "run_session_store_conformance":
        from .session_store_conformance import run_session_store_conformance

        return run_session_store_conformance
    raise AttributeError(f"module 'zpi_host.testing' has no attribute {name!r}")
