"""Garbage collection in ``zpi-host``: off during start-up, on for the run, which skips what
start-up built."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def test_run_freezes_what_start_up_built(tmp_path: Path) -> None:
    script = tmp_path / "script.jsonl"
    script.write_text(json.dumps({"text": "hello"}) + "\n", encoding="utf-8")
    code = ("import gc, sys; from zpi_host import hookimpl; from zpi_host.cli import main\n"
            "class Probe:\n"
            "    @hookimpl\n"
            "    def zpi_register_tools(self):\n"
            "        print('collecting at start', gc.isenabled())\n"
            "    @hookimpl\n"
            "    def zpi_user_prompt(self, prompt):\n"
            "        print('collecting in the run', gc.isenabled())\n"
            "import zpi_host.contract.plugins as p\n"
            "load = p.PluginHost.load\n"
            "def with_probe(self, *a, **k):\n"
            "    host = load(self, *a, **k); host.register_plugin(Probe(), 'probe'); return host\n"
            "p.PluginHost.load = with_probe\n"
            f"code = main(['run', '--model', 'scripted:{script}', 'hi'])\n"
            "print('frozen', gc.get_freeze_count(), gc.isenabled()); sys.exit(code)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZPI_")}
    env["ZPI_AGENT_DIR"] = str(tmp_path / "agent")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[:3] == ["collecting at start False", "collecting in the run True", "hello"]
    frozen, enabled = lines[-1].split()[1:]
    assert int(frozen) > 1000 and enabled == "True"


def test_commands_other_than_run_collect_once_parsed(tmp_path: Path) -> None:
    code = ("import gc, sys; import zpi_host.cli as cli\n"
            "seen = []\n"
            "def sessions_command(args):\n"
            "    seen.append(gc.isenabled()); return 0\n"
            "import zpi_host.cli.sessions as s; s.sessions_command = sessions_command\n"
            "code = cli.main(['sessions', 'list'])\n"
            "print(seen, gc.isenabled())")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZPI_")}
    env["ZPI_AGENT_DIR"] = str(tmp_path / "agent")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[True]", "True"]
