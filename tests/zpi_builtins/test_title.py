"""builtins:title: a side request titles a saved session after its first exchange."""

from __future__ import annotations

import pytest
from helpers.builtins import builtins_settings, scripted_session

from zpi_builtins.title import clean_title
from zpi_host.session.assembly import create_session
from zpi_host.testing import FunctionModel
from zpi_host.transcript import list_sessions, rename_session

pytestmark = pytest.mark.anyio

TITLE_TURN = {"purpose": "title", "text": '"Fix the flaky login test."'}


def test_clean_title():
    assert clean_title('"Fix the flaky login test."\nmore') == "Fix the flaky login test"
    assert clean_title("Title: Refactor the parser") == "Refactor the parser"
    assert clean_title("  \n ") is None
    assert len(clean_title("x" * 500)) == 80
    assert clean_title("\x1b]52;c;cm0gLXJmIH4=\x07Fix\tthe \x1b[2Jbuild\u202e\x9b") == \
        "]52;c;cm0gLXJmIH4= Fix the [2Jbuild"


async def test_a_title_cannot_carry_terminal_escapes_to_sessions_list(zpi_env, tmp_path):
    """A model (or a page it read) that answers with escape sequences would otherwise drive
    the terminal of whoever lists the sessions: set its clipboard (OSC 52), clear it."""
    from zpi_host.cli.sessions import session_line

    hostile = {"purpose": "title", "text": "\x1b]52;c;cm0gLXJmIH4=\x07Deploy \x1b[2Jfix"}
    session = await scripted_session(tmp_path, ["done", hostile])
    await session.run("deploy it")
    await session.dispose()
    (info,) = list_sessions(tmp_path, agent_dir=zpi_env.agent_dir)
    assert info.title == "]52;c;cm0gLXJmIH4= Deploy [2Jfix"
    assert not any(c in session_line(info) for c in "\x1b\x07")


async def test_the_first_exchange_gets_a_title_shown_by_sessions_list(zpi_env, tmp_path):
    session = await scripted_session(tmp_path, ["I fixed it.", TITLE_TURN, "again"])
    await session.run("the login test is flaky")
    await session.run("and now?")  # one title per session
    await session.dispose()
    model = session.test_model
    side = [r for r in model.requests if r.purpose == "title"]
    assert len(side) == 1 and "the login test is flaky" in side[0].messages[0].content[0].text
    assert "I fixed it." in side[0].messages[0].content[0].text
    (info,) = list_sessions(tmp_path, agent_dir=zpi_env.agent_dir)
    assert info.title == "Fix the flaky login test"


async def test_a_script_without_a_title_turn_is_never_asked(zpi_env, tmp_path):
    session = await scripted_session(tmp_path, ["one", "two"])
    await session.run("a")
    await session.run("b")
    await session.dispose()
    assert all(r.purpose is None for r in session.test_model.requests)
    assert session.store.title is None


async def test_no_title_in_memory_when_switched_off_or_after_a_rename(zpi_env, tmp_path):
    memory = await scripted_session(tmp_path, ["a", TITLE_TURN], persist=False)
    off = await scripted_session(tmp_path, ["a", TITLE_TURN],
                                 settings=builtins_settings(title={"enabled": False}))
    for session in (memory, off):
        await session.run("hi")
        await session.dispose()
        assert session.store.title is None and session.test_model.remaining == 0
        assert all(r.purpose is None for r in session.test_model.requests)
    renamed = await scripted_session(tmp_path, ["a", TITLE_TURN])
    await renamed.run("hi")
    await renamed.dispose()
    rename_session(renamed.session_id, "my own name", agent_dir=zpi_env.agent_dir)
    again = await scripted_session(tmp_path, ["b", TITLE_TURN], resume=renamed.session_id)
    await again.run("more")
    await again.dispose()
    assert again.store.title == "my own name"


async def test_a_failing_title_request_never_touches_the_session(zpi_env, tmp_path):
    def answer(request):
        if request.purpose == "title":
            raise RuntimeError("the title model is down")
        return "done"

    model = FunctionModel(answer, side=("title",))
    session = await create_session(model="fn:m", provider=model, cwd=tmp_path, settings={})
    result = await session.run("hello")
    second = await session.run("again")
    await session.dispose()
    assert not result.is_error and not second.is_error
    assert session.store.title is None
    assert len(model.requests) == 3  # two runs and one title attempt


async def test_the_title_model_setting_uses_another_model(zpi_env, tmp_path):
    titles = tmp_path / "titles.jsonl"
    titles.write_text('{"purpose": "title", "text": "Renamed by another model"}\n')
    session = await scripted_session(tmp_path, ["done"], settings=builtins_settings(
        title={"model": f"scripted:{titles}"}))
    await session.run("hello")
    await session.dispose()
    assert session.store.title == "Renamed by another model"
    assert all(r.purpose is None for r in session.test_model.requests)
