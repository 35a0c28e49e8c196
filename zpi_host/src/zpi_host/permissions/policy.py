"""PermissionPolicy: one session's answer to "may this call run?".

Evaluation order (docs/permissions.md says the same):

1. hooks: a hook ``deny`` denies; a hook ``ask`` goes to the approver (step 6) unless a deny
   rule stops the call first; a hook ``allow`` skips the mode and workspace checks;
2. deny rules, in every mode;
3. ask rules (not in ``bypass``): the call goes to the approver;
4. the mode and the workspace check of paths;
5. allow rules turn an ``ask`` of step 4 into allow (a path outside the workspace only by a
   rule that names it);
6. an ``ask`` left goes to ``zpi_permission_request`` hooks, then the ``can_use_tool``
   callback (or the terminal when interactive); with neither it is a denial that says so.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from ..fs.nofollow import UnusablePathError
from ..support.attrs_methods import FieldsEq, FrozenFieldsEq
from . import matching, paths
from .modes import MODES, PermissionMode, Source
from .rules import (
    PREFIX_OF,
    Dimension,
    PermissionConfigError,
    PermissionRuleError,
    PermissionRules,
    Rule,
    parse_rule,
)

if TYPE_CHECKING:  # the verdict and approver classes are imported when a call is checked
    from .results import CanUseTool, PermissionContext, PermissionResult

NO_APPROVER = ("needs approval and no approver is configured (pass can_use_tool or use "
               "--allow RULE)")
PERMISSION_KEYS = ("mode", "allow", "deny", "ask", "additional_directories")

NoApproverHint = Callable[["PermissionContext"], str]
"""``context -> text``: how to allow a call that needs approval when nobody can be asked, in
the words of the front end (the CLI names its flags); it replaces :data:`NO_APPROVER`."""

AskHook = Callable[[str], Any]
"""``reason -> decision``: asked before the approver; the lead passes a call of
``zpi_permission_request``. An answer with ``behavior`` ``allow`` or ``deny`` settles it."""


def check_mode(value: object, where: str) -> PermissionMode:
    """``value`` as a mode, or PermissionConfigError naming ``where`` it came from."""
    for mode in MODES:
        if value == mode:
            return mode
    raise PermissionConfigError(f"{where}: unknown permission mode {value!r}; use one of "
                                f"{', '.join(MODES)}")


@attrs.frozen(repr=False, eq=False, slots=False)
class _Ask(FrozenFieldsEq):
    """A reason to ask. Asks from the mode and the workspace check may be lifted by allow
    rules; asks from hooks and ask rules go to the approver."""

    source: Source
    reason: str
    paths: tuple[Path, ...] = ()


def _allow(source: Source, reason: str, updated: Mapping[str, Any] | None = None
           ) -> PermissionResult:
    return _verdict()("allow", reason, source, updated)


def _deny(source: Source, reason: str, interrupt: bool = False, worded: str | None = None
          ) -> PermissionResult:
    return _verdict()("deny", reason, source, None, interrupt, worded=worded)


@functools.cache
def _verdict() -> type[PermissionResult]:
    """``results.PermissionResult``: imported when the first call is checked (start-up does
    not build its attrs classes), then looked up once rather than imported on every call."""
    from .results import PermissionResult

    return PermissionResult


def _unseen(rule: Rule, name: str, args: Mapping[str, Any]) -> str:
    """Why a shell rule matched a command it could not fully see, for the reason; or ""."""
    key = matching.COMMAND_ARGUMENTS.get(name)
    command = args.get(key) if key is not None else None
    if rule.argument is None or not isinstance(command, str):
        return ""
    return matching.unseen_note(rule.argument, command)


def _has_side_effects(tool: Any, args: Mapping[str, Any]) -> bool:
    """Whether this call of ``tool`` may change things (``reads_only(args)``, else the tool's
    ``metadata.read_only``)."""
    reads_only = getattr(tool, "reads_only", None)
    return not (reads_only(args) if callable(reads_only) else
                getattr(getattr(tool, "metadata", None), "read_only", False))


def _change_of(tool: Any, args: Mapping[str, Any], judged: Sequence[paths.JudgedPath]) -> str:
    """What the call would change, for the approver (a write's or an edit's diff), or ""."""
    describe = getattr(tool, "describe_change", None)
    if not callable(describe) or not judged:
        return ""
    return str(describe(args, judged[0].real))


def _mapping(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, Mapping):
        return dict(arguments)
    if attrs.has(type(arguments)):
        return attrs.asdict(arguments)
    return {}


@attrs.define(repr=False, eq=False, slots=False)
class PermissionPolicy(FieldsEq):
    """Modes, rules, workspace roots and the approver of one session.

    ``interactive``: with no ``can_use_tool``, ask the person at the terminal (stdin/stderr)."""

    mode: PermissionMode = attrs.field(
        default="default", validator=lambda _s, _a, v: check_mode(v, "permission mode"))
    rules: PermissionRules = attrs.field(factory=PermissionRules)
    roots: paths.WorkspaceRoots = attrs.field(factory=lambda: paths.WorkspaceRoots(Path.cwd()))
    can_use_tool: CanUseTool | None = None
    interactive: bool = False
    no_approver_hint: NoApproverHint | None = None
    _terminal: CanUseTool | None = attrs.field(default=None, init=False, repr=False)

    @property
    def cwd(self) -> Path:
        return self.roots.cwd

    def granting(self, allow: Sequence[str], source: str) -> PermissionPolicy:
        """A copy that also allows what the rules ``allow`` name (a command's
        ``allowed-tools`` for its own shell blocks): deny and ask rules, the mode's refusals
        (``plan``) and hooks still apply. A rule that does not parse raises
        :class:`PermissionRuleError` naming ``source``."""
        rules = PermissionRules(list(self.rules.allow), list(self.rules.deny),
                                list(self.rules.ask))
        for i, text in enumerate(allow):
            rules.add("allow", parse_rule(text, source=f"{source}[{i}]"))
        return attrs.evolve(self, rules=rules)

    async def check(self, tool: Any, call: Any, arguments: Any = None, hook: Any = None, *,
                    ask_hook: AskHook | None = None,
                    notify: Callable[[PermissionContext], Any] | None = None,
                    ) -> PermissionResult:
        """Decide one tool call.

        ``tool``: the Tool (``name``, ``metadata.read_only``); ``call``: the ToolCall (``id``,
        ``arguments``); ``arguments``: the input that will run when a hook replaced it
        (default ``call.arguments``); ``hook``: the combined ``zpi_before_tool`` decision or
        None; ``ask_hook``: see :data:`AskHook`. Never raises for a bad approver.

        Each path of the call is resolved once (rules and the workspace check judge the same
        place) and an allow carries those paths (``judged``) for the tool to open."""
        name: str = tool.name
        args = _mapping(call.arguments if arguments is None else arguments)
        with paths.judging():
            try:
                judged = tuple(self.roots.judge(raw) for raw in paths.paths_of(name, args))
                result = await self._check(tool, call, name, args, hook, judged, ask_hook,
                                           notify)
            except UnusablePathError as exc:
                return _deny("path", str(exc))
        if not result.allowed or not judged:
            return result
        # an allow of a change that relied on the workspace check binds the tool to
        # single-link files (reads may open a file with several links: see paths.py)
        trusted = self.mode != "bypass" and result.source != "hook" and \
            _has_side_effects(tool, args)
        return attrs.evolve(result, judged=tuple(
            attrs.evolve(j, confined=trusted and j.inside_for(changes=True)) for j in judged))

    async def _check(self, tool: Any, call: Any, name: str, args: dict[str, Any], hook: Any,
                     judged: tuple[paths.JudgedPath, ...], ask_hook: AskHook | None,
                     notify: Callable[[PermissionContext], Any] | None) -> PermissionResult:
        behavior = getattr(hook, "behavior", None)
        hook_reason = getattr(hook, "reason", None) or "no reason given"
        if behavior == "deny":
            return _deny("hook", f"denied by a hook: {hook_reason}")
        rule = self.rules.find("deny", "tools", name, args, self.cwd)
        if rule is not None:
            return _deny("rule", f"denied by {rule.describe()}{_unseen(rule, name, args)}")
        pending: _Ask
        asked = None if self.mode == "bypass" else self.rules.find(
            "ask", "tools", name, args, self.cwd)
        if behavior == "ask":
            pending = _Ask("hook", f"a hook asks for approval: {hook_reason}")
        elif asked is not None:
            pending = _Ask("rule", f"{asked.describe()} asks for approval"
                                   f"{_unseen(asked, name, args)}")
        elif behavior == "allow":
            return _allow("hook", f"allowed by a hook: {hook_reason}")
        else:
            asks = self._mode_asks(tool, name, args, judged)
            if not isinstance(asks, list):  # a verdict already
                return asks
            lifted = self._lift(name, args, asks)
            if not isinstance(lifted, _Ask):  # a verdict already
                return lifted
            pending = lifted
        return await self._approve("tools", name, getattr(call, "id", ""), args, pending,
                                   ask_hook, notify, lambda: _change_of(tool, args, judged))

    async def check_named(self, dimension: Dimension, name: str, arguments: str = "", *,
                          call_id: str = "") -> PermissionResult:
        """Decide running a command, skill or sub-agent (``dimension`` ``commands``,
        ``skills`` or ``agents``): deny rules deny; ask rules ask; in ``ask`` mode every
        invocation asks unless an allow rule matches; otherwise it is allowed (the tool
        calls it leads to are checked one by one)."""
        rule = self.rules.find("deny", dimension, name, arguments, self.cwd)
        if rule is not None:
            return _deny("rule", f"denied by {rule.describe()}")
        asked = None if self.mode == "bypass" else self.rules.find(
            "ask", dimension, name, arguments, self.cwd)
        label = f"{PREFIX_OF[dimension]}:{name}"
        if asked is not None:
            pending = _Ask("rule", f"{asked.describe()} asks for approval")
        elif self.mode == "ask":
            allowed = self.rules.find_allow(dimension, name, arguments, self.cwd)
            if allowed:
                return _allow("rule", f"allowed by {allowed[0].describe()}")
            pending = _Ask("mode", f"ask mode: running {label} needs approval")
        else:
            return _allow("mode", f"{self.mode} mode allows {label}")
        return await self._approve(dimension, name, call_id,
                                   {"name": name, "arguments": arguments}, pending, None)

    # ------------------------------------------------------------------------- steps 4 and 5

    def _mode_asks(self, tool: Any, name: str, args: Mapping[str, Any],
                   judged: Sequence[paths.JudgedPath]) -> PermissionResult | list[_Ask]:
        side_effects = _has_side_effects(tool, args)
        if self.mode == "bypass":
            return _allow("mode", "bypass mode allows every call no deny rule stops")
        if self.mode == "plan" and side_effects:
            return _deny("mode", f"plan mode runs only read-only tools and {name!r} may change "
                         "things; present the plan instead (leave plan mode to carry it out)")
        asks: list[_Ask] = []
        if self.mode == "ask" and side_effects:
            asks.append(_Ask("mode", "ask mode: every call of a tool with side effects needs "
                                     "approval"))
        for path in judged:
            if not path.inside_for(changes=side_effects):
                asks.append(_Ask("path", self._outside(name, path), (path.real,)))
        if asks:
            return asks
        where = " inside the workspace" if name in paths.PATH_ARGUMENTS else ""
        return _allow("mode", f"{self.mode} mode allows {name}{where}")

    def _outside(self, name: str, path: paths.JudgedPath) -> str:
        raw, real = path.raw, path.real
        via = "" if raw == str(real) else f" (resolves to {real})"
        if path.root is not None:  # inside, but a change of a file with other names
            return (f"{raw}{via} is a file with {path.links} hard links: its other names may be "
                    f"outside the workspace and a change would part them from this one, so "
                    f"changing it counts as outside (reading it does not); to allow it, add an "
                    f"allow rule that names it, such as '{name}({real})'")
        folder = real if real.is_dir() else real.parent
        return (f"{raw}{via} is outside the workspace roots ({self.roots.describe()}); to "
                f"allow it, add the directory with --add-dir {folder} (setting "
                f"permissions.additional_directories) or an allow rule such as "
                f"'{name}({folder}/**)'")

    def _lift(self, name: str, args: Mapping[str, Any], asks: list[_Ask]
              ) -> PermissionResult | _Ask:
        used: list[str] = []
        left: list[_Ask] = []
        for ask in asks:
            if ask.source == "path":
                rule = self.rules.find_path_allow(name, ask.paths[0], self.cwd)
                found = [rule] if rule is not None else []
            else:
                found = self.rules.find_allow("tools", name, args, self.cwd)
            if not found:
                left.append(ask)
            for rule in found:
                if rule.describe() not in used:
                    used.append(rule.describe())
        if not left:
            return _allow("rule", "allowed by " + ", ".join(used))
        source: Source = "path" if any(a.source == "path" for a in left) else left[0].source
        return _Ask(source, "; ".join(a.reason for a in left),
                    tuple(p for a in left for p in a.paths))

    # ------------------------------------------------------------------------- step 6

    async def _approve(self, dimension: Dimension, name: str, call_id: str,
                       args: dict[str, Any], pending: _Ask, ask_hook: AskHook | None,
                       notify: Callable[[PermissionContext], Any] | None = None,
                       change: Callable[[], str] = lambda: "",
                       ) -> PermissionResult:
        if ask_hook is not None:
            answer = ask_hook(pending.reason)
            if inspect.isawaitable(answer):
                answer = await answer
            behavior = getattr(answer, "behavior", None)
            worded = getattr(answer, "reason", None)
            why = worded or "no reason given"
            if behavior == "deny":
                return _deny("hook", f"denied by a hook: {why}", worded=worded or None)
            if behavior == "allow":
                return self._with_input("hook", f"allowed by a hook: {why}", name, args,
                                        getattr(answer, "updated_input", None))
        approver = self.can_use_tool or self._terminal_approver()
        from .results import PermissionContext

        label = name if dimension == "tools" else f"{PREFIX_OF[dimension]}:{name}"
        context = PermissionContext(
            cwd=self.cwd, mode=self.mode, reason=pending.reason,
            suggestions=tuple(self.suggestions(dimension, name, args, pending.paths)),
            tool=label, call_id=call_id, source=pending.source, dimension=dimension,
            paths=tuple(str(p) for p in pending.paths),
            preview=change() if approver is not None else "",
        )
        if approver is None:
            return attrs.evolve(_deny(pending.source, f"{pending.reason}; "
                                                      f"{self._no_approver(context)}"),
                                unapproved=True)
        if notify is not None:  # the person (or program) is about to be asked
            waiting = notify(context)
            if inspect.isawaitable(waiting):
                await waiting
        try:
            answer = approver(label, dict(args), context)
            if inspect.isawaitable(answer):
                answer = await answer
        except Exception as exc:  # an approver's bug denies the call, it never ends the run
            return _deny("callback", f"the approver (can_use_tool) failed: "
                                     f"{type(exc).__name__}: {exc}")
        return self._interpret(answer, dimension, name, args)

    def _interpret(self, answer: object, dimension: Dimension, name: str,
                   args: dict[str, Any]) -> PermissionResult:
        from .results import PermissionAllow, PermissionDeny

        if answer is True:
            return _allow("callback", "allowed by the approver")
        if answer is False:
            return _deny("callback", "denied by the approver")
        if isinstance(answer, PermissionDeny):
            return _deny("callback", str(answer.message or "denied by the approver"),
                         bool(answer.interrupt))
        if isinstance(answer, PermissionAllow):
            updated = answer.updated_input
            if updated is not None and (dimension != "tools" or not isinstance(updated,
                                                                                Mapping)):
                return _deny("callback", f"the approver's updated_input must be a mapping of "
                                         f"tool arguments, got {updated!r:.200}")
            try:
                added = [parse_rule(r, source="the approver") for r in answer.add_rules]
            except PermissionRuleError as exc:
                return _deny("callback", f"the approver's add_rules are invalid: {exc}")
            for rule in added:
                self.rules.add("allow", rule)
            return self._with_input("callback", "allowed by the approver", name, args, updated)
        return _deny("callback", f"the approver gave an answer the host does not understand: "
                                 f"{answer!r:.200}; return PermissionAllow, PermissionDeny, "
                                 "True or False")

    def _with_input(self, source: Source, reason: str, name: str, args: dict[str, Any],
                    updated: Any) -> PermissionResult:
        """An allow, with the replaced input checked against the deny rules again."""
        if updated is None:
            return _allow(source, reason)
        if not isinstance(updated, Mapping):
            return _deny(source, f"the replaced input must be a mapping, got {updated!r:.200}")
        rule = self.rules.find("deny", "tools", name, updated, self.cwd)
        if rule is not None:
            return _deny("rule", f"the replaced input is denied by {rule.describe()}")
        return _allow(source, reason, dict(updated))

    def _no_approver(self, context: PermissionContext) -> str:
        """How to allow a call nobody can be asked about: the front end's words, or
        :data:`NO_APPROVER` (also when the front end's hint fails: a denial never raises)."""
        if self.no_approver_hint is None:
            return NO_APPROVER
        try:
            return str(self.no_approver_hint(context))
        except Exception as exc:
            return f"{NO_APPROVER} (the no_approver_hint failed: {type(exc).__name__}: {exc})"

    def _terminal_approver(self) -> CanUseTool | None:
        if not self.interactive:
            return None
        if self._terminal is None:
            from .approver import terminal_approver

            self._terminal = terminal_approver()
        return self._terminal

    def suggestions(self, dimension: Dimension, name: str, args: Mapping[str, Any],
                    outside: Sequence[Path] = ()) -> list[str]:
        """Rule strings that would allow this call from now on."""
        if dimension != "tools":
            return [f"{PREFIX_OF[dimension]}:{name}"]
        if outside:
            folders = [p if p.is_dir() else p.parent for p in outside]
            return list(dict.fromkeys(f"{name}({f.as_posix()}/**)" for f in folders))
        if name in matching.COMMAND_ARGUMENTS:
            command = args.get(matching.COMMAND_ARGUMENTS[name])
            if isinstance(command, str):
                return matching.suggest_command_rules(name, command) or [name]
        return [name]


def build_policy(
    settings: Mapping[str, Any] | None,
    *,
    cwd: str | Path,
    mode: str | None = None,
    allow: Sequence[str] = (),
    deny: Sequence[str] = (),
    ask: Sequence[str] = (),
    add_dirs: Sequence[str | Path] = (),
    can_use_tool: CanUseTool | None = None,
    interactive: bool = False,
    option_source: str = "option",
    default: str = "default",
    no_approver_hint: NoApproverHint | None = None,
) -> PermissionPolicy:
    """The policy of a session from its merged settings and its options (options win for the
    mode; rules and directories of both apply); ``default``: the mode the name ``default``
    stands for. Raises PermissionConfigError."""
    section = (settings or {}).get("permissions") or {}
    if not isinstance(section, Mapping):
        raise PermissionConfigError(f"setting permissions must be an object with keys "
                                    f"{', '.join(PERMISSION_KEYS)}, got {section!r:.100}")
    unknown = sorted(set(section) - set(PERMISSION_KEYS))
    if unknown:
        raise PermissionConfigError(f"setting permissions: unknown key(s) {', '.join(unknown)}; "
                                    f"known: {', '.join(PERMISSION_KEYS)}")
    if mode is not None:
        chosen = check_mode(mode, f"{option_source} permission_mode")
    else:
        chosen = check_mode(section.get("mode", "default"), "setting permissions.mode")
    if chosen == "default":
        chosen = check_mode(default, f"{option_source} permission_default")
    if no_approver_hint is not None and not callable(no_approver_hint):
        raise PermissionConfigError(f"{option_source} no_approver_hint must be callable, got "
                                    f"{type(no_approver_hint).__name__}")
    if can_use_tool is not None and not callable(can_use_tool):
        raise PermissionConfigError(f"{option_source} can_use_tool must be callable, got "
                                    f"{type(can_use_tool).__name__}")
    rules = PermissionRules.build(section, allow=allow, deny=deny, ask=ask,
                                  option_source=option_source)
    base = paths.absolute(cwd, Path.cwd())
    extra_settings = section.get("additional_directories", [])
    if isinstance(extra_settings, str) or not isinstance(extra_settings, Sequence):
        raise PermissionConfigError("setting permissions.additional_directories must be a list "
                                    f"of directories, got {extra_settings!r:.100}")
    extra = paths.check_directories(extra_settings, base,
                                    "setting permissions.additional_directories")
    if isinstance(add_dirs, str | Path):
        raise PermissionConfigError(f"{option_source} add_dirs must be a list of directories")
    extra += paths.check_directories(add_dirs, base, f"{option_source} add_dirs")
    return PermissionPolicy(chosen, rules, paths.WorkspaceRoots(base, extra), can_use_tool,
                            interactive, no_approver_hint)
