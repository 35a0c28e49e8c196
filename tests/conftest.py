"""Shared test configuration. The zpi fixtures (zpi_env, zpi_plugins, zpi_dist,
zpi_host_factory) come from the zpi_host.testing pytest plugin, loaded by its entry point."""

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
