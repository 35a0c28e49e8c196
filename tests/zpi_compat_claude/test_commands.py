"""Claude commands in real sessions: placeholders, `` !`cmd` `` through the bash tool,
``@path``, userConfig values, frontmatter fields, and the frozen text of a running session."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.claude_folders import claude_settings, copy_plugin

from zpi_compat_claude.commands import expand_inline, format_option, include_file, substitute
from zpi_host.session.assembly import create_session
from zpi_host.testing import ScriptedModel

pytestmark = pytest.mark.anyio


async def session_for(tmp_path: Path, *plugins: str, replies: int = 4, **options):
    """A session in ``tmp_path/project`` with corpus ``plugins`` loaded via plugin_dirs."""
    cwd = tmp_path / "project"
    cwd.mkdir(exist_ok=True)
    dirs = [copy_plugin(name, tmp_path / "plugins") for name in plugins]
    model = ScriptedModel(["ok"] * replies)
    settings = options.pop("settings", {})
    session = await create_session(model="t:m", provider=model, cwd=cwd, plugin_dirs=dirs,
                                   settings=settings, **options)
    return session, model, cwd


def sent(model: ScriptedModel) -> list[str]:
    return [request.messages[-1].text_content for request in model.requests]


async def test_every_placeholder(zpi_env, tmp_path):
    session, model, cwd = await session_for(tmp_path, "placeholders")
    await session.run('/placeholders:all one "two words" three')
    await session.run("/placeholders:git:log main")
    await session.run("/placeholders:plain extra args")
    await session.dispose()
    root = session.resources.command("placeholders:all").path.parent.parent
    data = zpi_env.agent_dir / "plugin-data" / "claude" / "placeholders"
    assert sent(model)[0] == (
        "all=[one \"two words\" three] second=[two words] first=[one] missing=[]\n"
        f"root={root}\ndata={data}\nproject={cwd}\nsession={session.session_id}")
    assert root.parent == zpi_env.agent_dir / "plugin-cache" / "claude" / "placeholders"
    assert data.is_dir()
    assert sent(model)[1] == "Show the log of main"
    assert sent(model)[2] == "plain text, no placeholders\n\nARGUMENTS: extra args"


async def test_frontmatter_fields_reach_the_command(zpi_env, tmp_path):
    session, _, _ = await session_for(tmp_path, "placeholders")
    command = session.resources.command("placeholders:all")
    await session.dispose()
    assert command.description == "Every placeholder"
    assert command.argument_hint == "<first> <second>"
    assert command.allowed_tools == ("Bash(cat:*)", "Read")
    assert command.model == "haiku" and command.disable_model_invocation
    assert command.template is None and command.origin == "claude:placeholders"
    plain = session.resources.command("placeholders:plain")
    assert plain.description == "plain text, no placeholders"


async def test_inline_commands_and_files(zpi_env, tmp_path):
    session, model, cwd = await session_for(tmp_path, "placeholders")
    (cwd / "notes.md").write_text("# Notes\nremember the milk\n")
    await session.run("/placeholders:shell hello world")
    await session.dispose()
    assert sent(model)[0] == (
        "Data: data from the plugin\n"
        "Args: HELLO WORLD\n"
        'Notes: <file path="notes.md">\n# Notes\nremember the milk\n</file>\n'
        "Gone: @missing.md\n"
        "Mail me at me@example.com, price 5!`not a command`")
    calls = [r.arguments["command"] for r in session.store.records if r.type == "tool_use"]
    root = session.resources.command("placeholders:shell").path.parent.parent
    assert calls == [f"cat {root}/data.txt", 'echo "hello world" | tr a-z A-Z']


async def test_inline_commands_meet_the_permission_rules(zpi_env, tmp_path):
    session, model, _ = await session_for(tmp_path, "placeholders", deny=["bash(cat:*)"])
    await session.run("/placeholders:shell x")
    await session.dispose()
    first_line = sent(model)[0].splitlines()[0]
    assert first_line.startswith("Data: ") and "data from the plugin" not in first_line
    assert "denied" in first_line


async def test_user_config_in_command_text(zpi_env, tmp_path):
    settings = claude_settings(plugins={"user-config": {"options": {"token": "s3cret",
                                                                      "verbose": True}}})
    session, model, _ = await session_for(tmp_path, "user-config", settings=settings)
    await session.run("/user-config:show")
    await session.dispose()
    assert sent(model)[0] == ("region=eu-west retries=3 verbose=true "
                              "token=${user_config.token} other=${user_config.nope}")


async def test_project_commands_are_not_namespaced(zpi_env, tmp_path):
    cwd = tmp_path / "project"
    (cwd / ".claude" / "commands").mkdir(parents=True)
    (cwd / ".claude" / "commands" / "todo.md").write_text(
        "---\ndescription: list todos\n---\nTODOs in $1 for ${CLAUDE_PROJECT_DIR}: "
        "!`echo found`\n")
    model = ScriptedModel(["ok"])
    session = await create_session(model="t:m", provider=model, cwd=cwd)
    await session.run("/todo a src")
    await session.dispose()
    assert sent(model) == [f"TODOs in src for {cwd}: found"]


async def test_a_running_session_keeps_the_text_it_started_with(zpi_env, tmp_path):
    cwd = tmp_path / "project"
    cwd.mkdir()
    plugin = copy_plugin("minimal", tmp_path / "plugins")
    first_model = ScriptedModel(["ok", "ok"])
    first = await create_session(model="t:m", provider=first_model, cwd=cwd,
                                 plugin_dirs=[plugin])
    await first.run("/minimal:hello Ada")
    (plugin / "commands" / "hello.md").write_text("Wave at $ARGUMENTS.\n")
    skill = plugin / "skills" / "tidy" / "SKILL.md"
    skill.write_text(skill.read_text().replace("Tidy up", "Sort"))
    await first.run("/minimal:hello Bob")
    second_model = ScriptedModel(["ok"])
    second = await create_session(model="t:m", provider=second_model, cwd=cwd,
                                  plugin_dirs=[plugin])
    await second.run("/minimal:hello Cy")
    old_skill = first.resources.skill("minimal:tidy")
    new_skill = second.resources.skill("minimal:tidy")
    await first.dispose()
    await second.dispose()
    assert sent(first_model) == ["Say hello to Ada.", "Say hello to Bob."]
    assert sent(second_model) == ["Wave at Cy."]
    assert "Tidy up" in old_skill.path.read_text() and "Tidy up" in old_skill.description
    assert "Sort" in new_skill.path.read_text() and new_skill.path != old_skill.path


def test_substitute_leaves_unknown_variables():
    calls = []

    def lazy() -> str:
        calls.append(1)
        return "/data"

    text = ("${CLAUDE_PLUGIN_ROOT} ${CLAUDE_PLUGIN_DATA} ${HOME} ${user_config.k} "
            "$CLAUDE_PLUGIN_ROOT")
    assert substitute(text, {"CLAUDE_PLUGIN_ROOT": "/r", "CLAUDE_PLUGIN_DATA": lazy}) == \
        "/r /data ${HOME} ${user_config.k} $CLAUDE_PLUGIN_ROOT"
    assert substitute("${CLAUDE_PLUGIN_ROOT}", {"CLAUDE_PLUGIN_DATA": lazy}) == \
        "${CLAUDE_PLUGIN_ROOT}"
    assert calls == [1]


def test_format_option():
    assert [format_option(v) for v in (True, 3, 2.0, 2.5, "x", ["a", 1])] == [
        "true", "3", "2", "2.5", "x", "a,1"]


def test_include_file_rules(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.py").write_text("print(1)\n")
    (tmp_path / "secret.txt").write_text("no")
    (project / "bin.dat").write_bytes(b"\xff\xfe")
    (project / "big.txt").write_text("x" * 100_010)
    assert include_file("a.py.", project) == ('<file path="a.py">\nprint(1)\n</file>', ".")
    assert include_file("../secret.txt", project) is None
    assert include_file(str(tmp_path / "secret.txt"), project) is None
    assert include_file("bin.dat", project) is None
    assert include_file(".", project) is None
    block, _ = include_file("big.txt", project) or ("", "")
    assert "[... cut at 100000 of 100010 bytes; read the file for the rest]" in block


async def test_expand_inline_does_not_rescan_output(tmp_path):
    class Context:
        async def run_bash(self, command: str) -> str:
            return "@a.py !`echo nested`\n"

    (tmp_path / "a.py").write_text("A")
    text = await expand_inline("x !`anything` y\n@a.py", Context(), tmp_path)
    assert text == 'x @a.py !`echo nested` y\n<file path="a.py">\nA\n</file>'
