"""SDK test support: one way to point AgentOptions at a model, whichever backend runs it.

``backend`` is parametrised over the scripted model and the loopback model server speaking
the OpenAI and Anthropic formats (real HTTP through the real providers). Turns are given with
``backend.turns(...)`` before ``backend.options(...)``; the model is priced (USD per million
tokens: input 1, output 2) so that cost and budget can be checked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.sdk_messages import collect as collect  # the tests here import it from here

from zpi_host.sdk import AgentOptions
from zpi_host.testing import ScriptedModel

KEYS = {"openai": ("OPENAI_API_KEY", "sk-test-openai"),
        "anthropic": ("ANTHROPIC_API_KEY", "sk-ant-test")}
PRICE = {"input": 1.0, "output": 2.0, "cache_read": 0.5, "cache_write": 0}


class Backend:
    def __init__(self, kind: str, server: Any, cwd: Path, agent_dir: Path) -> None:
        self.kind, self.server, self.cwd, self.agent_dir = kind, server, cwd, agent_dir
        self._turns: list[Any] = []
        self.scripted: ScriptedModel | None = None

    def turns(self, *turns: Any) -> Backend:
        if self.kind == "scripted":
            self._turns.extend(turns)
        else:
            self.server.add_turns(*turns)
        return self

    @property
    def model_key(self) -> str:
        """How ``model_usage`` names the model."""
        return "scripted/memory" if self.kind == "scripted" else f"{self.kind}/test-model"

    def settings(self) -> dict[str, Any]:
        if self.kind == "scripted":
            return {}
        return {
            "providers": {self.kind: {"base_url": self.server.base_url}},
            "requests": {"retry_base_delay": 0.001, "retry_max_delay": 0.001},
            "models": {"priced": {"provider": self.kind, "model": "test-model",
                                  "price": PRICE, "context_window": 200_000}},
        }

    def options(self, **fields: Any) -> AgentOptions:
        fields.setdefault("cwd", self.cwd)
        fields.setdefault("agent_dir", self.agent_dir)
        if self.kind == "scripted":
            self.scripted = ScriptedModel(self._turns)  # a new model answers the new turns
            self._turns = []
            fields.setdefault("model", "scripted:memory")
            fields.setdefault("provider", self.scripted)
        else:
            name, key = KEYS[self.kind]
            fields.setdefault("model", "priced")
            fields.setdefault("env", {})[name] = key
            fields.setdefault("settings", json.dumps(self.settings()))
        return AgentOptions(**fields)

    def requests(self) -> list[Any]:
        """What the model was asked: provider-neutral for the scripted model, the JSON bodies
        for the server."""
        if self.kind == "scripted":
            assert self.scripted is not None
            return list(self.scripted.requests)
        return [r.json for r in self.server.requests]


@pytest.fixture(params=["scripted", "openai", "anthropic"])
def backend(request: pytest.FixtureRequest, zpi_env: Any, zpi_model_server: Any,
            tmp_path: Path) -> Backend:
    zpi_env.set("ZPI_DISABLE_PLUGIN_AUTOLOAD", "1")
    cwd = tmp_path / "project"
    cwd.mkdir()
    return Backend(request.param, zpi_model_server, cwd, zpi_env.agent_dir)


@pytest.fixture
def scripted(zpi_env: Any, zpi_model_server: Any, tmp_path: Path) -> Backend:
    """The scripted model only (for what does not depend on the provider)."""
    zpi_env.set("ZPI_DISABLE_PLUGIN_AUTOLOAD", "1")
    cwd = tmp_path / "project"
    cwd.mkdir()
    return Backend("scripted", zpi_model_server, cwd, zpi_env.agent_dir)


