"""Test support for zpi plugin authors and for the host's own tests.

Importing this package is cheap; the pytest fixtures live in ``zpi_host.testing.pytest_plugin``
(registered through the ``pytest11`` entry point, so they are available in any project that
installs zpi-host).
"""

from ..support.lazy import lazy_attributes
from .distributions import FakeDistribution, install_distribution

__all__ = ["FakeDistribution", "FunctionModel", "ModelServer", "ScriptedModel",
           "install_distribution", "run_session_store_conformance"]


__getattr__, __dir__ = lazy_attributes(__name__, {
    "FunctionModel": "models", "ScriptedModel": "models", "ModelServer": "model_server",
    "run_session_store_conformance": "session_store_conformance",
}, globals())
