"""What hooks answer, and the documented rules that combine several plugins' answers.

Each answer type is a frozen attrs class with named constructors (``ToolDecision.deny(...)``)
so that plugins write intent, not dictionaries. The ``combine_*`` functions are the single
place where the rules of ``hookspecs.py`` ("deny > ask > allow", "any cancel wins" ...) live.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal

import attrs

from ..errors import HookAnswerError
from ..support.attrs_methods import FrozenFieldsEq
from .attributed import Attributed

__all__ = ["Behavior", "CombinedCompactDecision", "CombinedPromptDecision", "CombinedResultPatch",
           "CombinedStopDecision", "CombinedToolDecision", "CompactDecision", "Instruction",
           "PromptDecision", "StopDecision", "ToolDecision", "ToolResultPatch", "answer_problem",
           "check_answer", "closed_answer", "collect_instructions", "collect_texts",
           "combine_compact_decisions", "combine_prompt_decisions", "combine_result_patches",
           "combine_stop_decisions", "combine_tool_decisions", "merge_options"]

Behavior = Literal["allow", "ask", "deny"]
_RANK: dict[str, int] = {"allow": 0, "ask": 1, "deny": 2}


@attrs.frozen(repr=False, eq=False, slots=False)
class Instruction(FrozenFieldsEq):
    """One fragment of the system prompt; ``source`` is filled in by the host."""

    text: str
    title: str | None = None
    source: str | None = None


# ---------------------------------------------------------------------------------------------
# Combined results of the prompt and stop hooks
# ---------------------------------------------------------------------------------------------


@attrs.frozen(repr=False, eq=False, slots=False)
class CombinedPromptDecision(FrozenFieldsEq):
    blocked: bool
    reasons: tuple[Attributed, ...] = ()
    contexts: tuple[Attributed, ...] = ()


@attrs.frozen(repr=False, eq=False, slots=False)
class CombinedStopDecision(FrozenFieldsEq):
    continue_with: str | None
    reasons: tuple[Attributed, ...] = ()




def closed_answer(hook: str, plugin: str, reason: str) -> Any:
    """The combined answer of a guarding hook whose implementation failed under ``fail-closed``
    (the table ``hookrunner.CLOSED_ANSWERS`` documents it)."""
    why = Attributed(plugin, reason)
    if hook in ("zpi_before_tool", "zpi_permission_request"):
        return CombinedToolDecision("deny", (why,))
    if hook == "zpi_user_prompt":
        return CombinedPromptDecision(True, (why,))
    if hook == "zpi_after_tool":
        return CombinedResultPatch(f"[the tool's output was withheld: {reason}]")
    if hook in ("zpi_stop", "zpi_subagent_stop"):
        return CombinedStopDecision(None)
    if hook == "zpi_before_compact":
        return CombinedCompactDecision(True, reason)
    raise KeyError(f"{hook} guards no action, so it has no closed answer")


# ---------------------------------------------------------------------------------------------
# Validation of single answers (before they are combined, so that a bad answer is attributed to
# its plugin and handled by that plugin's error policy)
# ---------------------------------------------------------------------------------------------

_OPTIONAL_TEXT: tuple[type, ...] = (str, type(None))


@attrs.frozen(repr=False, eq=False, slots=False)
class ToolDecision(FrozenFieldsEq):
    """A plugin's verdict on one tool call. ``behavior`` None (:meth:`context_only`): no
    verdict, only context for the model, which reaches it with the call's result however the
    call is then decided."""

    behavior: Behavior | None
    reason: str | None = None
    updated_input: Mapping[str, Any] | None = None
    context: str | None = None

    @classmethod
    def allow(cls, reason: str | None = None, *, updated_input: Mapping[str, Any] | None = None,
              context: str | None = None) -> ToolDecision:
        return cls("allow", reason, updated_input, context)

    @classmethod
    def ask(cls, reason: str | None = None, *, context: str | None = None) -> ToolDecision:
        return cls("ask", reason, None, context)

    @classmethod
    def deny(cls, reason: str, *, context: str | None = None) -> ToolDecision:
        return cls("deny", reason, None, context)

    @classmethod
    def context_only(cls, context: str) -> ToolDecision:
        return cls(None, None, None, context)


@attrs.frozen(repr=False, eq=False, slots=False)
class PromptDecision(FrozenFieldsEq):
    """Answer to a user prompt: block it (reason shown to the user) and/or add context."""

    block: bool = False
    reason: str | None = None
    context: str | None = None


@attrs.frozen(repr=False, eq=False, slots=False)
class ToolResultPatch(FrozenFieldsEq):
    """Answer after a successful tool call: add context and/or replace what the model sees."""

    context: str | None = None
    content: str | None = None


@attrs.frozen(repr=False, eq=False, slots=False)
class StopDecision(FrozenFieldsEq):
    """Answer when the agent would stop: ``continue_with`` becomes the next user input."""

    continue_with: str


@attrs.frozen(repr=False, eq=False, slots=False)
class CompactDecision(FrozenFieldsEq):
    """Answer before compaction: cancel it, or supply the summary instead of the model."""

    cancel: bool = False
    reason: str | None = None
    summary: str | None = None


@attrs.frozen(repr=False, eq=False, slots=False)
class CombinedToolDecision(FrozenFieldsEq):
    """The outcome of ``zpi_before_tool`` / ``zpi_permission_request`` over all plugins."""

    behavior: Behavior | None
    reasons: tuple[Attributed, ...] = ()
    updated_input: Mapping[str, Any] | None = None
    contexts: tuple[Attributed, ...] = ()

    @property
    def reason(self) -> str | None:
        return "; ".join(a.value for a in self.reasons) or None


@attrs.frozen(repr=False, eq=False, slots=False)
class CombinedResultPatch(FrozenFieldsEq):
    content: str | None = None
    contexts: tuple[Attributed, ...] = ()


@attrs.frozen(repr=False, eq=False, slots=False)
class CombinedCompactDecision(FrozenFieldsEq):
    cancel: bool
    reason: str | None = None
    summary: str | None = None
    summary_from: str | None = None


#: Each answer type here: its fields and the types each may hold.
FIELDS: dict[type, dict[str, tuple[type, ...]]] = {
    ToolDecision: {"behavior": (str, type(None)), "reason": _OPTIONAL_TEXT,
                   "updated_input": (Mapping, type(None)), "context": _OPTIONAL_TEXT},
    PromptDecision: {"block": (bool,), "reason": _OPTIONAL_TEXT, "context": _OPTIONAL_TEXT},
    ToolResultPatch: {"context": _OPTIONAL_TEXT, "content": _OPTIONAL_TEXT},
    StopDecision: {"continue_with": (str,)},
    CompactDecision: {"cancel": (bool,), "reason": _OPTIONAL_TEXT, "summary": _OPTIONAL_TEXT},
}

#: Instruction's fields and the types each may hold (the other answer types' are in
#: ``FIELDS``)
_INSTRUCTION_FIELDS: dict[str, tuple[type, ...]] = {
    "text": (str,), "title": _OPTIONAL_TEXT, "source": _OPTIONAL_TEXT}

#: What each decision hook accepts besides ``None``
_ACCEPTS: dict[str, tuple[type, ...]] = {
    "zpi_before_tool": (ToolDecision,),
    "zpi_permission_request": (ToolDecision,),
    "zpi_user_prompt": (PromptDecision, str),
    "zpi_after_tool": (ToolResultPatch, str),
    "zpi_stop": (StopDecision,),
    "zpi_subagent_stop": (StopDecision,),
    "zpi_before_compact": (CompactDecision,),
}


def _answer_fields() -> Iterator[tuple[type, dict[str, tuple[type, ...]]]]:
    """Each answer type with its fields and the types each may hold."""
    yield from FIELDS.items()
    yield Instruction, _INSTRUCTION_FIELDS


def _accepted(hook: str) -> tuple[type, ...] | None:
    """What the decision hook ``hook`` accepts besides ``None`` (None: not a decision hook)."""
    return _ACCEPTS.get(hook)


_TEXT_HOOKS = frozenset({"zpi_session_start", "zpi_tool_failed", "zpi_unknown_tool",
                         "zpi_subagent_start"})


def _names(types: Sequence[type]) -> str:
    return " or ".join("None" if t is type(None) else t.__name__ for t in types)


def _field_problem(value: Any) -> str | None:
    """A field of an answer object holding the wrong type (attrs does not check types)."""
    answer: Any = value
    for cls, fields in _answer_fields():
        if isinstance(value, cls):
            for name, types in fields.items():
                field = getattr(value, name)
                if not isinstance(field, types):
                    return (f"{cls.__name__}.{name} must be {_names(types)}, got "
                            f"{type(field).__name__}: {field!r:.100}")
            if _is_tool_decision(answer) and answer.behavior is None and (
                    answer.reason is not None or answer.updated_input is not None):
                return ("a ToolDecision without behavior carries only context; use "
                        "ToolDecision.allow, .ask or .deny for a reason or updated_input")
            if _is_tool_decision(answer) and answer.behavior not in (*_RANK, None):
                return (f"unknown behavior {answer.behavior!r}; use ToolDecision.allow, "
                        ".ask, .deny or .context_only")
    return None


def _is_tool_decision(value: Any) -> bool:
    return isinstance(value, ToolDecision)


def _wrong_type(value: Any, accepts: Sequence[type]) -> str:
    problem = f"expected {_names(accepts)} or None, got {type(value).__name__}: {value!r:.200}"
    fields = dict(_answer_fields())
    answer_types = [t for t in accepts if t in fields]
    if isinstance(value, Mapping) and answer_types:
        cls = answer_types[0]
        unknown = sorted(str(k) for k in value if k not in fields[cls])
        problem += (f"; dictionaries are not answers, build a {cls.__name__} instead"
                    + (f" (it has no field {', '.join(map(repr, unknown))})" if unknown else ""))
    return problem


def answer_problem(hook: str, value: Any) -> str | None:
    """What is wrong with one non-None answer to a decision, text or options hook (None when it
    is fine). Registration, observer and prompt hooks are checked by ``hookrunner``; instruction
    fragments by :func:`collect_instructions`."""
    accepts = _accepted(hook)
    if accepts is not None:
        if not isinstance(value, accepts):
            return _wrong_type(value, accepts)
        return _field_problem(value)
    if hook in _TEXT_HOOKS:
        items = [value] if isinstance(value, str) else value
        if isinstance(value, bytes) or not isinstance(items, Sequence) or not all(
            isinstance(i, str) for i in items
        ):
            return f"expected a string or a list of strings, got {value!r:.200}"
        return None
    if hook == "zpi_request_options":
        if not isinstance(value, Mapping):
            return f"expected a mapping or None, got {type(value).__name__}: {value!r:.200}"
        bad = [k for k in value if not isinstance(k, str) or not k]
        if bad:
            return f"option names must be non-empty strings, got {bad[0]!r}"
        return None
    return None


def check_answer(hook: str, plugin: str, value: Any) -> Any:
    """``value`` when it is a valid answer to ``hook``; HookAnswerError naming the plugin and
    the hook otherwise."""
    problem = answer_problem(hook, value)
    if problem is not None:
        raise HookAnswerError(plugin, hook, problem)
    return value


def _expect(answer: Attributed, hook: str, *types: type) -> Any:
    if not isinstance(answer.value, types):
        names = " or ".join(t.__name__ for t in types)
        raise HookAnswerError(
            answer.plugin, hook,
            f"expected {names} or None, got {type(answer.value).__name__}: {answer.value!r:.200}",
        )
    return answer.value


def combine_tool_decisions(
    answers: Sequence[Attributed], hook: str = "zpi_before_tool"
) -> CombinedToolDecision:
    """deny > ask > allow; reasons of the winning kind joined; last ``updated_input`` wins."""
    behavior: Behavior | None = None
    reasons: list[Attributed] = []
    contexts: list[Attributed] = []
    updated: Mapping[str, Any] | None = None
    for answer in answers:
        decision: ToolDecision = _expect(answer, hook, ToolDecision)
        if decision.behavior not in (*_RANK, None):
            raise HookAnswerError(answer.plugin, hook, f"unknown behavior {decision.behavior!r}")
        if decision.context:
            contexts.append(Attributed(answer.plugin, decision.context))
        if decision.behavior is None:  # context only
            continue
        if decision.updated_input is not None:
            if not isinstance(decision.updated_input, Mapping):
                raise HookAnswerError(answer.plugin, hook, "updated_input must be a mapping")
            updated = decision.updated_input
        if behavior is None or _RANK[decision.behavior] > _RANK[behavior]:
            behavior = decision.behavior
            reasons = []
        if decision.behavior == behavior and decision.reason:
            reasons.append(Attributed(answer.plugin, decision.reason))
    if behavior == "deny":
        updated = None
    return CombinedToolDecision(behavior, tuple(reasons), updated, tuple(contexts))


def combine_prompt_decisions(answers: Sequence[Attributed]) -> CombinedPromptDecision:
    """Any block wins (reasons joined); context strings and decision contexts kept in order."""
    blocked = False
    reasons: list[Attributed] = []
    contexts: list[Attributed] = []
    for answer in answers:
        value = _expect(answer, "zpi_user_prompt", PromptDecision, str)
        if isinstance(value, str):
            contexts.append(answer)
            continue
        if value.block:
            blocked = True
            if value.reason:
                reasons.append(Attributed(answer.plugin, value.reason))
        if value.context:
            contexts.append(Attributed(answer.plugin, value.context))
    return CombinedPromptDecision(blocked, tuple(reasons), tuple(contexts))


def combine_result_patches(answers: Sequence[Attributed]) -> CombinedResultPatch:
    """Patches apply in call order: a later replacement replaces an earlier one."""
    content: str | None = None
    contexts: list[Attributed] = []
    for answer in answers:
        value = _expect(answer, "zpi_after_tool", ToolResultPatch, str)
        if isinstance(value, str):
            contexts.append(answer)
            continue
        if value.content is not None:
            content = value.content
        if value.context:
            contexts.append(Attributed(answer.plugin, value.context))
    return CombinedResultPatch(content, tuple(contexts))


def combine_stop_decisions(
    answers: Sequence[Attributed], hook: str = "zpi_stop"
) -> CombinedStopDecision:
    """Any continue wins; reasons joined in call order into the next user input."""
    reasons = [Attributed(a.plugin, _expect(a, hook, StopDecision).continue_with)
               for a in answers]
    text = "\n\n".join(r.value for r in reasons if r.value) or None
    return CombinedStopDecision(text, tuple(reasons))


def combine_compact_decisions(answers: Sequence[Attributed]) -> CombinedCompactDecision:
    """Any cancel wins (reasons joined); otherwise the first supplied summary is used."""
    cancel_reasons: list[str] = []
    cancelled = False
    summary: str | None = None
    summary_from: str | None = None
    for answer in answers:
        value: CompactDecision = _expect(answer, "zpi_before_compact", CompactDecision)
        if value.cancel:
            cancelled = True
            if value.reason:
                cancel_reasons.append(value.reason)
        elif value.summary is not None and summary is None:
            summary, summary_from = value.summary, answer.plugin
    if cancelled:
        return CombinedCompactDecision(True, "; ".join(cancel_reasons) or None)
    return CombinedCompactDecision(False, None, summary, summary_from)


def collect_texts(answers: Sequence[Attributed], hook: str) -> tuple[Attributed, ...]:
    """Context hooks: each answer is a string or a sequence of strings, kept in call order."""
    out: list[Attributed] = []
    for answer in answers:
        value = answer.value
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, Sequence) or not all(isinstance(i, str) for i in items):
            raise HookAnswerError(
                answer.plugin, hook, f"expected a string or a list of strings, got {value!r:.200}"
            )
        out.extend(Attributed(answer.plugin, text) for text in items if text)
    return tuple(out)


def merge_options(
    answers: Sequence[Attributed], report: Callable[[HookAnswerError], None]
) -> dict[str, Any]:
    """``zpi_request_options``: mappings merged in call order, later keys win; an answer that
    is not a mapping is reported through ``report`` and skipped."""
    merged: dict[str, Any] = {}
    for answer in answers:
        try:
            merged.update(_expect(answer, "zpi_request_options", Mapping))
        except HookAnswerError as exc:
            report(exc)
    return merged


def collect_instructions(
    answers: Sequence[Attributed], report: Callable[[HookAnswerError], None]
) -> tuple[Instruction, ...]:
    """``zpi_instructions``: strings and Instructions, attributed; bad fragments are reported
    through ``report`` and dropped, the plugin's valid fragments are kept."""
    out: list[Instruction] = []
    for answer in answers:
        value = answer.value
        items = [value] if isinstance(value, str | Instruction) else value
        if isinstance(value, bytes) or not isinstance(items, Sequence):
            report(HookAnswerError(
                answer.plugin, "zpi_instructions",
                f"expected a str, an Instruction or a list of them, got {value!r:.200}",
            ))
            continue
        for item in items:
            if isinstance(item, str):
                item = Instruction(item)
            if not isinstance(item, Instruction):
                report(HookAnswerError(
                    answer.plugin, "zpi_instructions",
                    f"each fragment must be a str or Instruction, got {item!r:.200}",
                ))
            elif (problem := _field_problem(item)) is not None:
                report(HookAnswerError(answer.plugin, "zpi_instructions", problem))
            elif not item.text.strip():
                report(HookAnswerError(answer.plugin, "zpi_instructions", "empty fragment"))
            else:
                out.append(attrs.evolve(item, source=answer.plugin))
    return tuple(out)
