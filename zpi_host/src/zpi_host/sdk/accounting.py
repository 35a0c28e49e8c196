"""Usage, cost and budget in claude-agent-sdk's shapes, from the session's own counters.

``usage`` of a result is the input's own main-loop usage (the kernel's ``RunResult.usage``);
``total_cost_usd`` and ``model_usage`` are the session's totals when the result is sent, keyed
``provider/model``. An unpriced model costs 0 and is flagged (``unpriced: true``). The budget
counts only the current query's new spend and is checked before each model request
(``agent/spend.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..agent.context_usage import ContextUsage
    from ..agent.spend import SpendLedger
    from ..providers.messages import Usage
    from ..session.agent_session import AgentSession

__all__ = ["Budget", "context_usage_dict", "model_usage", "restore_totals", "usage_dict"]


def usage_dict(usage: Usage) -> dict[str, int]:
    """Token counts with the Anthropic API's key names."""
    return {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
            "cache_read_input_tokens": usage.cache_read_tokens,
            "cache_creation_input_tokens": usage.cache_write_tokens}


def model_usage(session: AgentSession) -> dict[str, dict[str, Any]]:
    """The session's usage per model (``provider/model``) in claude-agent-sdk's ``ModelUsage``
    shape; ``unpriced`` marks a model the catalog has no price for (its cost counts as 0)."""
    entry = session.model_entry
    out: dict[str, dict[str, Any]] = {}
    for key, usage in session.model_usage.items():
        current = entry is not None and key == f"{session.provider.name}/{session.provider.model}"
        out[key] = {
            "inputTokens": usage.input_tokens, "outputTokens": usage.output_tokens,
            "cacheReadInputTokens": usage.cache_read_tokens,
            "cacheCreationInputTokens": usage.cache_write_tokens,
            "webSearchRequests": 0,
            "costUSD": session.model_cost_usd.get(key, 0.0),
            "contextWindow": (entry.context_window or 0) if current and entry else 0,
            "maxOutputTokens": (entry.max_output or 0) if current and entry else 0,
            "unpriced": key in session.unpriced_models,
        }
    return out


def restore_totals(session: AgentSession) -> None:
    """A resumed session's totals from its transcript: every recorded answer's usage (all
    branches: what was spent stays spent) and each sub-agent's usage from its ``stop`` record
    (the one record of a child's spend; see ``subagents.recorded_usage``), priced by the
    catalog of the session's settings. Call it before the first run."""
    from ..session.subagents import recorded_usage
    from ..transcript import AssistantRecord

    prices: dict[str, Any] = {}
    records = session.store.records  # once: a compacted session's are read from its file
    for record in records:
        if isinstance(record, AssistantRecord):
            message = record.message
            _add_spend(session, message.provider, message.model, message.usage, prices)
    for key, usage in recorded_usage(session.store, records):
        provider, _, model = key.partition("/")
        _add_spend(session, provider, model, usage, prices)


def _add_spend(session: AgentSession, provider: str, model: str, usage: Usage,
               prices: dict[str, Any]) -> None:
    """Add one recorded usage to the session's totals, priced once per model."""
    from ..providers.catalog import cost, resolve_model
    from ..providers.messages import Usage

    key = f"{provider}/{model}"
    session.usage = session.usage + usage
    session.model_usage[key] = session.model_usage.get(key, Usage()) + usage
    if provider == "scripted":
        return
    if key not in prices:
        try:
            prices[key] = resolve_model(f"{provider}:{model}", session.settings).price
        except Exception:  # a model the catalog no longer knows: unpriced
            prices[key] = None
    amount = cost(usage, prices[key])
    if amount is None:
        session.unpriced_models.add(key)
        amount = 0.0
    session.model_cost_usd[key] = session.model_cost_usd.get(key, 0.0) + amount


class Budget:
    """``max_budget_usd`` for one query or client connection, kept by the session tree's
    spend ledger (``agent/spend.py``): the spend since the first input of the session, its
    sub-agents and its tools' side requests is checked before each of their requests; the
    overrun is bounded by the requests in flight when it ran out. Later inputs (streamed
    ones, or ``client.query`` again) do not reset it, as claude-agent-sdk's."""

    def __init__(self, limit: float | None) -> None:
        self.limit = limit
        self._ledger: SpendLedger | None = None

    def start(self, session: AgentSession) -> None:
        """Start counting at the first input (later calls keep counting); refuses a budget
        on a model the catalog has no price for: it could not be kept."""
        if self._ledger is not None:
            return
        entry = session.model_entry
        if self.limit is not None and entry is not None and entry.provider != "scripted" and \
                (entry.price is None or not entry.price.known()):
            from ..errors import UsageError, docs_url

            raise UsageError(
                f"max_budget_usd={self.limit:g} cannot be kept: the model {entry.name!r} has no "
                f"price in the catalog (set models.{entry.name}.price.input and .output in "
                f"settings.json, see {docs_url('models')}), so its spend would count as $0")
        self._ledger = session.spend
        self._ledger.start(self.limit)

    @property
    def exceeded(self) -> bool:
        """A request was refused because the limit was reached."""
        return self._ledger is not None and self._ledger.exhausted

    def spent(self, session: AgentSession) -> float:
        return session.spend.spent()


def context_usage_dict(usage: ContextUsage, model: str) -> dict[str, Any]:
    """``get_context_usage()``'s answer: provider-measured and estimated figures apart; a
    category that cannot be counted has ``tokens`` None, never a guess."""
    categories = [{"name": name, "tokens": c.tokens, "estimated": c.estimated}
                  for name, c in usage.categories.items()]
    window = usage.context_window
    total = usage.total_tokens
    return {
        "categories": categories,
        "totalTokens": total,
        "maxTokens": window,
        "percentage": (100.0 * total / window) if total is not None and window else None,
        "model": model,
        "estimated": usage.estimated,
        "reportedInputTokens": usage.last_reported_input_tokens,
    }
