"""A session's permission policy with the rules of Claude Code's settings files added
(:mod:`.claude_permissions`): read unless the user's setting
``compat.claude.read_permissions`` is off or the SDK's ``setting_sources`` leave them out."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from .project_guards import project_scopes_read, reads_project_files

if TYPE_CHECKING:
    from ..permissions import PermissionPolicy
    from ..settings.manager import SettingsManager
    from .claude_permissions import ClaudePermissions
    from .options import SessionOptions


class ClaudeRules:
    """What the policy gets: the mode in this host's terms and the files' permissions."""

    def __init__(self, found: ClaudePermissions, mode: str | None,
                 mode_allows: tuple[str, ...]) -> None:
        self.found = found
        self.mode = mode
        self.mode_allows = mode_allows


def claude_permissions(options: SessionOptions, manager: SettingsManager,
                       settings: Mapping[str, Any], cwd: Path, trusted: bool,
                       warnings: list[str]) -> ClaudeRules | None:
    """The Claude files' permissions for this session, or None when they are not read;
    their warnings (and what an untrusted project's files would loosen) go to
    ``warnings``."""
    compat = settings.get("compat")
    claude = compat.get("claude") if isinstance(compat, Mapping) else None
    if isinstance(claude, Mapping) and claude.get("read_permissions") is False:
        return None
    sources = options.setting_sources
    read_user = sources is None or "user" in sources
    if not read_user and not reads_project_files(options):
        return None
    from ..permissions.modes import CLAUDE_MODES
    from ..settings.trust import project_root
    from .claude_permissions import read_claude_permissions

    environ = options.environ if options.environ is not None else os.environ
    found = read_claude_permissions(cwd, environ, trusted=trusted, read_user=read_user,
                                    read_project=project_scopes_read(options))
    warnings.extend(found.warnings)
    if found.held:
        warnings.append(f"not applied, because the project {project_root(cwd)} is not "
                        f"trusted: {'; '.join(found.held)} (trust it with --trust-project)")
    mode: str | None = None
    allows: tuple[str, ...] = ()
    if found.mode is not None and found.mode[0] != "default":
        mode, allows = CLAUDE_MODES[found.mode[0]]
    return ClaudeRules(found, mode, allows)


def with_claude_permissions(policy: PermissionPolicy, claude: ClaudeRules,
                            warnings: list[str]) -> PermissionPolicy:
    """``policy`` with the files' rules and directories added (an allow rule the same as a
    deny rule is left out: the deny wins anyway); ``acceptEdits`` adds its edit and write
    rules, as the command line's mode does, when the files chose the mode."""
    from ..permissions import paths
    from ..permissions.rules import RuleKind, parse_rule

    rules = policy.rules
    kinds: tuple[RuleKind, ...] = ("allow", "deny", "ask")
    for kind in kinds:
        for text, source in claude.found.rules[kind]:
            rule = parse_rule(text, source=source)
            if kind == "allow" and rule in rules.deny:
                warnings.append(f"{source} {text!r} is also denied; the deny rule wins")
                continue
            rules.add(kind, rule)
    if claude.mode is not None and policy.mode == claude.mode:
        for name in claude.mode_allows:
            rules.add("allow", parse_rule(name, source="Claude defaultMode"))
    if not claude.found.directories:
        return policy
    roots = paths.WorkspaceRoots(policy.roots.cwd,
                                 (*policy.roots.extra, *claude.found.directories))
    return attrs.evolve(policy, roots=roots)
