"""SessionView.context_size(): the same total as get_context_usage(), counted incrementally."""

from __future__ import annotations

import pytest
from helpers.builtins import scripted_session

from zpi_host.providers.messages import UserMessage

pytestmark = pytest.mark.anyio


async def test_the_running_estimate_matches_the_full_count_as_the_history_changes(
        zpi_env, tmp_path):
    session = await scripted_session(tmp_path, ["a" * 400, "b" * 40, "c"])

    def agree():
        size, usage = session.view.context_size(), session.get_context_usage()
        assert size.total_tokens == usage.total_tokens and size.estimated
        return size.total_tokens

    empty = agree()
    await session.run("first " * 50)
    grown = agree()
    assert grown > empty + 150
    session.add_message(UserMessage.text("x" * 4_000))
    assert agree() == grown + 1_000 + 4
    session.replace_context([UserMessage.text("short")], ["u1"])  # a compaction's rebuild
    assert agree() < grown
    session.system_prompt = session.system_prompt + "y" * 400
    agree()
    await session.dispose()
