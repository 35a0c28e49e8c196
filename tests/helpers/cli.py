"""Running the installed ``zpi-host`` command as a whole process, with its own agent dir."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

EXE = shutil.which("zpi-host") or str(Path(sys.executable).with_name("zpi-host"))


def clean_environment(tmp_path: Path) -> dict[str, str]:
    """This process's environment without zpi's and the providers' variables, with the agent
    dir and HOME under ``tmp_path``."""
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith(("ZPI_", "OPENAI_", "ANTHROPIC_"))}
    environ.update({"ZPI_AGENT_DIR": str(tmp_path / "agent"), "HOME": str(tmp_path)})
    return environ


def zpi(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``zpi-host ARGS`` in ``tmp_path``, no standard input, bounded."""
    return subprocess.run([EXE, *args], capture_output=True, text=True, cwd=tmp_path,
                          env=clean_environment(tmp_path), timeout=60,
                          stdin=subprocess.DEVNULL)
