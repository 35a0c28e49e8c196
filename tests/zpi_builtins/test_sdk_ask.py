"""builtins:ask through the Claude-style SDK: ``AgentOptions(ask_user=...)`` is the port."""

from __future__ import annotations

import pytest

from zpi_host.sdk import AgentOptions, query
from zpi_host.testing import ScriptedModel

pytestmark = pytest.mark.anyio


async def test_query_asks_through_the_ask_user_option(zpi_env, tmp_path):
    asked = []

    async def ask(questions):
        asked.extend(q.question for q in questions)
        return {"Which colour?": "green"}

    model = ScriptedModel([
        {"tool_calls": [{"name": "ask_user", "arguments": {"questions": [
            {"question": "Which colour?", "options": [{"label": "green"}]}]}}]},
        "green it is"])
    options = AgentOptions(model="scripted:memory", provider=model, cwd=tmp_path,
                           ask_user=ask, persist_session=False)
    messages = [m async for m in query(prompt="paint", options=options)]
    assert asked == ["Which colour?"]
    assert "ask_user" in messages[0].data["tools"]
    assert messages[-1].result == "green it is"
    (request,) = [r for r in model.requests if r.messages and r.messages[-1].role == "tool"]
    assert "Which colour? -> green" in request.messages[-1].content[0].text
