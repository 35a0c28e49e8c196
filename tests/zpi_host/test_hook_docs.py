"""The hook contract, its documentation and its tests stay in step.

``zpi_host.contract.hookspecs`` is the single source of truth. ``docs/hooks.md`` must document every
hook under a ``### zpi_xxx`` heading whose python block shows the rendered signature, must not
document hooks that do not exist, and must map every Claude Code event. Every hook must be
implemented by at least one test elsewhere under ``tests/``.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from zpi_host.contract import hookspecs

ROOT = Path(__file__).resolve().parents[2]
HOOKS_MD = ROOT / "docs" / "hooks.md"
TESTS = ROOT / "tests"

CLAUDE_EVENTS = (
    "SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse",
    "PostToolUseFailure", "Stop", "SubagentStart", "SubagentStop", "PreCompact", "PostCompact",
    "Notification", "SessionEnd",
)
EVENTS_HEADING = "## Claude Code and ZCode events"
DOCSTRING_MARKERS = ("When:", "Returns:", "Combining:", "Async:")

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*$")
_FENCE = re.compile(r"^```")


def render_signature(func) -> str:  # type: ignore[no-untyped-def]
    """``def name(arg: annotation, ...) -> return annotation``, from the annotation strings
    (hookspecs uses ``from __future__ import annotations``) in parameter order."""
    annotations = func.__annotations__
    params = []
    for name in inspect.signature(func).parameters:
        note = annotations.get(name)
        params.append(name if note is None else f"{name}: {_text(note)}")
    line = f"def {func.__name__}({', '.join(params)})"
    if "return" in annotations:
        line += f" -> {_text(annotations['return'])}"
    return line


def _text(annotation: object) -> str:
    if isinstance(annotation, str):
        return annotation
    return inspect.formatannotation(annotation)


def hook_specs() -> dict[str, object]:
    """Every hookspec of the contract, in the module's order."""
    marker = f"{hookspecs.PROJECT_NAME}_spec"
    return {
        name: obj for name, obj in vars(hookspecs).items()
        if name.startswith("zpi_") and inspect.isfunction(obj) and hasattr(obj, marker)
    }


def doc_sections(text: str) -> dict[str, list[str]]:
    """``### heading`` -> the non-blank lines of the first fenced block under it (before the
    next heading); an empty list when there is none."""
    sections: dict[str, list[str]] = {}
    current: str | None = None
    in_block = done = False
    for line in text.splitlines():
        if in_block:
            if _FENCE.match(line):
                in_block, done = False, True
            elif line.strip() and current is not None:
                sections[current].append(line.strip())
            continue
        heading = _HEADING.match(line)
        if heading:
            current = heading.group(2).strip("` ") if heading.group(1) == "###" else None
            if current is not None:
                sections.setdefault(current, [])
            done = False
        elif _FENCE.match(line) and current is not None and not done:
            in_block = True
    return sections


def section_text(text: str, heading: str) -> str:
    """The text under ``heading`` up to the next heading of the same or a higher level."""
    level = len(heading) - len(heading.lstrip("#"))
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == heading)
    except StopIteration:
        return ""
    out = []
    for line in lines[start + 1:]:
        match = _HEADING.match(line)
        if match and len(match.group(1)) <= level:
            break
        out.append(line)
    return "\n".join(out)


def test_every_hook_is_documented_with_its_signature() -> None:
    sections = doc_sections(HOOKS_MD.read_text(encoding="utf-8"))
    missing, wrong = [], []
    for name, spec in hook_specs().items():
        expected = render_signature(spec)
        if name not in sections:
            missing.append(name)
        elif sections[name] != [expected]:
            found = "\n      ".join(sections[name]) or "(no python block)"
            wrong.append(f"  {name}:\n    expected: {expected}\n    found:    {found}")
    problems = []
    if missing:
        problems.append("hooks with no '### name' section in docs/hooks.md: " + ", ".join(missing))
    if wrong:
        problems.append("signature blocks that differ from hookspecs.py (a block holds exactly "
                        "one line):\n" + "\n".join(wrong))
    assert not problems, "\n".join(problems)


def test_hooks_are_documented_in_module_order() -> None:
    sections = doc_sections(HOOKS_MD.read_text(encoding="utf-8"))
    specs = list(hook_specs())
    documented = [name for name in sections if name in specs]
    assert documented == [n for n in specs if n in documented], (
        "docs/hooks.md should list hooks in the order of hookspecs.py:\n  "
        + "\n  ".join(specs)
    )


def test_no_documented_hook_is_unknown() -> None:
    text = HOOKS_MD.read_text(encoding="utf-8")
    documented = [name for name in doc_sections(text) if name.startswith("zpi_")]
    unknown = sorted(set(documented) - set(hook_specs()))
    assert not unknown, f"docs/hooks.md documents hooks that hookspecs.py lacks: {unknown}"


def test_events_table_maps_every_claude_event() -> None:
    section = section_text(HOOKS_MD.read_text(encoding="utf-8"), EVENTS_HEADING)
    assert section, f"docs/hooks.md has no section {EVENTS_HEADING!r}"
    rows = {
        line.split("|")[1].strip().strip("`")
        for line in section.splitlines()
        if line.lstrip().startswith("|") and line.count("|") >= 3
    }
    missing = [event for event in CLAUDE_EVENTS if event not in rows]
    assert not missing, f"events with no row in the events table: {missing}"


def test_every_hook_is_exercised_by_a_test() -> None:
    implemented: set[str] = set()
    pattern = re.compile(r"^\s*(?:async\s+)?def\s+(zpi_\w+)\(", re.MULTILINE)
    for path in TESTS.rglob("*.py"):
        if path.name == "test_hook_docs.py":
            continue
        implemented.update(pattern.findall(path.read_text(encoding="utf-8", errors="replace")))
    missing = [name for name in hook_specs() if name not in implemented]
    assert not missing, (
        "hooks that no test under tests/ implements (write a test with "
        f"`def <hook>(` or `async def <hook>(`): {', '.join(missing)}"
    )


def test_every_hookspec_docstring_has_the_required_parts() -> None:
    incomplete = {}
    for name, spec in hook_specs().items():
        doc = inspect.getdoc(spec) or ""
        absent = [marker for marker in DOCSTRING_MARKERS if marker not in doc]
        if absent:
            incomplete[name] = absent
    assert not incomplete, f"hookspec docstrings missing parts: {incomplete}"


def test_render_signature() -> None:
    assert render_signature(hookspecs.zpi_load_plugins) == (
        "def zpi_load_plugins(host: LoadingHost) -> None"
    )

    def plain(a, b: int):  # type: ignore[no-untyped-def]
        pass

    assert render_signature(plain) == "def plain(a, b: int)"
