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


@pytest.mark.parametrize("names", [
    ("zpi-host", "zpi-builtins", "zpi-compat-claude", "zpi-compat-zcode"),
    ("pluggy", "attrs", "ANYIO", "typing_extensions", "no-such-distribution-zpi"),
])
def test_installed_versions_are_those_importlib_metadata_finds(names: tuple[str, ...]) -> None:
    from importlib.metadata import PackageNotFoundError, version

    def expected(name: str) -> str | None:
        try:
            return version(name)
        except PackageNotFoundError:
            return None

    assert distinfo.installed_versions(names) == {name: expected(name) for name in names}


def test_the_first_folder_on_the_path_answers(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """As ``importlib.metadata``: the first folder of ``sys.path`` holding the distribution;
    a name spelled with other separators or case is the same name."""
    from importlib.metadata import version

    for folder, ver in (("first", "2.0"), ("second", "1.0")):
        info = tmp_path / folder / "Demo_Pkg-9.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Name: demo-pkg\nVersion: {ver}\n\nbody\n")
    monkeypatch.syspath_prepend(str(tmp_path / "second"))
    monkeypatch.syspath_prepend(str(tmp_path / "first"))
    assert distinfo.installed_versions(["demo.pkg"]) == {"demo.pkg": "2.0"} \
        == {"demo.pkg": version("demo.pkg")}


def test_what_the_folder_search_cannot_read_goes_to_importlib_metadata(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A zip archive on the path and an unusual METADATA: the answer importlib.metadata
    gives."""
    import zipfile

    archive = tmp_path / "dists.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr("zipped-1.5.dist-info/METADATA", "Name: zipped\nVersion: 1.5\n")
    odd = tmp_path / "odd" / "odd-3.dist-info"
    odd.mkdir(parents=True)
    (odd / "METADATA").write_text("Name: odd\nVersion: 3\n  folded\n")
    monkeypatch.syspath_prepend(str(archive))
    monkeypatch.syspath_prepend(str(tmp_path / "odd"))
    found = distinfo.installed_versions(["zipped", "odd", "zpi-host"])
    assert found["zipped"] == "1.5"
    assert found["odd"] == distribution("odd").metadata["Version"]
    assert found["zpi-host"] == distribution("zpi-host").version


def test_version_and_help_import_neither_importlib_metadata_nor_typing(
        tmp_path: Path) -> None:
    """``zpi-host --version`` and ``--help`` as a user runs them: the versions as
    importlib.metadata reads them, the help as the full parser prints it, and neither
    imports importlib.metadata, typing, shutil or a command module."""
    from importlib.metadata import version

    heavy = ("importlib.metadata", "typing", "shutil", "zpi_host.cli.run", "pluggy")
    code = ("import sys\nfrom zpi_host.cli import main\n"
            "try:\n    main([sys.argv[1]])\nexcept SystemExit:\n    pass\n"
            f"print('LOADED', *[m for m in {heavy!r} if m in sys.modules])")
    for flag in ("--version", "--help", "-h"):
        out = subprocess.run([sys.executable, "-c", code, flag], capture_output=True,
                             text=True, cwd=tmp_path, timeout=60,
                             env={"PATH": "/usr/bin:/bin", "COLUMNS": "70"})
        assert out.returncode == 0, out.stderr
        *shown, loaded = out.stdout.splitlines()
        assert loaded == "LOADED", (flag, loaded)
        if flag == "--version":
            assert shown[0] == f"zpi-host {version('zpi-host')}"
            assert all(line.split()[1] == version(line.split()[0]) for line in shown)
        else:
            full = subprocess.run(
                [sys.executable, "-c", "from zpi_host.cli import build_parser\n"
                 "print(build_parser().format_help(), end='')"],
                capture_output=True, text=True, cwd=tmp_path, timeout=60,
                env={"PATH": "/usr/bin:/bin", "COLUMNS": "70"})
            assert "\n".join(shown) + "\n" == full.stdout
