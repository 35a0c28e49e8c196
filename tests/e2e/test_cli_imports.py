"""What ``zpi-host --list-plugins`` with a plugin folder does not import: the session side,
and the argument parser."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def run_python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter with a bare environment and a private agent dir."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=cwd, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "ZPI_AGENT_DIR": str(cwd / "a")})


def test_listing_a_plugin_folder_does_not_import_the_session_side(tmp_path: Path) -> None:
    folder = tmp_path / "plugin"
    (folder / ".claude-plugin").mkdir(parents=True)
    (folder / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "p"}))
    code = ("import json, sys; from zpi_host.cli import main\n"
            f"main(['--plugin-dir', {str(folder)!r}, '--list-plugins', '--json'])\n"
            "print(json.dumps([m for m in ('zpi_host.session.assembly', "
            "'zpi_host.session.options', 'zpi_host.session.agent_session', 'anyio', 'cattrs', "
            "'httpx', 'argparse') if m in sys.modules]), "
            "file=sys.stderr)")
    out = run_python(code, tmp_path)
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


#: what a plain one-turn run (no tool call, no bash rule, no skill, no memory, no hook answering
#: a decision, a plain command line) never uses, so does not import: each is imported (and its
#: classes built) on first use
RUN_DEFERRED = (
    "zpi_host.permissions.shell", "zpi_host.permissions.wrappers", "tree_sitter", "yaml",
    "frontmatter", "html", "httpx", "zpi_host.fs.files", "argparse", "zpi_host.permissions.results",
    "zpi_builtins.memory_store", "zpi_host.agent.compaction", "zpi_host.session.subagents",
    "zpi_host.tools.bash_run", "zpi_host.tools.output",
    # the terminal's: Markdown rendering and the live display's lines are for a terminal only
    "rich", "markdown_it", "pygments", "zpi_host.cli.markdown", "zpi_host.cli.images",
    "zpi_host.cli.completion", "zpi_host.cli.picker",
)


def test_a_one_turn_run_does_not_import_what_it_does_not_use(tmp_path: Path) -> None:
    """Start-up cost: a scripted one-turn run with no bash rule, no skill and no YAML
    frontmatter needs neither the shell parser, nor PyYAML, nor the HTML entity table, nor
    the events only some runs emit (warnings, retries, compaction, background tasks), nor the
    hook answer types no plugin of the run returned."""
    script = tmp_path / "hello.jsonl"
    script.write_text(json.dumps({"text": "hello"}) + "\n")
    # the agent directory as every run but the first finds it (the first sets it up: its
    # writes import the file-commit module); its shipped files need no YAML parser
    setup = run_python("from zpi_host.cli import main; main(['init-agent-dir'])", tmp_path)
    assert setup.returncode == 0 and "written" in setup.stdout, setup.stderr
    code = ("import io, json, sys, contextlib; from zpi_host.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            f"    code = main(['run', '--model', 'scripted:{script}', 'hi'])\n"
            "print(code, out.getvalue().strip(), json.dumps([m for m in "
            f"{RUN_DEFERRED!r} if m in sys.modules]))")
    out = run_python(code, tmp_path)
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

    # exits and startup: what the dispatcher and every command share
    assert run("models", "--json") == (0, ["exits", "models", "startup"])
    assert run("--cwd", str(tmp_path), "models") == (0, ["exits", "models", "startup"])
    # "--plugin-d" abbreviates --plugin-dir: its value "run" is no command, models is
    (tmp_path / "run").mkdir()
    code, modules = run("--plugin-d", "run", "models")
    assert code == 0 and {"models", "run", "sessions", "chat", "prompt"} <= set(modules)
    listing = subprocess.run([sys.executable, "-m", "zpi_host", "--help"], capture_output=True,
                             text=True, cwd=tmp_path, timeout=60, env=env).stdout
    for name in ("run", "prompt", "chat", "sessions", "models"):
        assert f"\n    {name} " in listing, listing


#: what the built-in services need only when a tool runs, a session starts or something is
#: logged: a listing, which loads every service, imports none of it
SERVICE_INTERNALS = (
    "logging", "zpi_builtins.search_files", "zpi_builtins.search_grep",
    "zpi_builtins.memory_store", "zpi_builtins.memory_batch", "zpi_builtins.task_registry",
    "zpi_builtins.handoff_service", "zpi_builtins.web_fetch", "zpi_builtins.web_search",
    "zpi_builtins.search_ls", "zpi_builtins.notebook_cells", "zpi_builtins.files_ops",
    "zpi_builtins.files_outline", "zpi_builtins.files_batch", "zpi_builtins.files_download",
    "zpi_builtins.files_images",
    "zpi_host.contract.decisions", "zpi_host.session.ports", "zpi_host.providers.messages",
    "zpi_host.fs.files",
    "zpi_host.resources.frontmatter", "zpi_host.session.subagents", "zpi_host.permissions.policy",
    "zpi_host.permissions.rules", "zpi_host.permissions.results", "zpi_host.resources.loader",
    "zpi_host.tools.bash_run", "zpi_host.tools.output", "zpi_host.fs.spill",
)


def test_a_listing_imports_the_services_plugin_modules_only(tmp_path: Path) -> None:
    """Thin service modules: ``--list-plugins`` registers every built-in service and calls
    its registration hooks, without importing the tools' code, stores and registries."""
    code = ("import io, json, sys, contextlib; from zpi_host.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            "    code = main(['--list-plugins', '--json'])\n"
            "rows = json.loads(out.getvalue())\n"
            "print(json.dumps([code, {r['name']: [r['status'], r['contributes']] for r in rows},"
            f" [m for m in {SERVICE_INTERNALS!r} if m in sys.modules]]))")
    out = run_python(code, tmp_path)
    assert out.returncode == 0, out.stderr
    status, rows, imported = json.loads(out.stdout)
    assert status == 0
    assert rows["builtins:search"] == ["ok", {"tools": ["glob", "grep", "ls"]}]
    assert rows["builtins:todos"] == ["ok", {"tools": ["todo_write"]}]
    # every tool the service can provide, whatever a session's settings and model offer
    assert rows["builtins:files"] == ["ok", {"tools": [
        "batch_edit", "copy", "download_file", "exist", "generate_image", "inspect_file",
        "mkdir", "rename", "rm", "sleep", "view_image"]}]
    assert rows["builtins:notebooks"] == ["ok", {"tools": ["notebook_edit", "notebook_read"]}]
    assert rows["builtins:memory"][0] == "ok" and rows["builtins:memory"][1]["tools"] == ["memory"]
    assert rows["builtins:tasks"] == ["ok", {"tool_overrides": ["bash"],
                                             "tools": ["task_output", "task_stop"]}]
    assert rows["builtins:handoff"][1]["tool_overrides"] == ["edit", "write"]
    assert rows["builtins:init"][1]["commands"] == ["init"]
    assert imported == []


