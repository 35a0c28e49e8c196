"""Which reasoning form a model takes, and what a reasoning level asks for in each.

The forms: ``anthropic-thinking`` (``thinking: {"type": "enabled", "budget_tokens": N}``),
``anthropic-adaptive`` (``thinking: {"type": "adaptive"}`` with ``output_config.effort``,
Claude 4.6 and later; Opus 4.7 accepts nothing else) and ``openai-effort``
(``reasoning_effort``). The catalog's ``reasoning`` capability names the form; an entry that
only says ``true`` (the older boolean) gets it from the model id's prefix, and failing that
the provider's usual form. :func:`reasoning_kind` is the one place that reads it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["EFFORTS", "KINDS", "THINKING_BUDGETS", "level_for_budget", "reasoning_kind",
           "requested_level"]

KINDS = ("anthropic-thinking", "anthropic-adaptive", "openai-effort")

#: Thinking budgets (tokens) per reasoning level, for the budget form.
THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "max": 32768}

#: reasoning level -> ``output_config.effort`` of the adaptive form (the API has no
#: "minimal"; "max" is Opus-only on 4.6, others answer at their highest)
EFFORTS = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "max": "max"}

#: model-id prefixes of the adaptive form (the newest first); other Claude models take a budget
_ADAPTIVE_PREFIXES = ("claude-opus-4-7", "claude-opus-4-6", "claude-sonnet-4-6",
                      "claude-haiku-4-6", "claude-opus-5", "claude-sonnet-5", "claude-haiku-5")
_PROVIDER_KIND = {"anthropic": "anthropic-thinking", "openai": "openai-effort"}


def reasoning_kind(entry: Any) -> str | None:
    """The reasoning form of catalog entry ``entry``, or None when it does not reason (the
    catalog gives one of :data:`KINDS`; ``True``, from an entry built in code, is the form
    :func:`kind_for` its model takes)."""
    declared = getattr(entry, "reasoning", None)
    if isinstance(declared, str):
        return declared if declared in KINDS else None
    if not declared:
        return None
    return kind_for(entry.provider, entry.model)


def kind_for(provider: str, model: str) -> str:
    """The form a model that reasons takes when its entry only says it reasons (settings
    ``"reasoning": true``): by its id, Claude Opus/Sonnet 4.6 and later adaptive, other Claude
    models a budget; else by its wire format (an effort for OpenAI and compatible services)."""
    name = str(model).lower().rpartition("/")[2]  # "anthropic/claude-..." (gateways)
    if name.startswith(_ADAPTIVE_PREFIXES):
        return "anthropic-adaptive"
    if name.startswith("claude-"):
        return "anthropic-thinking"
    return _PROVIDER_KIND.get(provider, "openai-effort")


def requested_level(entry: Any, level: str | None) -> str | None:
    """The level to ask ``entry`` for, or None: only models that reason get one; "off" is
    none."""
    if level is None or level == "off" or reasoning_kind(entry) is None:
        return None
    return level


def level_for_budget(tokens: int) -> str:
    """The reasoning level a thinking budget stands for (``MAX_THINKING_TOKENS``, the SDK's
    ``budget_tokens``): "off" for 0, else the lowest level whose budget covers it."""
    if tokens <= 0:
        return "off"
    for level, budget in THINKING_BUDGETS.items():
        if tokens <= budget:
            return level
    return "max"


def openai_effort(level: str) -> str:
    """OpenAI's reasoning effort for a level (Chat Completions and the Responses API): the
    service's highest is "high", so "max" is sent as that."""
    return "high" if level == "max" else level
