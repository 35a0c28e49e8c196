"""Which ``zpi-host`` a whole-process benchmark runs: zpi as its users install it, by default.

That is the four distributions, built from this checkout, in a virtual environment of their
own that holds them and their dependencies only (``CACHE/zpi-DIGEST``, ``CACHE`` being
``~/.cache/zpi-bench`` where the peers are installed too). The environment the benchmarks
run in also holds the test and lint tools, and two of them change what a ``zpi-host``
process imports: httpcore imports trio whenever trio is installed, and httpx imports its
command-line client (click, rich, pygments) whenever those are. A user's ``pip install
zpi-host zpi-builtins`` has neither. The peers are measured as npm installs them, so zpi is
measured as pip installs it.

The environment is made once per state of the sources: ``DIGEST`` covers every file of the
four distributions, so an edit makes a new one (under a minute: the running interpreter's
``venv``, then its ``pip`` upgraded and installing the four from the configured package
index), and older ones are removed. ``--zpi-env current`` runs the benchmark's own
environment's ``zpi-host`` instead, ``--zpi-env DIR`` the one in ``DIR`` (a virtual
environment, or its ``bin``); ``--quick`` always runs the current one (it never installs).
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

from _measure import Option

REPO = Path(__file__).resolve().parents[1]
DISTRIBUTIONS = ("zpi_host", "zpi_builtins", "zpi_compat_claude", "zpi_compat_zcode")
CACHE = Path.home() / ".cache" / "zpi-bench"
#: written last into a finished environment (an interrupted install is made again)
COMPLETE = "zpi-bench-complete"
INSTALL_TIMEOUT = 900
#: what a build or a run leaves in a distribution's folder that is not its source
NOT_SOURCES = {"__pycache__", "build", "dist", ".pytest_cache", ".mypy_cache", ".ruff_cache"}

OPTION: Option = ("--zpi-env", {
    "metavar": "install|current|DIR", "default": "install",
    "help": "which zpi-host to run: 'install' (default) builds this checkout's distributions "
            "into an environment of their own, as a user installs them; 'current' is this "
            "interpreter's; DIR a virtual environment"})


class InstallError(Exception):
    """The product environment could not be made; the message says why."""


def current_bin() -> Path:
    """The ``bin`` directory of the environment running this benchmark."""
    found = shutil.which("zpi-host")
    return Path(found).parent if found else Path(sys.executable).parent


def sources_digest(repo: Path = REPO) -> str:
    """A digest of every source file of the four distributions (paths and contents)."""
    digest = hashlib.sha256()
    for name in DISTRIBUTIONS:
        for path in sorted((repo / name).rglob("*")):
            relative = path.relative_to(repo)
            if any(part in NOT_SOURCES or part.endswith(".egg-info")
                   for part in relative.parts) or not path.is_file():
                continue
            digest.update(relative.as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _run(command: list[str]) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True,
                              timeout=INSTALL_TIMEOUT, check=False)
    except subprocess.TimeoutExpired as exc:
        raise InstallError(f"{' '.join(command[:4])} ... took over {INSTALL_TIMEOUT} s") from exc
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise InstallError(f"{' '.join(command[:4])} ... failed ({done.returncode}): {last}")


def product_bin(cache: Path = CACHE) -> Path:
    """The ``bin`` directory of this state of the sources' own environment, made now if
    there is none (a virtual environment's scripts name their interpreter's absolute path,
    so it is made where it stays; ``COMPLETE`` marks it finished)."""
    target = cache / f"zpi-{sources_digest()}"
    if (target / COMPLETE).is_file():
        return target / "bin"
    shutil.rmtree(target, ignore_errors=True)
    cache.mkdir(parents=True, exist_ok=True)
    print(f"installing zpi from {REPO} into {target} (once per state of the sources)",
          flush=True)
    python = str(target / "bin" / "python")
    try:
        _run([sys.executable, "-m", "venv", str(target)])
        _run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
              "--upgrade", "pip"])
        _run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
              *(str(REPO / name) for name in DISTRIBUTIONS)])
    except InstallError:
        shutil.rmtree(target, ignore_errors=True)
        raise
    (target / COMPLETE).write_text("")
    for older in cache.glob("zpi-*"):
        if older != target and (older / "pyvenv.cfg").is_file():
            shutil.rmtree(older, ignore_errors=True)
    return target / "bin"


def zpi_bin(args: argparse.Namespace) -> Path:
    """The ``bin`` directory whose ``zpi-host`` and ``python`` the benchmark runs, from
    ``--zpi-env`` (``--quick``: the current one); the environment is kept under ``--cache``
    when the benchmark has one. Exits with the reason when it cannot be had."""
    choice = args.zpi_env
    if args.quick or choice == "current":
        return current_bin()
    try:
        if choice == "install":
            return product_bin(Path(getattr(args, "cache", None) or CACHE).expanduser())
        folder = Path(choice).expanduser()
        folder = folder / "bin" if (folder / "bin").is_dir() else folder
        if not (folder / "zpi-host").is_file():
            raise InstallError(f"--zpi-env {choice}: no zpi-host in {folder}")
    except InstallError as exc:
        raise SystemExit(f"no zpi-host to measure: {exc} (--zpi-env current measures this "
                         f"environment's)") from exc
    return folder


def describe(bin_dir: Path) -> str:
    """One line saying which zpi is measured."""
    own = bin_dir.parent.name.startswith("zpi-") and (bin_dir.parent / COMPLETE).is_file()
    return (f"zpi: {bin_dir / 'zpi-host'} ("
            + ("this checkout, installed as a user installs it" if own else
               "the current environment, with whatever else it holds"
               if bin_dir == current_bin() else "the environment given") + ")")
