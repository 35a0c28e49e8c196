"""builtins:init: ``/init`` explores through the model and writes AGENTS.md atomically."""

from __future__ import annotations

import pytest
from helpers.builtins import builtins_settings, scripted_session

from zpi_builtins.init import agents_text

pytestmark = pytest.mark.anyio

EXPLORE = {"tool_calls": [{"name": "bash", "arguments": {"command": "ls"}},
                          {"name": "read", "arguments": {"path": "README.md"}}]}
ANSWER = "```markdown\n# AGENTS.md\n\nA demo. Test with `make test`.\n```"


def test_agents_text_drops_one_fence_around_the_whole_answer():
    assert agents_text(ANSWER) == "# AGENTS.md\n\nA demo. Test with `make test`.\n"
    assert agents_text("# A\n\n```sh\nmake\n```\n") == "# A\n\n```sh\nmake\n```\n"
    assert agents_text("  \n") is None and agents_text("```\n```") is None


def warnings_of(session):
    seen = []
    session.subscribe(lambda e: seen.append(e.message), types={"warning"})
    return seen


async def test_init_explores_and_writes_the_answer_to_agents_md(zpi_env, tmp_path):
    (tmp_path / "README.md").write_text("# Demo\nrun make test\n")
    session = await scripted_session(tmp_path, [EXPLORE, ANSWER])
    result = await session.run("/init")
    await session.dispose()
    assert not result.is_error and result.num_turns == 2
    assert (tmp_path / "AGENTS.md").read_text() == agents_text(ANSWER)
    first = session.test_model.requests[0]
    assert "Write AGENTS.md for this project" in first.messages[-1].text_content
    second = session.test_model.requests[1]
    assert "run make test" in str(second.messages[-1].content)  # the model read the README
    assert not list(tmp_path.glob(".AGENTS.md.*"))  # no temporary file left


async def test_an_existing_file_is_refused_without_force_and_replaced_with_it(zpi_env, tmp_path):
    target = tmp_path / "AGENTS.md"
    target.write_text("mine\n")
    session = await scripted_session(tmp_path, [ANSWER])
    refused = await session.run("/init")
    assert refused.is_error and "already exists" in refused.result
    assert "/init --force" in refused.result
    assert target.read_text() == "mine\n" and session.test_model.requests == []
    bad = await session.run("/init --everything")
    assert bad.is_error and "/init takes only --force" in bad.result
    done = await session.run("/init --force")
    await session.dispose()
    assert not done.is_error and target.read_text() == agents_text(ANSWER)


async def test_a_file_changed_during_the_run_is_kept_and_reported(zpi_env, tmp_path):
    target = tmp_path / "AGENTS.md"
    target.write_text("old\n")
    meddle = {"tool_calls": [{"name": "bash", "arguments": {
        "command": "echo edited-meanwhile > AGENTS.md"}}]}
    session = await scripted_session(tmp_path, [meddle, ANSWER], permission_mode="bypass")
    seen = warnings_of(session)
    result = await session.run("/init --force")
    await session.dispose()
    assert not result.is_error
    assert target.read_text() == "edited-meanwhile\n"  # never overwritten
    assert any("AGENTS.md" in w and "changed" in w for w in seen), seen


async def test_a_run_that_does_not_finish_writes_nothing_and_says_so_at_its_end(zpi_env,
                                                                                  tmp_path):
    session = await scripted_session(tmp_path, [EXPLORE, ANSWER], max_turns=1)
    seen = warnings_of(session)
    result = await session.run("/init")
    assert result.is_error and result.stop_reason == "max_turns"
    assert not (tmp_path / "AGENTS.md").exists()
    assert any("AGENTS.md was not written" in w and "maximum of 1 turns" in w for w in seen)
    await session.dispose()


async def test_init_is_switched_off_in_settings(zpi_env, tmp_path):
    session = await scripted_session(tmp_path, [ANSWER],
                                     settings=builtins_settings(init={"enabled": False}))
    result = await session.run("/init")
    await session.dispose()
    assert result.is_error and "unknown command /init" in result.result
    assert not (tmp_path / "AGENTS.md").exists()


async def test_force_replaces_only_a_regular_file(zpi_env, tmp_path):
    elsewhere = tmp_path / "elsewhere.md"
    elsewhere.write_text("not yours\n")
    (tmp_path / "AGENTS.md").symlink_to(elsewhere)
    session = await scripted_session(tmp_path, [ANSWER])
    refused = await session.run("/init --force")
    await session.dispose()
    assert refused.is_error and "is not a regular file" in refused.result
    assert elsewhere.read_text() == "not yours\n" and session.test_model.requests == []