def test_the_thin_modules_keep_the_names_they_export() -> None:
    """What moved behind first use is still reachable where it was: the hand-off service's
    names from ``zpi_builtins.handoff``, the permission policy's and the resource loader's
    from their packages; the memory tool's scopes are the store's."""
    import zpi_builtins.handoff as handoff
    import zpi_builtins.handoff_service as handoff_service
    import zpi_host.contract.decisions as decisions
    import zpi_host.permissions as permissions
    import zpi_host.resources as resources
    import zpi_host.session.ports as ports
    import zpi_host.tools.bash as bash
    import zpi_host.tools.bash_run as bash_run
    from zpi_builtins import memory, memory_store, search, search_files

    assert handoff.HandoffService is handoff_service.HandoffService
    assert handoff.missing_sections is handoff_service.missing_sections
    assert permissions.build_policy is permissions.policy.build_policy
    assert permissions.Denial is permissions.results.Denial
    assert resources.ResourceLoader is resources.loader.ResourceLoader
    assert memory.PARAMETERS["properties"]["scope"]["enum"] == list(memory_store.SCOPES)
    assert search_files.FILE_TYPES is search.FILE_TYPES
    for whole, part, names in (
            (bash, bash_run, ("command_environment", "find_shell", "stop_process_group")),):
        for name in names:
            assert getattr(whole, name) is getattr(part, name)
            assert name in dir(whole) and name in whole.__all__
    assert {"combine_tool_decisions", "HostPorts"} <= {*dir(decisions), *dir(ports)}
    for module in (handoff, permissions, resources, decisions, ports):
        with pytest.raises(AttributeError, match="no attribute 'nothing'"):
            module.nothing  # noqa: B018


def test_version_imports_no_module_the_bare_interpreter_does_not(tmp_path: Path) -> None:
    """``--version`` adds only zpi's own small modules to what ``python -c pass`` imports
    (P8): no ``functools``, ``collections``, ``re``, ``typing`` or ``importlib.metadata``, the
    costly ones, as long as the installed script itself does not import them."""
    code = ("import sys; before = set(sys.modules); from zpi_host.cli import main\n"
            "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in set(sys.modules) - before if not m.startswith('zpi_host')),"
            " file=sys.stderr)")
    out = run_python(code, tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("zpi-host ")
    added = out.stderr.splitlines()[-1]
    for heavy in ("functools", "collections", "'re'", "typing", "importlib.metadata"):
        assert heavy not in added, added
