"""What every distribution ships, and how tox finds a Python."""

from __future__ import annotations

import configparser
import importlib.resources
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("zpi_host", "zpi_builtins", "zpi_compat_claude", "zpi_compat_zcode")


@pytest.mark.parametrize("package", PACKAGES)
def test_every_package_is_marked_typed(package):
    # hatchling ships every file of the package folder, so the marker reaches the wheel
    assert importlib.resources.files(package).joinpath("py.typed").is_file()


def test_tox_takes_any_python_from_3_11_on():
    tox = configparser.ConfigParser()
    tox.read(REPO / "tox.ini")
    found = [name.strip() for name in tox["testenv"]["base_python"].split(",")]
    assert "python3.11" in found and len(found) > 1
    assert all(int(name.removeprefix("python3.")) >= 11 for name in found)
