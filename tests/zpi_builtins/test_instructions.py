"""builtins:instructions: default behaviour instructions, each switchable."""

from __future__ import annotations

import pytest
from helpers.builtins import builtins_settings, scripted_session

from zpi_builtins.instructions import INSTRUCTIONS

pytestmark = pytest.mark.anyio


async def test_every_instruction_is_in_the_prompt_and_each_can_be_left_out(zpi_env, tmp_path):
    full = await scripted_session(tmp_path, [])
    some = await scripted_session(tmp_path, [], settings=builtins_settings(
        instructions={"disabled": ["git", "reporting"]}))
    none = await scripted_session(tmp_path, [], settings=builtins_settings(
        instructions={"enabled": False}))
    assert all(text in full.system_prompt for text in INSTRUCTIONS.values())
    assert "# Git safety" not in some.system_prompt and "# Reporting" not in some.system_prompt
    assert "# Editing" in some.system_prompt and "# Verifying your work" in some.system_prompt
    assert not any(text in none.system_prompt for text in INSTRUCTIONS.values())
    sources = [i for i in full.snapshot.to_json()["instructions"]
               if i.get("plugin") == "builtins:instructions"]
    assert [i.get("title") for i in sources] == list(INSTRUCTIONS)
    for session in (full, some, none):
        await session.dispose()
