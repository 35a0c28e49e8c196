"""The standard tools may read what the host hands the model, like the kernel's read."""

from __future__ import annotations

import re

import pytest

from zpi_host.sdk import AgentOptions, UserMessage, query
from zpi_host.testing import FunctionModel

from .conftest import collect

pytestmark = pytest.mark.anyio


async def test_read_may_open_spilled_output_and_skills_outside_the_workspace(scripted):
    skill = scripted.agent_dir / "skills" / "demo" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: demo\ndescription: a demo skill\n---\nThe skill body.\n")

    def model(request):
        done = [m for m in request.messages if m.role == "tool"]
        if not done:
            return {"tool_calls": [{"name": "Bash", "arguments": {
                "command": "for i in $(seq 1 9000); do echo line-$i; done"}}]}
        if len(done) == 1:
            spilled = re.search(r"(/\S+\.log)", done[0].content[0].text)
            assert spilled, done[0].content[0].text
            return {"tool_calls": [
                {"name": "Read", "arguments": {"file_path": spilled.group(1), "limit": 2}},
                {"name": "Read", "arguments": {"file_path": str(skill)}}]}
        return "done"

    options = AgentOptions(provider=FunctionModel(model), model="function:fn",
                           cwd=scripted.cwd, agent_dir=scripted.agent_dir,
                           allowed_tools=["Bash"])  # default mode: nothing else is allowed
    messages = await collect(query("go", options))
    bash, spilled, skill_body = [b for m in messages if isinstance(m, UserMessage)
                                 for b in m.content]
    assert not bash.is_error
    assert not spilled.is_error and "line-1" in spilled.content
    assert not skill_body.is_error and "The skill body." in skill_body.content
    assert "skills" in messages[0].data and messages[0].data["skills"] == ["demo"]
