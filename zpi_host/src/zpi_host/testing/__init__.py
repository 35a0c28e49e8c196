"""Test support for zpi plugin authors and for the host's own tests.

Importing this package is cheap; the pytest fixtures live in ``zpi_host.testing.pytest_plugin``
(registered through the ``pytest11`` entry point, so they are available in any project that
installs zpi-host).
"""

from .distributions import FakeDistribution, install_distribution

__all__ = ["FakeDistribution", "install_distribution"]
