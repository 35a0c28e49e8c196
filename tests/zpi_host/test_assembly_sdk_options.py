"""The create_session options the SDK layer builds on: system_prompt, plugins, READ_TOOLS."""

from __future__ import annotations

import pytest

from zpi_host import hookimpl
from zpi_host.contract.plugins import PluginConfig, PluginHost
from zpi_host.errors import UsageError
from zpi_host.session.assembly import create_session
from zpi_host.testing import ScriptedModel

pytestmark = pytest.mark.anyio


async def test_system_prompt_replaces_the_base_prompt_and_context(zpi_env, tmp_path):
    (tmp_path / "AGENTS.md").write_text("project context here")
    model = ScriptedModel(["a", "b"])
    session = await create_session(model="scripted:x", provider=model, cwd=tmp_path,
                                   persist=False, system_prompt="Only this.",
                                   append_system_prompt="And this.")
    default = await create_session(model="scripted:x", provider=ScriptedModel(["a"]),
                                   cwd=tmp_path, persist=False)
    try:
        assert session.system_prompt == "Only this.\n\nAnd this."
        assert "project context here" in default.system_prompt
    finally:
        await session.dispose()
        await default.dispose()
    with pytest.raises(UsageError, match="system_prompt must be a string"):
        await create_session(model="scripted:x", provider=model, system_prompt=["x"])


class Greeter:
    @hookimpl
    def zpi_instructions(self):
        from zpi_host.contract.decisions import Instruction

        return Instruction("Greet politely.")


async def test_plugins_are_registered_on_the_session_host(zpi_env, tmp_path):
    zpi_env.set("ZPI_DISABLE_PLUGIN_AUTOLOAD", "1")
    session = await create_session(model="scripted:x", provider=ScriptedModel(["a"]),
                                   cwd=tmp_path, persist=False, plugins={"greeter": Greeter()})
    try:
        record = session.host.get("greeter")
        assert record is not None and (record.status, record.source) == ("ok", "local")
        assert "Greet politely." in session.system_prompt
    finally:
        await session.dispose()
    with pytest.raises(UsageError, match="register them on that host"):
        await create_session(model="scripted:x", provider=ScriptedModel(["a"]),
                             host=PluginHost(PluginConfig(autoload=False)).load(),
                             plugins={"greeter": Greeter()})
    with pytest.raises(UsageError, match=r"'zpi\.tools' given in plugins= could not be"):
        await create_session(model="scripted:x", provider=ScriptedModel(["a"]), cwd=tmp_path,
                             persist=False, plugins={"zpi.tools": Greeter()})
