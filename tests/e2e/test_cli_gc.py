"""A ``zpi-host run`` process keeps what start-up built out of later garbage collections."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def test_run_freezes_what_start_up_built(tmp_path: Path) -> None:
    script = tmp_path / "script.jsonl"
    script.write_text(json.dumps({"text": "hello"}) + "\n", encoding="utf-8")
    code = ("import gc, sys; from zpi_host.cli import main; "
            f"code = main(['run', '--model', 'scripted:{script}', 'hi']); "
            "print('frozen', gc.get_freeze_count()); sys.exit(code)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZPI_")}
    env["ZPI_AGENT_DIR"] = str(tmp_path / "agent")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "hello"
    assert int(lines[-1].split()[1]) > 1000
