"""``PermissionResultAllow.updated_permissions``: claude-agent-sdk's ``PermissionUpdate``s applied
to a running session and, for the settings destinations, to the settings files.

Every update of an answer is checked first; if one cannot be applied, none is (the call is
then denied with the reason). Types: ``addRules``, ``replaceRules``, ``removeRules`` (with
``behavior`` ``allow``, ``deny`` or ``ask``), ``setMode``, ``addDirectories``,
``removeDirectories``. Destinations: ``session`` (the default; also ``cliArg``) changes this
session only; ``userSettings``, ``projectSettings`` and ``localSettings`` also change the
``permissions`` section of that settings file (the agent dir's ``settings.json``,
``.zpi/settings.json``, ``.zpi/settings.local.json``), rewritten atomically under its lock with
every other key kept as the file has it. In the session, ``replaceRules`` and ``removeRules``
act on the user's rules; the host's own (the spill folder, loaded skills, the allowances of
``acceptEdits``) stay.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from ..support.attrs_methods import FieldsEq

if TYPE_CHECKING:
    from ..permissions import PermissionPolicy, Rule
    from ..settings.manager import Scope, SettingsManager

__all__ = ["DESTINATIONS", "UPDATE_TYPES", "PermissionUpdateError", "apply_updates"]

RULE_UPDATES = ("addRules", "replaceRules", "removeRules")
DIRECTORY_UPDATES = ("addDirectories", "removeDirectories")
UPDATE_TYPES = (*RULE_UPDATES, "setMode", *DIRECTORY_UPDATES)
#: destination -> settings scope (None: the session only)
DESTINATIONS: Mapping[str, Scope | None] = {
    "session": None, "cliArg": None, "userSettings": "user", "projectSettings": "project",
    "localSettings": "local",
}
BEHAVIORS = ("allow", "deny", "ask")
#: Claude's modes as the settings files can hold them (acceptEdits and dontAsk cannot)
SETTINGS_MODES = {"default": "ask", "plan": "plan", "bypassPermissions": "bypass"}
#: rules the host adds itself: never replaced or removed by an update
HOST_RULE_SOURCES = ("spill folder", "loaded skills", "permission mode acceptEdits")
SOURCE = "can_use_tool update"


class PermissionUpdateError(ValueError):
    """An update that cannot be applied; the message says which and why."""


@attrs.define(repr=False, eq=False, slots=False)
class _Plan(FieldsEq):
    """What the updates will do, computed before anything changes."""

    rules: dict[str, list[Rule]]
    extra: list[Path]
    mode: str | None = None
    files: dict[Scope, list[Callable[[dict[str, Any]], None]]] = attrs.field(factory=dict)


def _field(update: Any, name: str, camel: str | None = None) -> Any:
    if isinstance(update, Mapping):
        return update.get(name, update.get(camel) if camel else None)
    return getattr(update, name, None)


def _rule_texts(update: Any, where: str) -> list[str]:
    rules = _field(update, "rules")
    if isinstance(rules, str | bytes) or not isinstance(rules, Sequence):
        raise PermissionUpdateError(f"{where}: rules must be a list of PermissionRuleValue, "
                                    f"got {rules!r:.100}")
    texts = []
    for rule in rules:
        name = _field(rule, "tool_name", "toolName")
        content = _field(rule, "rule_content", "ruleContent")
        if not isinstance(name, str) or not name or not isinstance(content, str | None):
            raise PermissionUpdateError(f"{where}: a rule needs a tool_name (and an optional "
                                        f"rule_content string), got {rule!r:.100}")
        texts.append(name if content is None else f"{name}({content})")
    return texts


def _user_rule(rule: Rule) -> bool:
    return rule.source not in HOST_RULE_SOURCES


def _plan_rules(plan: _Plan, kind: str, behavior: str, texts: list[str], where: str) -> None:
    from ..permissions import PermissionRuleError, parse_rule

    try:
        parsed = [parse_rule(t, source=SOURCE) for t in texts]
    except PermissionRuleError as exc:
        raise PermissionUpdateError(f"{where}: {exc}") from None
    current = plan.rules[behavior]
    if kind == "addRules":
        current.extend(r for r in parsed if r not in current)
    elif kind == "removeRules":
        current[:] = [r for r in current if not (_user_rule(r) and r in parsed)]
    else:
        current[:] = [r for r in current if not _user_rule(r)] + parsed


def _file_rules(kind: str, behavior: str, texts: list[str]) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        section = _section(data)
        listed = section.get(behavior, [])
        if not isinstance(listed, list):
            raise PermissionUpdateError(f"permissions.{behavior} is not a list in the file")
        if kind == "addRules":
            section[behavior] = listed + [t for t in texts if t not in listed]
        elif kind == "removeRules":
            section[behavior] = [t for t in listed if t not in texts]
        else:
            section[behavior] = list(texts)

    return change


def _file_directories(kind: str, dirs: list[Path]) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        section = _section(data)
        listed = section.get("additional_directories", [])
        if not isinstance(listed, list):
            raise PermissionUpdateError("permissions.additional_directories is not a list in "
                                        "the file")
        names = [str(d) for d in dirs]
        section["additional_directories"] = (
            listed + [n for n in names if n not in listed] if kind == "addDirectories"
            else [n for n in listed if n not in names])

    return change


def _file_mode(mode: str) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        _section(data)["mode"] = mode

    return change


def _section(data: dict[str, Any]) -> dict[str, Any]:
    section = data.setdefault("permissions", {})
    if not isinstance(section, dict):
        raise PermissionUpdateError("the file's permissions is not an object")
    return section


def _plan(updates: Sequence[Any], policy: PermissionPolicy, modes: Sequence[str]) -> _Plan:
    from ..permissions import PermissionConfigError
    from ..permissions.paths import check_directories, resolve

    plan = _Plan({b: list(policy.rules.of(b)) for b in BEHAVIORS},  # type: ignore[arg-type]
                 list(policy.roots.extra))
    for index, update in enumerate(updates):
        kind = _field(update, "type")
        where = f"updated_permissions[{index}] ({kind!r})"
        destination = _field(update, "destination") or "session"
        if kind not in UPDATE_TYPES:
            raise PermissionUpdateError(f"{where}: unknown type; use one of "
                                        f"{', '.join(UPDATE_TYPES)}")
        if destination not in DESTINATIONS:
            raise PermissionUpdateError(f"{where}: unknown destination {destination!r}; use "
                                        f"one of {', '.join(DESTINATIONS)}")
        scope = DESTINATIONS[destination]
        changes = plan.files.setdefault(scope, []) if scope is not None else []
        if kind in RULE_UPDATES:
            behavior = _field(update, "behavior") or "allow"
            if behavior not in BEHAVIORS:
                raise PermissionUpdateError(f"{where}: behavior {behavior!r} is not one of "
                                            f"{', '.join(BEHAVIORS)}")
            texts = _rule_texts(update, where)
            _plan_rules(plan, kind, behavior, texts, where)
            changes.append(_file_rules(kind, behavior, texts))
        elif kind == "setMode":
            mode = _field(update, "mode")
            if mode not in modes:
                raise PermissionUpdateError(f"{where}: mode {mode!r} is not one of "
                                            f"{', '.join(modes)}")
            if scope is not None:
                if mode not in SETTINGS_MODES:
                    raise PermissionUpdateError(
                        f"{where}: mode {mode!r} cannot be kept in a settings file (it holds "
                        f"{', '.join(SETTINGS_MODES)}); use destination 'session'")
                if mode == "bypassPermissions" and scope != "user":
                    raise PermissionUpdateError(
                        f"{where}: a project's settings may not choose bypassPermissions "
                        "(the host ignores it there); use userSettings or 'session'")
                changes.append(_file_mode(SETTINGS_MODES[mode]))
            plan.mode = mode
        else:
            raw = _field(update, "directories")
            if isinstance(raw, str | bytes) or not isinstance(raw, Sequence) or not raw or \
                    not all(isinstance(d, str) and d for d in raw):
                raise PermissionUpdateError(f"{where}: directories must be a non-empty list of "
                                            f"paths, got {raw!r:.100}")
            try:
                dirs = check_directories(raw, policy.cwd, f"{where} directories")
            except PermissionConfigError as exc:
                if kind == "addDirectories":
                    raise PermissionUpdateError(str(exc)) from None
                dirs = [Path(policy.cwd, d) for d in raw]  # a removed one may be gone
            if kind == "addDirectories":
                plan.extra.extend(d for d in dirs if d not in plan.extra)
            else:
                real = {resolve(d, policy.cwd) for d in dirs}
                if resolve(policy.cwd, policy.cwd) in real:
                    raise PermissionUpdateError(f"{where}: the working directory "
                                                f"{policy.cwd} cannot be removed")
                plan.extra = [d for d in plan.extra if resolve(d, policy.cwd) not in real]
            changes.append(_file_directories(kind, dirs))
    return plan


def apply_updates(updates: Sequence[Any], policy: PermissionPolicy,
                  settings: SettingsManager | None, set_mode: Callable[[str], None],
                  modes: Sequence[str]) -> None:
    """Apply ``updates`` to the session's ``policy`` (and the settings files of their
    destinations), all or none; :class:`PermissionUpdateError` says why not.
    ``set_mode`` takes Claude's mode names (``modes``)."""
    from ..errors import ZpiError
    from ..permissions import PermissionRuleError, PermissionRules
    from ..permissions.paths import WorkspaceRoots

    plan = _plan(updates, policy, modes)
    rules = PermissionRules(plan.rules["allow"], plan.rules["deny"], plan.rules["ask"])
    try:
        rules.validate()
    except PermissionRuleError as exc:
        raise PermissionUpdateError(str(exc)) from None
    if plan.files and (settings is None or settings.in_memory_only):
        raise PermissionUpdateError("this session's settings were given in memory (the "
                                    "settings option), so there is no settings file to "
                                    "update; use destination 'session'")
    for scope, changes in plan.files.items():
        assert settings is not None

        def change_all(data: dict[str, Any], changes: list[Any] = changes) -> None:
            for change in changes:
                change(data)

        try:
            settings.edit(scope, change_all)
        except (OSError, ValueError, ZpiError) as exc:  # a broken file is never overwritten
            raise PermissionUpdateError(f"cannot update {settings.path(scope)}: {exc}") \
                from None
    for behavior in BEHAVIORS:
        policy.rules.of(behavior)[:] = plan.rules[behavior]  # type: ignore[arg-type]
    if plan.extra != list(policy.roots.extra):
        policy.roots = WorkspaceRoots(policy.roots.cwd, tuple(plan.extra))
    if plan.mode is not None:
        set_mode(plan.mode)
