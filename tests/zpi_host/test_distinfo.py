"""distinfo reads a distribution's name and version as ``Distribution.metadata`` does, without
the ``email`` parser: the same answers for real METADATA files and for unusual ones."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import PathDistribution, distribution
from pathlib import Path

import pytest

from zpi_host.support import distinfo


def dist_with(tmp_path: Path, text: str, file: str = "METADATA") -> PathDistribution:
    folder = tmp_path / "demo-1.0.dist-info"
    folder.mkdir()
    (folder / file).write_bytes(text.encode("utf-8"))
    return PathDistribution(folder)


@pytest.mark.parametrize("name", ["zpi-host", "zpi-builtins", "pluggy", "attrs", "anyio"])
def test_installed_distributions_read_as_the_email_parser_reads_them(name: str) -> None:
    dist = distribution(name)
    assert distinfo.identity(dist) == (dist.metadata["Name"], dist.metadata["Version"])
    assert distinfo.version(name) == dist.version


@pytest.mark.parametrize("text", [
    "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n\nName: body\n",
    "Metadata-Version: 2.1\r\nName:demo\r\nVersion:  1.0 \r\n\r\nbody",
    "name: demo\nVERSION: 2\nName: second\nVersion: 3\n",
    "Name: demo\n  folded\nVersion: 1.0\n",            # a folded value
    "Name: demo\nSummary: one\n  two\nVersion: 1.0\n",  # another field folded
    "Name: demo\nVersion: 1.0\n  folded\n",
    "Name: demo\nnot a header\nVersion: 1.0\n",         # the block ends early
    "Name: demo\n",                                      # no version
    "From nobody\nName: demo\nVersion: 1.0\n",
    "Name: démo\nVersion: 1.0\n",
    "Name: demo\rVersion: 1.0\n",
    "Name: demo\nVersion: 1.0",
])
def test_unusual_metadata_reads_as_the_email_parser_reads_it(tmp_path: Path, text: str) -> None:
    dist = dist_with(tmp_path, text)
    assert distinfo.identity(dist) == (dist.metadata["Name"], dist.metadata["Version"])


def test_pkg_info_is_read_when_there_is_no_metadata(tmp_path: Path) -> None:
    dist = dist_with(tmp_path, "Name: old\nVersion: 0.1\n", file="PKG-INFO")
    assert distinfo.identity(dist) == ("old", "0.1") == (dist.metadata["Name"],
                                                        dist.metadata["Version"])


def test_the_version_of_a_missing_distribution_is_an_error() -> None:
    from importlib.metadata import PackageNotFoundError

    with pytest.raises(PackageNotFoundError):
        distinfo.version("no-such-distribution-zpi")


def test_reading_the_plugins_does_not_import_the_email_parser(tmp_path: Path) -> None:
    """The plugin host names each entry point's distribution and version without parsing
    METADATA with ``email`` (kernel plugins included: ``zpi_host.__version__``)."""
    code = ("import sys, zpi_host; from zpi_host.contract.plugins import PluginHost, PluginConfig\n"
            "host = PluginHost(PluginConfig()).load(); ours = zpi_host.__version__\n"
            "parsed = 'email.parser' in sys.modules or 'email.feedparser' in sys.modules\n"
            "import importlib.metadata as m\n"
            "named = {(r.distribution, r.version) for r in host.records if r.distribution}\n"
            "print(named == {(d, m.version(d)) for d, _ in named} and len(named) > 1, parsed, "
            "ours == m.version('zpi-host'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False", "True"]
