"""scripts/refresh_catalog.py: genai-prices' data file and the overlay make the catalog."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "refresh_catalog.py"

DATA = '''
import datetime
from decimal import Decimal

from .types import *

providers: list[Provider] = [
    Provider(
        id='anthropic',
        name='Anthropic',
        api_pattern='x',
        models=[
            ModelInfo(
                id='claude-a',
                match=ClauseEquals(equals='claude-a'),
                context_window=200000,
                prices=[
                    ConditionalPrice(prices=ModelPrice(input_mtok=Decimal('4'),
                                                       output_mtok=Decimal('20'))),
                    ConditionalPrice(
                        constraint=StartDateConstraint(start_date=datetime.date(2026, 3, 1)),
                        prices=ModelPrice(
                            input_mtok=TieredPrices(base=Decimal('3'),
                                                    tiers=[Tier(start=200000, price=Decimal('6'))]),
                            output_mtok=Decimal('15'),
                            cache_read_mtok=Decimal('0.3'),
                        ),
                    ),
                ],
            ),
            ModelInfo(id='claude-b', match=ClauseEquals(equals='claude-b'),
                      prices=ModelPrice(input_mtok=Decimal('1'), output_mtok=Decimal('5'))),
        ],
    ),
]
'''


def refresh(tmp_path: Path, overlay: dict, day: str) -> tuple[subprocess.CompletedProcess, Path]:
    wheel = tmp_path / "genai_prices-9.9.9-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("genai_prices/data.py", DATA)
    (tmp_path / "overlay.json").write_text(json.dumps(overlay))
    out = tmp_path / "catalog.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--wheel", str(wheel), "--date", day,
                           "--overlay", str(tmp_path / "overlay.json"), "--output", str(out)],
                          capture_output=True, text=True, timeout=60)
    return done, out


OVERLAY = {
    "defaults": {"anthropic": "claude-a"},
    "services": {"local": {"provider": "openai", "base_url": "http://localhost:1/v1",
                           "api_key_env": "LOCAL_KEY"}},
    "models": [
        {"provider": "anthropic", "model": "claude-a", "aliases": ["a"], "max_output": 64000,
         "reasoning": "anthropic-thinking", "prompt_caching": True},
        {"provider": "anthropic", "model": "claude-b", "context_window": 100000},
    ],
}


def test_prices_in_force_that_day_limits_from_the_overlay(tmp_path):
    done, out = refresh(tmp_path, OVERLAY, "2026-06-01")
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    assert data["source"] == "genai-prices 9.9.9" and data["defaults"] == {"anthropic": "claude-a"}
    a, b = data["models"]["claude-a"], data["models"]["claude-b"]
    assert a["price"] == {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": None,
                          "long_context": {"above": 200000, "input": 6.0}}
    assert (a["price_date"], a["aliases"], a["max_output"], a["context_window"]) == (
        "2026-03-01", ["a"], 64000, 200000)
    assert (b["context_window"], b["price_date"]) == (100000, "2026-06-01")  # from the overlay
    assert data["services"]["local"]["api_key_env"] == "LOCAL_KEY"
    earlier = json.loads(refresh(tmp_path, OVERLAY, "2026-01-01")[1].read_text())
    assert earlier["models"]["claude-a"]["price"]["input"] == 4.0


def test_a_model_the_source_lacks_is_an_error_not_a_guess(tmp_path):
    overlay = {**OVERLAY, "models": [*OVERLAY["models"], {"provider": "anthropic",
                                                          "model": "claude-z"}]}
    done, out = refresh(tmp_path, overlay, "2026-06-01")
    assert done.returncode == 1 and "no model anthropic/claude-z" in done.stderr
    assert not out.exists() and "Traceback" not in done.stderr


def test_the_shipped_catalog_loads_as_settings_entries_do():
    from zpi_host.providers.builtin_catalog import builtin_models
    from zpi_host.providers.catalog import list_models

    shipped = json.loads((SCRIPT.parent / "catalog_overlay.json").read_text())
    assert [m["model"] for m in shipped["models"]] == [
        e["model"] for e in builtin_models().values()]
    assert len(list_models({})) == len(builtin_models())
