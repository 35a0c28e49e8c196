"""What ``zpi-host --list-plugins`` with a plugin folder does not import: the session side,
and the argument parser."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_listing_a_plugin_folder_does_not_import_the_session_side(tmp_path: Path) -> None:
    folder = tmp_path / "plugin"
    (folder / ".claude-plugin").mkdir(parents=True)
    (folder / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "p"}))
    code = ("import json, sys; from zpi_host.cli import main\n"
            f"main(['--plugin-dir', {str(folder)!r}, '--list-plugins', '--json'])\n"
            "print(json.dumps([m for m in ('zpi_host.assembly', 'zpi_host.options', "
            "'zpi_host.session', 'anyio', 'cattrs', 'httpx', 'argparse') if m in sys.modules]), "
            "file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "ZPI_AGENT_DIR": str(tmp_path / "a")})
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert "claude:p" in [row["name"] for row in rows]
    assert json.loads(out.stderr.splitlines()[-1]) == []


def test_the_listing_fast_path_reads_the_options_as_the_parser_does(tmp_path: Path) -> None:
    folder = tmp_path / "plugin"
    (folder / ".claude-plugin").mkdir(parents=True)
    (folder / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "p"}))
    other = tmp_path / "elsewhere"
    other.mkdir()
    env = {"PATH": "/usr/bin:/bin", "ZPI_AGENT_DIR": str(tmp_path / "a")}

    def rows(*args: str) -> list[dict]:
        out = subprocess.run([sys.executable, "-m", "zpi_host", *args], capture_output=True,
                             text=True, cwd=tmp_path, env=env, timeout=60)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    fast = rows("--cwd", str(other), "--list-plugins", "--plugin-dir", str(folder), "--json")
    parsed = rows(f"--cwd={other}", "--list-plugins", f"--plugin-dir={folder}", "--json")
    assert fast == parsed
    assert "claude:p" in [row["name"] for row in fast]


def test_a_one_turn_run_does_not_import_what_it_does_not_use(tmp_path: Path) -> None:
    """Start-up cost: a scripted one-turn run with no bash rule, no skill and no YAML
    frontmatter needs neither the shell parser, nor PyYAML, nor the HTML entity table."""
    script = tmp_path / "hello.jsonl"
    script.write_text(json.dumps({"text": "hello"}) + "\n")
    code = ("import io, json, sys, contextlib; from zpi_host.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            f"    code = main(['run', '--model', 'scripted:{script}', 'hi'])\n"
            "print(code, out.getvalue().strip(), json.dumps([m for m in ("
            "'zpi_host.permissions.shell', 'zpi_host.permissions.wrappers', 'tree_sitter', "
            "'yaml', 'frontmatter', 'html', 'httpx') if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "ZPI_AGENT_DIR": str(tmp_path / "a")})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0", "hello", "[]"], out.stdout + out.stderr


def test_a_command_builds_only_its_own_parser(tmp_path: Path) -> None:
    """``zpi-host models`` does not import the modules of run, prompt, chat and sessions;
    ``--help`` still lists every command, and a command told wrongly in advance (an
    abbreviated top-level option's value) is parsed again with the full parser."""
    code = ("import io, json, sys, contextlib; from zpi_host.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    code = main(sys.argv[1:])\n"
            "print(code, json.dumps(sorted(m.rsplit('.', 1)[1] for m in sys.modules "
            "if m.rsplit('.', 1)[0] == 'zpi_host.cli')))")
    env = {"PATH": "/usr/bin:/bin", "ZPI_AGENT_DIR": str(tmp_path / "a")}

    def run(*args: str) -> tuple[int, list[str]]:
        out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                             text=True, cwd=tmp_path, timeout=60, env=env)
        code_text, modules = out.stdout.split(maxsplit=1)
        return int(code_text), json.loads(modules)

    assert run("models", "--json") == (0, ["models"])
    assert run("--cwd", str(tmp_path), "models") == (0, ["models"])
    # "--plugin-d" abbreviates --plugin-dir: its value "run" is no command, models is
    (tmp_path / "run").mkdir()
    code, modules = run("--plugin-d", "run", "models")
    assert code == 0 and {"models", "run", "sessions", "chat", "prompt"} <= set(modules)
    listing = subprocess.run([sys.executable, "-m", "zpi_host", "--help"], capture_output=True,
                             text=True, cwd=tmp_path, timeout=60, env=env).stdout
    for name in ("run", "prompt", "chat", "sessions", "models"):
        assert f"\n    {name} " in listing, listing
