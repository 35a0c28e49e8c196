"""``zpi-host models``: the model catalog (settings and built-in) and which models have
credentials.

Never prints a key: only where it is looked up (variable or setting) and whether it is set.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from ..errors import docs_url
from .exits import EXIT_FAILED, EXIT_OK, print_error, print_warning


def add_models_parser(commands: Any) -> None:
    import argparse

    models = commands.add_parser(
        "models", help="list configured models and whether they have credentials",
        description="Models come from 'models' in settings.json (user and project).",
        epilog="examples:\n  zpi-host models\n  zpi-host models --json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    models.add_argument("--json", dest="as_json", action="store_true", help="JSON output")


def model_rows(settings: Any, environ: Any) -> list[dict[str, Any]]:
    from ..providers.builtin_catalog import builtin_models
    from ..providers.catalog import credentials, default_model, list_models

    chosen = settings.get("model") if isinstance(settings.get("model"), str) else None
    if chosen is None and environ.get("ZPI_MODEL"):
        chosen = environ["ZPI_MODEL"]
    if chosen is None:
        fallback, _ = default_model(settings, environ)
        chosen = fallback.name if fallback is not None else None
    own = settings.get("models") if isinstance(settings.get("models"), dict) else {}
    rows = []
    for entry in list_models(settings):
        credential = credentials(entry, environ)
        price = entry.price
        rows.append({
            "name": entry.name, "provider": entry.provider, "model": entry.model,
            "aliases": list(entry.aliases),
            "source": "settings" if entry.name in own else "built-in",
            "base_url": entry.base_url, "context_window": entry.context_window,
            "max_output": entry.max_output, "reasoning": entry.reasoning,
            "tools": entry.tools, "vision": entry.vision,
            "prompt_caching": entry.prompt_caching,
            "price": None if price is None else {
                "input": price.input, "output": price.output,
                "cache_read": price.cache_read, "cache_write": price.cache_write},
            "price_date": entry.price_date,
            "credentials": credential.key is not None or not credential.required,
            "credential_source": credential.source,
            "default": chosen is not None and chosen in (entry.name, *entry.aliases),
            "overrides_built_in": entry.name in own and entry.name in builtin_models(),
        })
    return rows


def _priced(price: dict[str, Any] | None) -> str:
    """``in/out`` USD per million tokens, then the cache read/write prices when known."""
    if price is None or price["input"] is None:
        return "-"

    def usd(value: float | None) -> str:
        return "-" if value is None else f"{value:g}"

    text = f"{usd(price['input'])}/{usd(price['output'])}"
    if price["cache_read"] is not None or price["cache_write"] is not None:
        text += f" cache {usd(price['cache_read'])}/{usd(price['cache_write'])}"
    return text


def models_command(args: Any, blocked: list[str]) -> int:
    from ..errors import ZpiError
    from ..session.assembly import resolve_agent_dir
    from ..settings.manager import SettingsManager

    cwd = Path(args.cwd or os.getcwd()).resolve()
    manager = SettingsManager(resolve_agent_dir(None, os.environ), cwd)
    for problem in manager.problems:
        print_warning(problem)
    try:
        rows = model_rows(manager.settings, os.environ)
    except ZpiError as exc:
        print_error(exc)
        return EXIT_FAILED
    if args.as_json:
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    if not rows:
        print("no models configured; add them under 'models' in "
              f"{manager.user_path} (see {docs_url('user-guide', 'models-and-credentials')}), "
              "or use --model PROVIDER:MODEL",
              file=sys.stderr)
        return EXIT_OK
    from ..support.terminal_text import shown

    header = ("NAME", "PROVIDER", "MODEL", "CONTEXT", "USD/Mtok in/out", "CREDENTIALS")
    cells: list[tuple[str, ...]] = [header]
    for row in rows:
        priced = _priced(row["price"])
        creds = ("yes" if row["credentials"] else "missing") + f" ({row['credential_source']})"
        name = row["name"] + (" *" if row["default"] else "")
        # names come from settings files a repository may ship: made safe before measuring
        cells.append(tuple(shown(v, sys.stdout, exact=True) for v in (
            name, row["provider"], row["model"], str(row["context_window"] or "-"), priced,
            creds)))
    widths = [max(len(c[i]) for c in cells) for i in range(len(header) - 1)]
    for cell in cells:
        print("  ".join(v.ljust(w) for v, w in zip(cell, widths, strict=False)) + "  " + cell[-1])
    return EXIT_OK
