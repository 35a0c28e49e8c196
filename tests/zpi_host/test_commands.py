"""Slash commands in a run: templates, handlers with the bash tool, unknown commands."""

from __future__ import annotations

import pytest

from zpi_host import hookimpl
from zpi_host.agent.commands import split_command
from zpi_host.resources import Command
from zpi_host.session.assembly import create_session
from zpi_host.testing import ScriptedModel

pytestmark = pytest.mark.anyio


def test_split_command():
    assert split_command("/review  src/a.py now") == ("review", "src/a.py now")
    assert split_command("/git:commit") == ("git:commit", "")
    assert split_command("hello /x") is None and split_command("/ x") is None
    assert split_command("//x") is None and split_command("/") is None


class Commands:
    @hookimpl
    def zpi_register_commands(self):
        async def status(arguments, context):
            out = await context.run_bash("echo branch-$((40 + 2))")
            return f"Status ({arguments}): {out}"

        return [Command("status", "show status", handler=status),
                Command("plain", "no context", handler=lambda arguments: f"plain {arguments}")]


async def test_commands_expand_into_the_user_message(zpi_env, zpi_plugins, tmp_path):
    zpi_plugins.register(Commands(), "commands")
    folder = tmp_path / ".zpi" / "commands"
    folder.mkdir(parents=True)
    (folder / "review.md").write_text("---\ndescription: review a file\n---\n"
                                      "Review $0 with care: $ARGUMENTS\n")
    model = ScriptedModel(["a", "b", "c", "d"])
    session = await create_session(model="t:m", provider=model, cwd=tmp_path)
    await session.run("/review src/a.py quickly")
    await session.run("/status now")
    await session.run("/plain x")
    await session.run("/tmp/file.txt is a path, not a command")
    failed = await session.run("/nope")
    await session.dispose()
    sent = [r.messages[-1].text_content for r in model.requests]
    assert sent[0] == "Review src/a.py with care: src/a.py quickly"
    assert sent[1] == "Status (now): branch-42"
    assert sent[2] == "plain x"
    assert sent[3].startswith("/tmp/file.txt")
    assert failed.is_error and "unknown command /nope" in failed.result
    assert "/review" in failed.result and "/status" in failed.result
    tool_uses = [r for r in session.store.records if r.type == "tool_use"]
    assert tool_uses[0].name == "bash"  # the handler's shell command was journaled
