"""No import is attempted again and again on every turn of an HTTP provider.

A failed import is not cached: Python searches every path entry each time, about 0.1-0.4 ms
here. httpcore asks for ``sniffio`` four times a request (its async locks and cancellation
shields), so without sniffio installed (a dependency of zpi-host for this reason) every turn
paid that. The finder below sees every import that ``sys.modules`` does not answer.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

from zpi_host.contract.plugins import PluginConfig, PluginHost
from zpi_host.session.assembly import create_session

from .conftest import ENV, FORMATS, KEYS, settings_for

pytestmark = pytest.mark.anyio
TURNS = 4


class Searches:
    """A meta path finder that finds nothing and remembers what was searched, and when (the
    number of requests the model server had received)."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.seen: list[tuple[int, str]] = []

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        self.seen.append((len(self.server.requests), name))


@pytest.fixture
def searches(zpi_model_server: Any) -> Iterator[Searches]:
    finder = Searches(zpi_model_server)
    sys.meta_path.insert(0, finder)
    try:
        yield finder
    finally:
        sys.meta_path.remove(finder)


@pytest.mark.parametrize("fmt", FORMATS)
async def test_later_turns_import_nothing(fmt, zpi_env, zpi_model_server, searches, tmp_path):
    zpi_env.set(ENV[fmt], KEYS[fmt])
    (tmp_path / "notes.txt").write_text("x\n")
    read = {"text": "r", "tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]}
    zpi_model_server.add_turns(*[read] * (TURNS - 1), "done")
    session = await create_session(model=f"{fmt}:m", cwd=tmp_path,
                                   settings=settings_for(zpi_model_server.base_url, fmt),
                                   host=PluginHost(PluginConfig(autoload=False)).load())
    try:
        result = await session.run("go")
    finally:
        await session.dispose()
    assert result.num_turns == TURNS and not result.is_error
    # turns 1 and 2 may import what they use for the first time; from turn 3 on, nothing
    late = sorted({name for requests, name in searches.seen if requests >= 3})
    assert late == []
