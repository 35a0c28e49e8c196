"""``zpi-host --list-plugins`` with the Claude folder of the cold-start benchmark (a manifest,
a skill, a command, a hooks file): what it shows, unchanged by the start-up work, and what
it does not import or build."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

#: the benchmark's folder (``benchmarks/cold_start.py``: ``claude_plugin``)
MANIFEST = {"name": "bench-plugin", "version": "1.0.0", "description": "benchmark plugin"}
SKILL = "---\nname: greet\ndescription: Greets the user.\n---\nSay hello.\n"
COMMAND = "---\ndescription: Say hello\n---\nHello!\n"
HOOKS = {"hooks": {"PreToolUse": [
    {"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]}}

#: its rows in ``--list-plugins --json`` as the listing showed them before the start-up work
#: (``FOLDER``: the folder's path)
EXPECTED_ROWS = [
    {"name": "claude:bench-plugin", "distribution": None, "version": "1.0.0",
     "source": "claude",
     "hooks": ["zpi_before_tool", "zpi_register_commands", "zpi_register_resources"],
     "contributes": {"commands": ["bench-plugin:hello"], "hooks": ["PreToolUse"],
                     "resources": ["FOLDER"], "skills": ["bench-plugin:greet"]},
     "status": "ok", "error": None, "warnings": []},
    {"name": "claude/skills", "distribution": None, "version": None, "source": "claude",
     "hooks": ["zpi_permission_request", "zpi_register_tools"],
     "contributes": {"tools": ["skill"]}, "status": "ok", "error": None, "warnings": []},
]
#: and in the table, columns split where two or more spaces are
EXPECTED_LINES = [
    ["claude:bench-plugin", "claude", "- 1.0.0", "ok",
     "before_tool, register_commands, register_resources",
     "commands: bench-plugin:hello; hooks: PreToolUse; resources: FOLDER; "
     "skills: bench-plugin:greet"],
    ["claude/skills", "claude", "-", "ok", "permission_request, register_tools", "tools: skill"],
]

#: what only running a hook, a command or the skill tool needs; a listing imports none
DEFERRED = (
    "zpi_host.tools.decorator", "zpi_compat_claude.hooks.runner",
    "zpi_compat_claude.hooks.output", "zpi_compat_claude.hooks.transcript",
    "encodings.utf_8_sig", "anyio", "asyncio",
)


def bench_folder(root: Path) -> Path:
    folder = root / "bench-plugin"
    (folder / ".claude-plugin").mkdir(parents=True)
    (folder / ".claude-plugin" / "plugin.json").write_text(json.dumps(MANIFEST))
    (folder / "skills" / "greet").mkdir(parents=True)
    (folder / "skills" / "greet" / "SKILL.md").write_text(SKILL)
    (folder / "commands").mkdir()
    (folder / "commands" / "hello.md").write_text(COMMAND)
    (folder / "hooks").mkdir()
    (folder / "hooks" / "hooks.json").write_text(json.dumps(HOOKS))
    return folder


def python(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in ``tmp_path`` with a fresh agent dir and home; it must succeed."""
    out = subprocess.run([sys.executable, *args], capture_output=True, text=True,
                         cwd=tmp_path, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "ZPI_AGENT_DIR": str(tmp_path / "a"),
                              "HOME": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    return out


def run(tmp_path: Path, *args: str) -> str:
    """What ``zpi-host ARGS`` prints."""
    return python(tmp_path, "-m", "zpi_host", *args).stdout


def test_the_listing_of_the_benchmark_folder_is_unchanged(tmp_path: Path) -> None:
    folder = bench_folder(tmp_path)
    expected = json.loads(json.dumps(EXPECTED_ROWS).replace("FOLDER", str(folder)))
    rows = json.loads(run(tmp_path, "--plugin-dir", str(folder), "--list-plugins", "--json"))
    assert [row for row in rows if row["name"].startswith("claude:b")
            or row["name"] == "claude/skills"] == expected
    table = run(tmp_path, "--plugin-dir", str(folder), "--list-plugins").splitlines()
    lines = [re.split(r"\s{2,}", line.strip()) for line in table
             if line.startswith(("claude:bench-plugin ", "claude/skills "))]
    assert lines == [[cell.replace("FOLDER", str(folder)) for cell in line]
                     for line in EXPECTED_LINES]


def test_listing_a_claude_folder_defers_what_only_a_session_needs(tmp_path: Path) -> None:
    """The hook runner and its output and transcript modules, ``@tool`` (the ``skill`` tool
    is built without it) and the utf-8-sig codec are not imported; of the classes
    ``zpi_compat_claude`` defines, only the kernel's ``ResourceSource`` subclass is an attrs
    class (the others are light records: attrs builds a class at import). As at a user's
    second start: the first listing snapshots the folder and caches its parsed Markdown
    (parsing frontmatter needs the codec)."""
    folder = bench_folder(tmp_path)
    run(tmp_path, "--plugin-dir", str(folder), "--list-plugins")  # caches the parsed files
    code = ("import gc, io, json, sys, contextlib; from zpi_host.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            f"    code = main(['--plugin-dir', {str(folder)!r}, '--list-plugins', '--json'])\n"
            "gc.unfreeze()  # the listing froze what it built out of get_objects() too\n"
            "built = sorted(c.__qualname__ for c in gc.get_objects() if isinstance(c, type)\n"
            "               and c.__module__.startswith('zpi_compat_claude')\n"
            "               and '__attrs_attrs__' in vars(c))\n"
            "print(json.dumps([code, [r['name'] for r in json.loads(out.getvalue())],\n"
            f"                  [m for m in {DEFERRED!r} if m in sys.modules], built]))")
    status, names, imported, attrs_classes = json.loads(python(tmp_path, "-c", code).stdout)
    assert status == 0 and {"claude:bench-plugin", "claude/skills"} <= set(names)
    assert imported == []
    assert attrs_classes == ["FolderSource"]


def test_a_listing_leaves_what_it_built_to_the_end_of_the_process(tmp_path: Path) -> None:
    """The objects a listing built are frozen out of the garbage collector (``gc.freeze``):
    the collection Python runs at exit walked all of them, about a tenth of a listing."""
    folder = bench_folder(tmp_path)
    code = ("import atexit, gc, io, sys, contextlib; from zpi_host.cli import main\n"
            "atexit.register(lambda: print(gc.get_freeze_count(), file=sys.stderr))\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    code = main(['--plugin-dir', {str(folder)!r}, '--list-plugins'])\n"
            "sys.exit(code)")
    frozen = python(tmp_path, "-c", code).stderr.split()[-1]
    assert int(frozen) > 10_000  # the host, its plugins, their modules
