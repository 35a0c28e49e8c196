"""Kernel plugin ``zpi.tools``: registers read, write, edit and bash."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..contract.hookspecs import hookimpl


@hookimpl
def zpi_register_tools(cwd: Path, settings: Mapping[str, Any]) -> list[Any]:
    from .kernel import kernel_tools

    return list(kernel_tools())
