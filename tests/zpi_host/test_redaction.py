"""The Redactor and the key variables: which values are keys, and how they are replaced in
text, events, messages and records."""

from __future__ import annotations

import pytest

from zpi_host.agent.events import MessageEnd, WarningEvent
from zpi_host.providers.messages import AssistantMessage, TextContent, Usage
from zpi_host.session.assembly import create_session
from zpi_host.support.redaction import (
    Redactor,
    SecretsSettingError,
    hidden_variables,
    key_variables,
)
from zpi_host.testing import ScriptedModel

pytestmark = pytest.mark.anyio
KEY = "sk-unit-0123456789"
SETTINGS = {"models": {"a": {"provider": "openai", "model": "m", "api_key_env": "A_KEY"},
                       "b": {"provider": "openai", "model": "m", "api_key": "inline-key-42"}},
            "providers": {"openai": {"api_key_env": "P_KEY"}}}


def test_key_variables_and_values_come_from_the_catalog() -> None:
    assert key_variables(SETTINGS) == {"OPENAI_API_KEY", "ANTHROPIC_API_KEY",
                                       "ANTHROPIC_AUTH_TOKEN", "A_KEY", "P_KEY"}
    redactor = Redactor.from_settings(SETTINGS, {"A_KEY": KEY, "P_KEY": "short",
                                                 "OTHER": "not-a-key-value"})
    assert set(redactor.secrets) == {KEY, "inline-key-42"}  # "short" is too short to be one
    assert redactor.text(f"a {KEY} b inline-key-42") == "a [redacted] b [redacted]"


def test_hidden_variables_follow_the_setting() -> None:
    assert hidden_variables(SETTINGS) == key_variables(SETTINGS)
    passing = {**SETTINGS, "secrets": {"pass_to_commands": ["A_KEY"]}}
    assert hidden_variables(passing) == key_variables(SETTINGS) - {"A_KEY"}
    assert hidden_variables({"secrets": {"pass_to_commands": True}}) == frozenset()
    with pytest.raises(SecretsSettingError, match="true, false or a list"):
        hidden_variables({"secrets": {"pass_to_commands": 1}})


def test_structures_are_rebuilt_only_where_a_key_is() -> None:
    redactor = Redactor([KEY])
    clean = MessageEnd(AssistantMessage((TextContent("fine"),), "stop", Usage(), "p", "m"))
    assert redactor.value(clean) is clean
    dirty = MessageEnd(AssistantMessage((TextContent(f"key {KEY}"),), "error", Usage(), "p",
                                        "m", error=f"echo {KEY}"))
    out = redactor.value(dirty)
    assert out.message.text == "key [redacted]" and out.message.error == "echo [redacted]"
    assert redactor.value({"a": [KEY, (1, KEY)]}) == {"a": ["[redacted]", (1, "[redacted]")]}
    assert redactor.value(KEY.encode()) == b"[redacted]"
    assert Redactor().value(dirty) is dirty


async def test_session_warnings_and_events_are_redacted(zpi_env, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    session = await create_session(model="t:m", provider=ScriptedModel(["done"]), cwd=tmp_path)
    events = []
    session.subscribe(events.append)
    session.view.warn(f"a plugin printed {KEY}")
    await session.run("go")
    await session.emit(WarningEvent(f"direct {KEY}"))
    await session.dispose()
    texts = [e.message for e in events if e.type == "warning"]
    assert texts == ["a plugin printed [redacted]", "direct [redacted]"]
