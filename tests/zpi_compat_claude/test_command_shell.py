"""A Claude command's shell blocks (`` !`cmd` `` and ```` ```! ````) run before the prompt is
sent, in a session built in code and through the SDK, with the command's ``allowed-tools`` as
the permission for those commands (not for the model's own calls), and not for a command an
untrusted project ships."""

from __future__ import annotations

from pathlib import Path

import pytest

from zpi_host.sdk import AgentOptions, ResultMessage, query
from zpi_host.session.assembly import create_session
from zpi_host.testing import ScriptedModel

pytestmark = pytest.mark.anyio

FENCED = """---
description: fenced and inline blocks
allowed-tools: Bash(echo:*), Bash(printf:*)
---
Inline: !`echo inline`
Block:
```!
printf 'one\\n'
echo "two $((1 + 1))"
```
Not a block:
```bash
echo literal
```
Refused: !`touch refused.txt`
"""


def project_with(tmp_path: Path, body: str, name: str = "ctx") -> Path:
    cwd = tmp_path / "project"
    (cwd / ".claude" / "commands").mkdir(parents=True)
    (cwd / ".claude" / "commands" / f"{name}.md").write_text(body)
    return cwd


def sent(model: ScriptedModel) -> list[str]:
    """The prompt of each request that ends with one (a tool result ends the others)."""
    return [request.messages[-1].text_content for request in model.requests
            if hasattr(request.messages[-1], "text_content")]


async def test_fenced_and_inline_blocks_run_with_the_commands_allowed_tools(zpi_env, tmp_path):
    cwd = project_with(tmp_path, FENCED)
    model = ScriptedModel([{"tool_calls": [{"name": "bash",
                                            "arguments": {"command": "echo by-the-model"}}]},
                           "done"])
    session = await create_session(model="t:m", provider=model, cwd=cwd,
                                   permission_mode="ask", trust_project=True)
    try:
        await session.run("/ctx")
    finally:
        await session.dispose()
    prompt = sent(model)[0]
    head, refused = prompt.split("Refused: ")
    assert head == ("Inline: inline\nBlock:\none\ntwo 2\nNot a block:\n```bash\n"
                    "echo literal\n```\n")
    assert "denied" in refused or "approval" in refused, refused
    assert not (cwd / "refused.txt").exists()
    # the grant is the blocks' only: the model's own echo, in ask mode, is not allowed
    answer = model.requests[1].messages[-1]
    assert answer.is_error and "by-the-model" not in answer.content[0].text


async def test_deny_rules_and_plan_mode_still_stop_a_block(zpi_env, tmp_path):
    cwd = project_with(tmp_path, FENCED)
    for options in ({"deny": ["Bash(printf:*)"]}, {"permission_mode": "plan"}):
        model = ScriptedModel(["ok"])
        session = await create_session(model="t:m", provider=model, cwd=cwd,
                                       trust_project=True, **options)
        try:
            await session.run("/ctx")
        finally:
            await session.dispose()
        block = sent(model)[0].split("Block:\n")[1].split("Not a block")[0]
        assert "one" not in block and "two 2" not in block, (options, block)


async def test_an_untrusted_projects_allowed_tools_are_not_applied(zpi_env, tmp_path):
    cwd = project_with(tmp_path, "---\nallowed-tools: Bash\n---\nGot: !`echo granted`\n")
    results = {}
    for trusted in (False, True):
        model = ScriptedModel(["ok"])
        session = await create_session(model="t:m", provider=model, cwd=cwd,
                                       permission_mode="ask", trust_project=trusted)
        events: list = []
        session.subscribe(events.append)
        try:
            await session.run("/ctx")
        finally:
            await session.dispose()
        warned = [e.message for e in events if e.type == "warning"]
        results[trusted] = sent(model)[0], warned
    untrusted_prompt, untrusted_warnings = results[False]
    assert untrusted_prompt != "Got: granted" and "granted" not in untrusted_prompt
    assert any("allowed-tools not applied" in w and "not trusted" in w
               for w in untrusted_warnings), untrusted_warnings
    assert results[True] == ("Got: granted", [])


async def test_blocks_run_in_an_sdk_session(zpi_env, tmp_path):
    cwd = project_with(tmp_path, FENCED)
    model = ScriptedModel(["done"])
    options = AgentOptions(cwd=cwd, agent_dir=zpi_env.agent_dir, model="scripted:memory",
                           provider=model, setting_sources=["project"])
    messages = [m async for m in query(prompt="/ctx", options=options)]
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "done"
    prompt = sent(model)[0]
    assert prompt.startswith("Inline: inline\nBlock:\none\ntwo 2\n"), prompt
    assert "not enabled" not in prompt and not (cwd / "refused.txt").exists()
