"""PluginSnapshot: what a session was assembled from, frozen and written at its first send.

The session keeps the objects it was built with (tools, prompt, commands, settings copy), so
later registrations, uninstalls, settings or skill edits cannot change it; the snapshot is the
record of that state in the transcript, and what a resumed session compares against to report
which plugins changed since.
"""

from __future__ import annotations

import platform
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from ..support.attrs_methods import FrozenFieldsEq

SNAPSHOT_VERSION = 1


@attrs.frozen(repr=False, eq=False, slots=False)
class PluginSnapshot(FrozenFieldsEq):
    """Plain data (JSON-ready) describing one assembled session."""

    plugins: tuple[Mapping[str, Any], ...]
    tools: tuple[Mapping[str, Any], ...]
    instructions: tuple[Mapping[str, Any], ...]
    commands: tuple[str, ...]
    skills: tuple[Mapping[str, Any], ...]
    resources_fingerprint: str | None
    runtime: Mapping[str, Any]
    options: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"version": SNAPSHOT_VERSION, "plugins": list(self.plugins),
                "tools": list(self.tools), "instructions": list(self.instructions),
                "commands": list(self.commands), "skills": list(self.skills),
                "resourcesFingerprint": self.resources_fingerprint,
                "runtime": dict(self.runtime), "options": dict(self.options)}


def take_snapshot(
    host: Any, tools: Sequence[Any], tool_owners: Mapping[str, str],
    instructions: Sequence[Any], resources: Any, options: Mapping[str, Any],
) -> PluginSnapshot:
    """Describe the host's plugins, the session's tools and resources, and its options."""
    from ..support.distinfo import kernel_version

    plugins = tuple(
        {"name": r.name, "distribution": r.distribution, "version": r.version,
         "source": r.source, "status": r.status}
        for r in host.records
    )
    tool_rows = tuple(
        {"name": t.name, "plugin": tool_owners.get(t.name), "description": t.description,
         "metadata": attrs.asdict(t.metadata)}
        for t in tools
    )
    skills = tuple({"name": s.name, "path": str(s.path)} for s in resources.skills) \
        if resources is not None else ()
    commands = tuple(c.name for c in resources.commands) if resources is not None else ()
    fingerprint = resources.fingerprint() if resources is not None else None
    return PluginSnapshot(
        plugins=plugins, tools=tool_rows,
        instructions=tuple({"plugin": i.source, "title": i.title, "text": i.text}
                           for i in instructions),
        commands=commands, skills=skills, resources_fingerprint=fingerprint,
        runtime={"zpi_host": kernel_version(), "python": platform.python_version()},
        options=dict(options),
    )


def plugin_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """Human-readable differences between the plugins of two snapshots (as JSON):
    added, removed, version changed. Only plugins that loaded count."""

    def loaded(snapshot: Mapping[str, Any]) -> dict[str, str | None]:
        rows = snapshot.get("plugins", [])
        return {row["name"]: row.get("version") for row in rows
                if isinstance(row, Mapping) and row.get("status", "ok") == "ok"}

    old, new = loaded(before), loaded(after)
    changes = [f"added {name}" + (f" {new[name]}" if new[name] else "")
               for name in sorted(new.keys() - old.keys())]
    changes += [f"removed {name}" for name in sorted(old.keys() - new.keys())]
    changes += [f"{name} {old[name] or '?'} -> {new[name] or '?'}"
                for name in sorted(old.keys() & new.keys()) if old[name] != new[name]]
    return changes
