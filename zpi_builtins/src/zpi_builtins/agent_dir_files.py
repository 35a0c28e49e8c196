"""What ``zpi-builtins`` ships into the agent directory (the ``zpi.agent_dir_files`` entry
point, read by ``zpi-host init-agent-dir`` and a first run): the hand-off skill, so that the
template a hand-off follows is the user's to see and change."""

from __future__ import annotations

from pathlib import Path

__all__ = ["agent_dir_files"]

SKILLS = Path(__file__).with_name("skills")


def agent_dir_files() -> dict[str, str]:
    """Relative path in the agent directory -> text."""
    return {"skills/handoff/SKILL.md":
            (SKILLS / "handoff" / "SKILL.md").read_text(encoding="utf-8")}
