"""Leaving ``async for m in query(...)`` early closes the query cleanly, on a real loop."""

from __future__ import annotations

import asyncio
import contextlib
import gc

import pytest

from zpi_host.sdk import AssistantMessage, query

pytestmark = pytest.mark.anyio


async def test_break_out_of_query_closes_cleanly(scripted):
    scripted.turns("first answer", "never asked")
    seen = []
    async for message in query("hello", scripted.options()):
        seen.append(message)
        if isinstance(message, AssistantMessage):
            break
    gc.collect()  # the generator, dropped, is closed by the loop's async-generator hooks
    await asyncio.sleep(0)
    await asyncio.sleep(0.05)
    assert isinstance(seen[-1], AssistantMessage)
    # the caller is not cancelled: it goes on awaiting
    await asyncio.sleep(0)


async def test_aclosing_closes_the_query_in_the_callers_task(scripted):
    scripted.turns("first answer")
    async with contextlib.aclosing(query("hello", scripted.options())) as stream:
        async for message in stream:
            if isinstance(message, AssistantMessage):
                break
    await asyncio.sleep(0)


def test_break_in_a_plain_asyncio_program(scripted):
    """As a user's program would: ``asyncio.run(main())`` with a ``break`` in it."""
    scripted.turns("first answer", "never asked")
    options = scripted.options()
    errors: list[BaseException] = []

    async def main() -> str:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _loop, context: errors.append(
            context.get("exception") or RuntimeError(context["message"])))
        async for message in query("hello", options):
            if isinstance(message, AssistantMessage):
                break
        await asyncio.sleep(0.05)
        return "finished"

    assert asyncio.run(main()) == "finished"
    assert errors == []


def test_break_under_trio(scripted):
    """The owner task is a trio system task under trio."""
    trio = pytest.importorskip("trio")
    scripted.turns("first answer", "never asked")
    options = scripted.options()

    async def main() -> list[str]:
        seen = []
        async for message in query("hello", options):
            seen.append(type(message).__name__)
            if isinstance(message, AssistantMessage):
                break
        async with contextlib.aclosing(query("again", options)) as stream:
            async for message in stream:
                seen.append(type(message).__name__)
                break
        return seen

    assert trio.run(main) == ["SystemMessage", "AssistantMessage", "SystemMessage"]
