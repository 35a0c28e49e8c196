"""Write real, importable distributions (``*.dist-info`` + module) for entry-point tests.

``importlib.metadata`` finds them exactly like installed packages, so discovery is tested
for real, not mocked.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path


class FakeDistribution:
    """A distribution written under a folder on ``sys.path``; ``remove()`` undoes it."""

    def __init__(self, root: Path, name: str, version: str, modules: list[str]) -> None:
        self.root, self.name, self.version, self.modules = root, name, version, modules

    def remove(self) -> None:
        if str(self.root) in sys.path:
            sys.path.remove(str(self.root))
        for module in self.modules:
            for key in [k for k in sys.modules if k == module or k.startswith(module + ".")]:
                del sys.modules[key]
        importlib.invalidate_caches()


def install_distribution(
    root: Path,
    name: str,
    *,
    modules: Mapping[str, str],
    entry_points: Mapping[str, Mapping[str, str]] | None = None,
    version: str = "1.0",
) -> FakeDistribution:
    """Create distribution ``name`` under ``root`` (added to ``sys.path``).

    ``modules`` maps module names to source (dedented); ``entry_points`` maps a group
    (``"zpi.plugins"``) to ``{entry point name: "module:attr" or "module"}``.
    """
    root.mkdir(parents=True, exist_ok=True)
    for module, source in modules.items():
        path = root.joinpath(*module.split(".")).with_suffix(".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source), encoding="utf-8")
    dist_info = root / f"{name.replace('-', '_')}-{version}.dist-info"
    dist_info.mkdir(exist_ok=True)
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8"
    )
    lines = []
    for group, eps in (entry_points or {}).items():
        lines.append(f"[{group}]")
        lines.extend(f"{ep} = {target}" for ep, target in eps.items())
        lines.append("")
    (dist_info / "entry_points.txt").write_text("\n".join(lines), encoding="utf-8")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    importlib.invalidate_caches()
    return FakeDistribution(root, name, version, list(modules))
