"""Where a plugin's ``${...}`` variables and argument placeholders are filled in, place by
place, as Claude Code fills them: command text, skill text (as the skill tool returns it),
agent prompts, hook commands and the hook environment; and where they are not: a file the
model reads, a hook script's own text (the shell expands it from the environment), and
``$CLAUDE_PLUGIN_ROOT`` without braces in markdown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zpi_host.providers.messages import ToolResultMessage
from zpi_host.session.assembly import create_session
from zpi_host.testing import FunctionModel

pytestmark = pytest.mark.anyio

EVERY = ("root=${CLAUDE_PLUGIN_ROOT} data=${CLAUDE_PLUGIN_DATA} "
         "project=${CLAUDE_PROJECT_DIR} session=${CLAUDE_SESSION_ID} "
         "skill=${CLAUDE_SKILL_DIR} bare=$CLAUDE_PLUGIN_ROOT")


def make_plugin(where: Path) -> Path:
    root = where / "vars"
    files = {
        ".claude-plugin/plugin.json": json.dumps({"name": "vars"}),
        "commands/show.md": f"{EVERY} args=[$ARGUMENTS] first=[$0]\n",
        "skills/tidy/SKILL.md": f"---\ndescription: tidy up\n---\n{EVERY} args=[$ARGUMENTS]\n",
        "agents/helper.md": f"---\ndescription: helps\n---\n{EVERY}\n",
        "notes.txt": f"{EVERY}\n",
        "hooks/record.sh": ('#!/bin/bash\ncat > /dev/null\n'
                            'printf "%s\\n" "root=${CLAUDE_PLUGIN_ROOT}" '
                            '"project=${CLAUDE_PROJECT_DIR}" "data=${CLAUDE_PLUGIN_DATA}" '
                            '> "$CLAUDE_PLUGIN_DATA/env.txt"\n'),
        "hooks/hooks.json": json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [
            {"type": "command",
             "command": "echo '${CLAUDE_PLUGIN_ROOT}|${CLAUDE_PLUGIN_DATA}' > "
                        "\"$CLAUDE_PLUGIN_DATA/command.txt\"; bash "
                        "\"${CLAUDE_PLUGIN_ROOT}/hooks/record.sh\""}]}]}}),
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


async def test_each_place_fills_what_claude_code_fills(zpi_env, tmp_path):
    plugin = make_plugin(tmp_path / "plugins")
    cwd = tmp_path / "project"
    cwd.mkdir()
    where: dict[str, Path] = {}
    turns = [
        "ok",
        {"tool_calls": [{"name": "skill", "arguments": {"skill": "vars:tidy",
                                                         "args": "the desk"}}]},
        lambda: {"tool_calls": [{"name": "read",
                                 "arguments": {"path": str(where["root"] / "notes.txt")}}]},
        "done",
    ]

    def answer(request):
        turn = turns.pop(0)
        return turn() if callable(turn) else turn

    model = FunctionModel(answer)
    session = await create_session(model="t:m", provider=model, cwd=cwd,
                                   plugin_dirs=[plugin], permission_mode="bypass")
    command = session.resources.command("vars:show")
    root = where["root"] = command.path.parent.parent  # the frozen copy the session uses
    data = zpi_env.agent_dir / "plugin-data" / "claude" / "vars"
    sid = session.session_id
    try:
        await session.run("/vars:show alpha beta")
        await session.run("use the skill")
    finally:
        await session.dispose()

    # command text: plugin and session variables, then the arguments; no ${CLAUDE_SKILL_DIR}
    prompt = model.requests[0].messages[-1].text_content
    assert prompt == (f"root={root} data={data} project={cwd} session={sid} "
                      "skill=${CLAUDE_SKILL_DIR} bare=$CLAUDE_PLUGIN_ROOT "
                      "args=[alpha beta] first=[alpha]")
    # skill text (the skill tool's result): plugin variables, the skill's folder, the session,
    # the arguments; not the project
    skill_result, read_result = [m for m in session.messages
                                 if isinstance(m, ToolResultMessage)]
    text = skill_result.content[0].text
    assert text.endswith(f"root={root} data={data} project=${{CLAUDE_PROJECT_DIR}} "
                         f"session={sid} skill={root / 'skills' / 'tidy'} "
                         "bare=$CLAUDE_PLUGIN_ROOT args=[the desk]"), text
    # agent prompt: plugin variables and the agent's folder only
    (agent,) = [a for a in session.resources.agents if a.name == "vars:helper"]
    assert agent.prompt.strip() == (f"root={root} data={data} project=${{CLAUDE_PROJECT_DIR}} "
                                    "session=${CLAUDE_SESSION_ID} skill=${CLAUDE_SKILL_DIR} "
                                    "bare=$CLAUDE_PLUGIN_ROOT")
    # a file the model reads is its own text
    assert "root=${CLAUDE_PLUGIN_ROOT}" in read_result.content[0].text
    # hook command text: filled in; the hook's script gets the same as environment variables
    assert (data / "command.txt").read_text().strip() == f"{root}|{data}"
    assert (data / "env.txt").read_text().splitlines() == [
        f"root={root}", f"project={cwd}", f"data={data}"]
