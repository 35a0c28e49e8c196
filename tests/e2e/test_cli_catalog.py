"""A first run with only a key: no settings file, no --model, the loopback server's URL from
the provider's own variable; the built-in catalog supplies the model and its prices."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from tests.helpers.cli import EXE, clean_environment

from zpi_host.providers.builtin_catalog import builtin_defaults, builtin_models
from zpi_host.testing import ModelServer

USAGE = {"input_tokens": 1_000, "output_tokens": 100}


def run(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE, *args], capture_output=True, text=True, cwd=tmp_path,
                          env={**clean_environment(tmp_path), **env}, timeout=60,
                          stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_key_alone_runs_the_providers_default_model_at_catalog_prices(tmp_path, provider):
    prefix = provider.upper()
    with ModelServer([{"text": "hi there", "usage": USAGE},
                      {"text": "Greeting", "usage": USAGE}]) as server:
        out = run(tmp_path, "run", "--output-format", "json", "hi",
                  **{f"{prefix}_API_KEY": "x", f"{prefix}_BASE_URL": server.base_url})
        sent = [r.json["model"] for r in server.requests]
    assert out.returncode == 0, out.stderr
    default = builtin_defaults()[provider]
    assert sent[0] == default
    result = json.loads(out.stdout)
    assert result["result"] == "hi there"
    price = builtin_models()[default]["price"]
    each = (USAGE["input_tokens"] * price["input"]
            + USAGE["output_tokens"] * price["output"]) / 1e6
    # the answer's request (the title request after it is not the run's)
    assert result["total_cost_usd"] == pytest.approx(each, rel=1e-9)
    assert not result["model_usage"][f"{provider}/{default}"]["unpriced"]


def test_no_key_says_which_variables_to_set(tmp_path):
    out = run(tmp_path, "run", "hi")
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert "ANTHROPIC_API_KEY" in out.stderr and "OPENAI_API_KEY" in out.stderr


def test_an_unknown_model_names_the_closest(tmp_path):
    out = run(tmp_path, "run", "--model", "claude-sonet-4-5x", "hi", ANTHROPIC_API_KEY="x")
    assert out.returncode != 0 and "Traceback" not in out.stderr
    # a claude- id goes to Anthropic even when unknown; a typo without a prefix does not
    out = run(tmp_path, "run", "--model", "sonet", "hi", ANTHROPIC_API_KEY="x")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "Closest names: sonnet" in out.stderr and "tried" in out.stderr


def test_a_known_model_without_its_key_names_the_variable(tmp_path):
    out = run(tmp_path, "run", "--model", "deepseek:deepseek-chat", "hi")
    assert out.returncode == 2 and "DEEPSEEK_API_KEY" in out.stderr


def test_models_lists_the_built_in_catalog(tmp_path):
    out = run(tmp_path, "models", "--json", OPENAI_API_KEY="x")
    assert out.returncode == 0, out.stderr
    rows = {row["name"]: row for row in json.loads(out.stdout)}
    assert set(builtin_models()) <= set(rows)
    assert rows["gpt-4.1"]["credentials"] and not rows["claude-sonnet-4-5"]["credentials"]
    assert rows["claude-sonnet-4-5"]["price"]["input"] > 0
    table = run(tmp_path, "models")
    assert "claude-sonnet-4-5" in table.stdout and "200000" in table.stdout


def test_the_cost_of_an_unpriced_model_comes_with_a_warning(tmp_path):
    with ModelServer([{"text": "hi there", "usage": USAGE},
                      {"text": "Greeting", "usage": USAGE}]) as server:
        out = run(tmp_path, "run", "--verbose", "--model", "claude-unlisted-1", "hi",
                  ANTHROPIC_API_KEY="x", ANTHROPIC_BASE_URL=server.base_url)
    assert out.returncode == 0, out.stderr
    assert "anthropic/claude-unlisted-1: 1000 in, 100 out, unpriced" in out.stderr
    assert "warning: the cost leaves out anthropic/claude-unlisted-1" in out.stderr
    with ModelServer([{"text": "hi there", "usage": USAGE},
                      {"text": "Greeting", "usage": USAGE}]) as server:
        priced = run(tmp_path, "run", "--verbose", "--model", "sonnet", "hi",
                     ANTHROPIC_API_KEY="x", ANTHROPIC_BASE_URL=server.base_url)
    assert priced.returncode == 0 and "warning: the cost" not in priced.stderr
    assert "anthropic/claude-sonnet-4-5: 1000 in, 100 out, $0.0045" in priced.stderr


def test_the_context_guard_acts_at_the_catalogs_window(tmp_path):
    (tmp_path / "notes.txt").write_text("a note\n")
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_text(json.dumps({
        "compaction": {"enabled": False},
        "models": {"claude-sonnet-4-5": {"context_window": 10_000}}}))
    read = {"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}],
            "usage": {"input_tokens": 9_900, "output_tokens": 5}}
    with ModelServer([read, {"text": "never sent"}, {"text": "Title"}]) as server:
        out = run(tmp_path, "run", "--model", "sonnet", "--output-format", "json", "read it",
                  ANTHROPIC_API_KEY="x", ANTHROPIC_BASE_URL=server.base_url)
        answers = list(server.requests)
    result = json.loads(out.stdout)
    assert result["is_error"] and "context guard" in result["result"], out.stderr
    assert "10,000 (the model's context window)" in result["result"]
    assert [r.json["model"] for r in answers] == ["claude-sonnet-4-5"]  # the guard stopped the 2nd
