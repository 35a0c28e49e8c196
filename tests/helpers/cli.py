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


def zpi_without(tmp_path: Path, *distributions: str) -> list[str]:
    """The command of ``zpi-host`` in a virtualenv under ``tmp_path`` that has everything this
    one has except ``distributions`` (as if they were never installed: neither their modules
    nor their entry points): each entry of this environment's site-packages is linked in, but
    for those whose name starts with one of the distributions' (``zpi-compat-claude`` stands
    for ``zpi_compat_claude/``, ``zpi_compat_claude-0.1.0.dist-info``, an editable install's
    ``.pth`` or finder)."""
    import site
    import sysconfig
    import venv

    home = tmp_path / "venv-without"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(home)
    target = Path(sysconfig.get_path("purelib", vars={"base": str(home),
                                                      "platbase": str(home)}))
    hidden = tuple(d.replace("-", "_").lower() for d in distributions)
    for folder in map(Path, site.getsitepackages()):
        for entry in folder.iterdir() if folder.is_dir() else ():
            name = entry.name.lower().removeprefix("__editable__.").removeprefix(
                "_editable_impl_")
            if not name.startswith(hidden) and not (target / entry.name).exists():
                (target / entry.name).symlink_to(entry)
    return [str(home / "bin" / "python"), "-m", "zpi_host"]
