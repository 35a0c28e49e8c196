"""Sessions on one event loop share their provider's connection pool: one HTTP client per
origin and settings, closed when the last session using it is disposed."""

from __future__ import annotations

import pytest

from zpi_host.contract.plugins import PluginConfig, PluginHost
from zpi_host.providers.pools import open_pools
from zpi_host.session.assembly import create_session

from .conftest import ENV, KEYS, settings_for

pytestmark = pytest.mark.anyio


async def _session(fmt, server, tmp_path):
    return await create_session(model=f"{fmt}:gpt-test", cwd=tmp_path,
                                settings=settings_for(server.base_url, fmt),
                                host=PluginHost(PluginConfig(autoload=False)).load())


async def test_sessions_share_one_client_until_the_last_is_disposed(zpi_env, zpi_model_server,
                                                                    tmp_path):
    for fmt in ("openai", "anthropic"):
        zpi_env.set(ENV[fmt], KEYS[fmt])
    zpi_model_server.add_turns("a", "b", "c", "d")
    before = open_pools()
    first = await _session("openai", zpi_model_server, tmp_path)
    second = await _session("openai", zpi_model_server, tmp_path)
    other = await _session("anthropic", zpi_model_server, tmp_path)  # its own headers: its own
    try:
        assert (await first.run("one")).result == "a"
        assert (await second.run("two")).result == "b"
        assert open_pools() == before + 1
        assert (await other.run("three")).result == "c"
        assert open_pools() == before + 2
        await first.dispose()
        assert open_pools() == before + 2  # the second still uses it
        assert (await second.run("four")).result == "d"
        await second.dispose()
        assert open_pools() == before + 1
    finally:
        await first.dispose()
        await second.dispose()
        await other.dispose()
    assert open_pools() == before
