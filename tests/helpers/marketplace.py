"""The official marketplace's plugin folders vendored under tests/fixtures (SOURCE.md there
names the repositories and commits): where they are and what their files declare."""

from __future__ import annotations

import re
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claude_plugins_official"
#: repository folder -> the folders of it that hold plugins
REPOSITORIES = {"claude-plugins-official": ("plugins", "external_plugins"),
                "claude-code": ("plugins",)}


def plugin_dirs(repository: str) -> list[Path]:
    """Every plugin folder of ``repository``, sorted by group then name."""
    return [d for group in REPOSITORIES[repository]
            for d in sorted((FIXTURES / repository / group).iterdir()) if d.is_dir()]


def every_plugin() -> list[tuple[str, Path]]:
    """(``repository/name``, folder) of every vendored plugin."""
    return [(f"{repo}/{d.name}", d) for repo in REPOSITORIES for d in plugin_dirs(repo)]


def frontmatter_value(path: Path, key: str) -> str | None:
    """The ``key:`` line of a Markdown file's frontmatter (read by line: several agents'
    frontmatter is not strict YAML, which Claude Code accepts)."""
    match = re.match(r"---\r?\n(.*?)\r?\n---", path.read_text(encoding="utf-8"), re.S)
    for line in match.group(1).splitlines() if match else ():
        if line.startswith(f"{key}:"):
            return line.removeprefix(f"{key}:").strip().strip("\"'") or None
    return None


def frontmatter_name(path: Path) -> str | None:
    return frontmatter_value(path, "name")


def body(path: Path) -> str:
    """A Markdown file's text after its frontmatter."""
    text = path.read_text(encoding="utf-8")
    match = re.match(r"---\r?\n.*?\r?\n---\r?\n?", text, re.S)
    return text[match.end():] if match else text


def plain_line(path: Path) -> str:
    """A line of the body the host passes on unchanged (no variables, arguments, shell
    blocks or file mentions), for checking that the body reached the model."""
    inside_block = False
    for line in body(path).splitlines():
        if line.startswith("```"):
            inside_block = not inside_block
            continue
        if (not inside_block and len(line.strip()) > 12 and "$" not in line
                and "!`" not in line and "@" not in line and "{" not in line):
            return line.strip()
    raise AssertionError(f"{path} has no plain line")
