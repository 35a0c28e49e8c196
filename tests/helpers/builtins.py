"""Shared helpers of the zpi-builtins tests: a session over a scripted model with settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zpi_host.session.assembly import create_session
from zpi_host.testing import ScriptedModel


def builtins_settings(**services: dict[str, Any]) -> dict[str, Any]:
    """``{"plugins": {"builtins": services}}``."""
    return {"plugins": {"builtins": services}}


async def scripted_session(tmp_path: Path, turns: list[Any], *, settings: Any = None,
                           **options: Any) -> Any:
    model = ScriptedModel(turns)
    session = await create_session(model="scripted:memory", provider=model, cwd=tmp_path,
                                   settings=settings or {}, **options)
    session.test_model = model
    return session


def loopback_sdk_options(server: Any, cwd: Path, *, builtins: dict[str, Any] | None = None,
                         **fields: Any) -> Any:
    """SDK options for model ``m`` on the loopback server's Anthropic format, quick retries,
    and no title side request (it would take a turn of the server's script); ``builtins``:
    more service settings."""
    import json

    from zpi_host.sdk import AgentOptions

    services = {"title": {"enabled": False}, **(builtins or {})}
    settings = {"providers": {"anthropic": {"base_url": server.base_url}},
                "requests": {"retry_base_delay": 0.001, "retry_max_delay": 0.001},
                "models": {"m": {"provider": "anthropic", "model": "test-model",
                                 "context_window": 200_000}},
                "plugins": {"builtins": services}}
    return AgentOptions(model="m", cwd=cwd, env={"ANTHROPIC_API_KEY": "sk-ant-test"},
                        settings=json.dumps(settings), **fields)
