"""Shared helpers of the zpi-builtins tests: a session over a scripted model with settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zpi_host.assembly import create_session
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
