"""The import contracts of pyproject.toml (import-linter): the kernel's layers point one way,
the distributions stack, and no package imports its way back to itself. Checked on the real
tree, and shown to break on a copy with one back-pointing import or one cycle added."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("zpi_host", "zpi_builtins", "zpi_compat_claude", "zpi_compat_zcode")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(not LINT_IMPORTS.exists(),
                                reason="import-linter is not installed (tox installs it)")


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join(str(root / name / "src") for name in SOURCES)
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=root, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": path}, timeout=300)


def copy_of_the_tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    for name in SOURCES:
        shutil.copytree(REPO / name / "src", root / name / "src",
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


def add_line(module: Path, line: str) -> None:
    text = module.read_text()
    head, future, rest = text.partition("from __future__ import annotations\n")
    module.write_text(head + future + line + "\n" + rest)


def test_the_contracts_hold() -> None:
    out = lint_imports(REPO)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Contracts: 3 kept, 0 broken." in out.stdout


def test_an_import_that_points_back_up_breaks_the_layers(tmp_path: Path) -> None:
    root = copy_of_the_tree(tmp_path)
    add_line(root / "zpi_host/src/zpi_host/agent/loop.py", "from ..cli import main")
    out = lint_imports(root)
    assert out.returncode == 1
    assert "zpi_host.agent is not allowed to import zpi_host.cli" in out.stdout
    assert "the kernel's layers point one way BROKEN" in out.stdout


def test_the_kernel_importing_a_plugin_distribution_breaks_the_stack(tmp_path: Path) -> None:
    root = copy_of_the_tree(tmp_path)
    add_line(root / "zpi_host/src/zpi_host/sdk/client.py", "import zpi_compat_claude")
    out = lint_imports(root)
    assert out.returncode == 1
    assert "zpi_host is not allowed to import zpi_compat_claude" in out.stdout


def test_a_cycle_inside_a_package_breaks_the_last_contract(tmp_path: Path) -> None:
    root = copy_of_the_tree(tmp_path)
    # two modules of one layer (support) that import each other: the layers cannot see it
    add_line(root / "zpi_host/src/zpi_host/support/digests.py", "from . import listview")
    add_line(root / "zpi_host/src/zpi_host/support/listview.py", "from . import digests")
    out = lint_imports(root)
    assert out.returncode == 1
    assert "the kernel's layers point one way KEPT" in out.stdout
    assert "No cycles are allowed in zpi_host.support." in out.stdout
