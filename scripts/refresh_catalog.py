"""Rebuild the built-in model catalog (zpi_host/providers/catalog_data.json).

Prices and context windows come from genai-prices (PyPI), the price data pydantic/logfire
keep current for many providers; the models that ship, their aliases, capabilities, maximum
output and the service presets come from the hand-kept ``scripts/catalog_overlay.json``.
genai-prices is read, never imported: its ``data.py`` is parsed as a Python syntax tree, so
the script needs nothing but the standard library and pip, and the host never loads it.

    python scripts/refresh_catalog.py                # downloads the newest genai-prices
    python scripts/refresh_catalog.py --wheel W.whl  # or reads a wheel already at hand
"""

from __future__ import annotations

import argparse
import ast
import datetime
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OVERLAY = ROOT / "scripts" / "catalog_overlay.json"
OUTPUT = ROOT / "zpi_host" / "src" / "zpi_host" / "providers" / "catalog_data.json"
PRICE_KEYS = {"input_mtok": "input", "output_mtok": "output", "cache_read_mtok": "cache_read",
              "cache_write_mtok": "cache_write"}


class RefreshError(Exception):
    """The source data lacks something the overlay asks for."""


def evaluate(node: ast.AST) -> Any:
    """A constructor-call tree of genai-prices' data.py as plain data: ``Cls(a=1)`` ->
    ``{"__type__": "Cls", "a": 1}``, ``Decimal('8')`` -> ``"8"``, ``datetime.date(...)``
    -> a date."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.List | ast.Tuple):
        return [evaluate(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        return {evaluate(k): evaluate(v) for k, v in zip(node.keys, node.values, strict=True)
                if k is not None}
    if isinstance(node, ast.Call):
        name = ast.unparse(node.func)
        args = [evaluate(a) for a in node.args]
        if name == "Decimal":
            return str(args[0])
        if name == "datetime.date":
            return datetime.date(*args)
        return {"__type__": name, **{k.arg: evaluate(k.value) for k in node.keywords if k.arg}}
    if isinstance(node, ast.Attribute | ast.Name):  # datetime.UTC and the like: kept as text
        return ast.unparse(node)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -evaluate(node.operand)
    raise RefreshError(f"unexpected syntax in genai-prices data: {ast.unparse(node)[:80]}")


def load_providers(wheel: Path) -> tuple[list[dict[str, Any]], str]:
    with zipfile.ZipFile(wheel) as archive:
        source = archive.read("genai_prices/data.py").decode()
    tree = ast.parse(source)
    for statement in tree.body:
        if isinstance(statement, ast.AnnAssign) and ast.unparse(statement.target) == "providers":
            assert statement.value is not None
            return evaluate(statement.value), wheel.name.split("-")[1]
    raise RefreshError("genai_prices/data.py has no 'providers' list")


def price_now(model: dict[str, Any], today: datetime.date) -> tuple[dict[str, Any], str | None]:
    """The standard price in force ``today`` and the date it started (None: always)."""
    prices = model.get("prices")
    if isinstance(prices, dict) and prices.get("__type__") == "ModelPrice":
        return prices, None
    chosen, since = None, None
    for conditional in prices or []:  # the last active one wins
        start = (conditional.get("constraint") or {}).get("start_date")
        if start is None or start <= today:
            chosen, since = conditional["prices"], start
    if chosen is None:
        raise RefreshError(f"{model['id']}: no price in force on {today}")
    return chosen, None if since is None else since.isoformat()


def convert_price(model_id: str, raw: dict[str, Any]) -> dict[str, Any]:
    """USD per million tokens; a tiered price (every token of a prompt longer than the tier's
    start costs the tier's rate) becomes ``long_context`` with its ``above`` threshold."""
    price: dict[str, Any] = {}
    tier: dict[str, Any] = {}
    for key, name in PRICE_KEYS.items():
        value = raw.get(key)
        if isinstance(value, dict):  # TieredPrices
            tiers = value.get("tiers") or []
            if len(tiers) != 1 or tier.get("above", tiers[0]["start"]) != tiers[0]["start"]:
                raise RefreshError(f"{model_id}: {key} has tiers the catalog cannot hold "
                                   "(one threshold shared by every price)")
            tier["above"] = tiers[0]["start"]
            tier[name] = float(tiers[0]["price"])
            value = value["base"]
        price[name] = None if value is None else float(value)
    if tier:
        price["long_context"] = tier
    return price


def build(providers: list[dict[str, Any]], version: str, overlay: dict[str, Any],
          today: datetime.date) -> dict[str, Any]:
    by_provider = {p["id"]: {m["id"]: m for m in p.get("models", [])} for p in providers}
    services = overlay["services"]
    models: dict[str, Any] = {}
    for item in overlay["models"]:
        service = services.get(item.get("service", ""), {})
        source = item.get("prices_from") or service.get("prices_from") or item["provider"]
        source_id = item.get("prices_model", item["model"])
        found = by_provider.get(source, {}).get(source_id)
        if found is None:
            raise RefreshError(f"genai-prices {version} has no model {source}/{source_id}")
        raw, since = price_now(found, today)
        entry: dict[str, Any] = {"provider": service.get("provider", item.get("provider"))}
        if item.get("service"):
            entry.update(base_url=service["base_url"], api_key_env=service["api_key_env"])
        entry["model"] = item["model"]
        for field in ("aliases", "max_output", "tools", "vision", "reasoning",
                      "prompt_caching"):
            if field in item:
                entry[field] = item[field]
        window = found.get("context_window") or item.get("context_window")
        if window is None:
            raise RefreshError(f"{item['model']}: no context window in genai-prices or the "
                               "overlay")
        entry["context_window"] = window
        entry["price"] = convert_price(item["model"], raw)
        entry["price_date"] = since or today.isoformat()
        entry["price_source"] = f"genai-prices {version} ({source}/{source_id})"
        name = item["model"] if not item.get("service") else f"{item['service']}:{item['model']}"
        models[name] = entry
    for provider, name in overlay["defaults"].items():
        if name not in models or models[name]["provider"] != provider:
            raise RefreshError(f"default model {name!r} of {provider} is not in the catalog")
    return {"generated": today.isoformat(), "source": f"genai-prices {version}",
            "defaults": overlay["defaults"], "services": {
                k: {f: v[f] for f in ("provider", "base_url", "api_key_env") if f in v}
                for k, v in services.items()},
            "models": models}


def download() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="genai-prices-"))
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d",
                    str(folder), "genai-prices"], check=True)
    return next(folder.glob("genai_prices-*.whl"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, help="a genai-prices wheel (default: download)")
    parser.add_argument("--date", type=datetime.date.fromisoformat,
                        default=datetime.datetime.now(datetime.UTC).date(),
                        help="the day whose prices to take (default: today, UTC)")
    parser.add_argument("--overlay", type=Path, default=OVERLAY)
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    try:
        providers, version = load_providers(args.wheel or download())
        data = build(providers, version, json.loads(args.overlay.read_text()), args.date)
    except RefreshError as exc:
        print(f"refresh_catalog: {exc}", file=sys.stderr)
        return 1
    args.output.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
    print(f"wrote {len(data['models'])} models from {data['source']} to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
