"""A workspace with nested sources, a look-alike folder and an outside folder with a secret."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace with src/, srcx/ and, next to it, an outside folder with a secret."""
    root = tmp_path / "ws"
    (root / "src" / "nested").mkdir(parents=True)
    (root / "src" / "a.py").write_text("a\n")
    (root / "src" / "nested" / "b.py").write_text("b\n")
    (root / "srcx").mkdir()
    (root / "srcx" / "a").write_text("x\n")
    (root / "top.txt").write_text("top\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    return root


@pytest.fixture
def outside(ws: Path) -> Path:
    return ws.parent / "outside"
