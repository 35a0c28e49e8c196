"""What every distribution ships, and how tox finds a Python: the built sdists and wheels
(metadata, license, long description), the messages that point at the documentation, and the
four wheels alone in a fresh venv."""

from __future__ import annotations

import ast
import configparser
import email
import email.message
import importlib.resources
import json
import os
import re
import shutil
import site
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("zpi_host", "zpi_builtins", "zpi_compat_claude", "zpi_compat_zcode")
#: a path into the repository's docs folder, which an installed package does not have
REPO_DOCS_PATH = re.compile(r"docs/[\w./#-]*\.md")
PROJECT_URLS = {
    "Homepage": "https://github.com/zpi-host/zpi-host",
    "Documentation": "https://zpi-host.readthedocs.io/",
    "Source": "https://github.com/zpi-host/zpi-host",
    "Changelog": "https://github.com/zpi-host/zpi-host/blob/main/CHANGELOG.md",
    "Issues": "https://github.com/zpi-host/zpi-host/issues",
}
CLASSIFIERS = {
    "Development Status :: 3 - Alpha",
    "Intended Audience :: Developers",
    "Operating System :: MacOS",
    "Operating System :: POSIX",
    "Operating System :: POSIX :: Linux",
    "Programming Language :: Python :: 3",
    "Programming Language :: Python :: 3 :: Only",
    "Programming Language :: Python :: 3.11",
    "Programming Language :: Python :: 3.12",
    "Programming Language :: Python :: 3.13",
    "Topic :: Software Development",
    "Typing :: Typed",
}


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


# ------------------------------------------------------------------- messages and the docs


def string_literals(tree: ast.AST) -> Iterator[ast.Constant]:
    """Every string constant of ``tree`` but the docstrings (f-string parts included)."""
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                docstrings.add(id(first.value))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and id(node) not in docstrings):
            yield node


def test_no_message_points_at_a_docs_file_of_the_repository():
    # an installed package has no docs/ folder: messages name the published pages
    found = []
    for package in PACKAGES:
        for path in sorted((REPO / package / "src").rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            found += [f"{path.relative_to(REPO)}:{node.lineno}: {node.value!r}"
                      for node in string_literals(tree) if REPO_DOCS_PATH.search(node.value)]
    assert not found, "use zpi_host.errors.docs_url(page) instead:\n" + "\n".join(found)


def test_the_ast_check_sees_messages_but_not_docstrings():
    tree = ast.parse('"""docs/a.md"""\ndef f():\n    """docs/b.md"""\n'
                     '    return f"see docs/c.md {1}" + "docs/d.md"\n')
    assert sorted(n.value for n in string_literals(tree)
                  if REPO_DOCS_PATH.search(n.value)) == ["docs/d.md", "see docs/c.md "]


def test_docs_url_is_the_published_page():
    from zpi_host.errors import DOCS_URL, HookAnswerError, docs_url

    assert DOCS_URL == "https://zpi-host.readthedocs.io/en/latest/"
    assert docs_url("hooks") == "https://zpi-host.readthedocs.io/en/latest/hooks.html"
    assert (docs_url("permissions", "secrets")
            == "https://zpi-host.readthedocs.io/en/latest/permissions.html#secrets")
    assert f"see {DOCS_URL}hooks.html for" in str(HookAnswerError("p", "zpi_stop", "bad"))


@pytest.mark.parametrize(("page", "anchor"), [("hooks", "time-budgets-and-error-policies"),
                                              ("user-guide", "models-and-credentials"),
                                              ("permissions", "secrets")])
def test_every_anchor_a_message_names_is_a_section_of_its_page(page, anchor):
    headings = [line.lstrip("#").strip() for line in
                (REPO / "docs" / f"{page}.md").read_text().splitlines() if line.startswith("#")]
    slugs = {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}
    assert anchor in slugs
    sources = "\n".join(p.read_text() for p in (REPO / "zpi_host/src").rglob("*.py"))
    assert re.search(rf"docs_url\(['\"]{page}['\"], ['\"]{anchor}['\"]\)", sources)


# -------------------------------------------------------- the built sdists and wheels


def tool(module: str) -> None:
    pytest.importorskip(module, reason=f"{module} is installed by tox (tox.ini testenv deps)")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, dict[str, Path]]:
    """Each distribution's sdist, and its wheel built from that sdist, without network
    (``--no-isolation``: hatchling comes from the test environment)."""
    for module in ("build", "hatchling", "twine", "check_wheel_contents"):
        tool(module)
    out = tmp_path_factory.mktemp("dist")
    for package in PACKAGES:
        done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir",
                               str(out), str(REPO / package)], capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
    found: dict[str, dict[str, Path]] = {}
    for package in PACKAGES:
        sdists, wheels = list(out.glob(f"{package}-*.tar.gz")), list(out.glob(f"{package}-*.whl"))
        assert len(sdists) == len(wheels) == 1, sorted(p.name for p in out.iterdir())
        found[package] = {"sdist": sdists[0], "wheel": wheels[0]}
    return found


def wheel_metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        return email.message_from_string(archive.read(name).decode("utf-8"))


@pytest.mark.slow
def test_twine_check_strict_passes(built):
    files = [str(f) for dists in built.values() for f in dists.values()]
    done = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *files],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 8, done.stdout


@pytest.mark.slow
def test_check_wheel_contents_passes(built):
    wheels = [str(dists["wheel"]) for dists in built.values()]
    done = subprocess.run([sys.executable, "-m", "check_wheel_contents", *wheels],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_the_built_in_model_catalog_is_in_the_wheel(built):
    shipped = REPO / "zpi_host/src/zpi_host/providers/catalog_data.json"
    with zipfile.ZipFile(built["zpi_host"]["wheel"]) as archive:
        assert archive.read("zpi_host/providers/catalog_data.json") == shipped.read_bytes()


@pytest.mark.slow
@pytest.mark.parametrize("package", PACKAGES)
def test_the_license_is_in_the_sdist_and_the_wheel(built, package):
    license_text = (REPO / "LICENSE").read_text()
    assert license_text.startswith("MIT License\n")
    assert "Copyright (c) 2026 ZPI host developers" in license_text
    assert (REPO / package / "LICENSE").read_text() == license_text
    sdist = built[package]["sdist"]
    with tarfile.open(sdist) as archive:
        top = sdist.name.removesuffix(".tar.gz")
        member = archive.extractfile(f"{top}/LICENSE")
        assert member is not None and member.read().decode() == license_text
    with zipfile.ZipFile(built[package]["wheel"]) as archive:
        found = [n for n in archive.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
        assert len(found) == 1 and archive.read(found[0]).decode() == license_text
    meta = wheel_metadata(built[package]["wheel"])
    assert (meta["License-Expression"], meta["License-File"]) == ("MIT", "LICENSE")
    assert not [c for c in meta.get_all("Classifier") if c.startswith("License ::")]


@pytest.mark.slow
@pytest.mark.parametrize("package", PACKAGES)
def test_the_metadata_names_the_project_and_its_platforms(built, package):
    meta = wheel_metadata(built[package]["wheel"])
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL"))
    assert urls == PROJECT_URLS
    classifiers = set(meta.get_all("Classifier"))
    assert classifiers >= CLASSIFIERS
    assert ("Framework :: Pytest" in classifiers) == (package == "zpi_host")
    assert meta["Requires-Python"] == ">=3.11"


@pytest.mark.slow
@pytest.mark.parametrize("package", PACKAGES)
def test_the_long_description_stands_alone(built, package):
    meta = wheel_metadata(built[package]["wheel"])
    assert meta["Description-Content-Type"] == "text/markdown"
    text = meta.get_payload()
    assert text.strip() == (REPO / package / "README.md").read_text().strip()
    links = re.findall(r"\]\(([^)\s]*)", text) + re.findall(r"<(\w+:[^>\s]*)>", text)
    assert links and all(link.startswith("https://") for link in links), links
    assert not REPO_DOCS_PATH.search(text) and "../" not in text
    assert "see the repository" not in text.lower()
    assert "pip install" in text


@pytest.mark.slow
def test_the_dependencies_are_bounded_and_the_line_editor_is_an_extra(built):
    requires = {p: wheel_metadata(d["wheel"]).get_all("Requires-Dist") or []
                for p, d in built.items()}
    for package in ("zpi_builtins", "zpi_compat_claude", "zpi_compat_zcode"):
        assert "zpi-host~=0.1.0" in requires[package]
    assert "zpi-compat-claude~=0.1.0" in requires["zpi_compat_zcode"]
    host = requires["zpi_host"]
    assert "prompt-toolkit>=3.0.40; extra == 'chat'" in host
    assert not [r for r in host if r.startswith("prompt-toolkit") and "extra" not in r]


@pytest.mark.parametrize("package", PACKAGES[1:])
def test_each_plugin_distribution_declares_the_distributions_it_imports(package):
    # top-level imports of other zpi packages must be declared dependencies
    with open(REPO / package / "pyproject.toml", "rb") as f:
        declared = {re.split(r"[~<>=!;\[ ]", d, maxsplit=1)[0].replace("-", "_")
                    for d in tomllib.load(f)["project"]["dependencies"]}
    imported = set()
    for path in (REPO / package / "src").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
            elif isinstance(node, ast.Import):
                imported.update(alias.name.split(".")[0] for alias in node.names)
    ours = {name for name in imported if name in PACKAGES and name != package}
    assert ours <= declared, f"{package} imports {sorted(ours - declared)} undeclared"


# ------------------------------------------------- the wheels alone, in a fresh venv


@pytest.mark.slow
def test_the_demo_runs_from_the_four_wheels_in_a_fresh_venv(built, tmp_path):
    """The wheels (not the checkout) are enough: installed with --no-deps --no-index into a
    new venv that borrows only the test environment's third-party packages, the README
    demo runs with that venv's ``zpi-host`` and imports every package from the venv."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    wheels = [str(d["wheel"]) for d in built.values()]
    done = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps",
                           "--no-index", *wheels], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    # the dependencies come from the test environment: its site-packages as plain path
    # entries, after the venv's own (their .pth files, the editable installs of this
    # checkout among them, are not processed there)
    purelib = subprocess.run([str(python), "-c", "import sysconfig; "
                              "print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    borrowed = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (Path(purelib) / "zz_test_environment.pth").write_text("\n".join(borrowed) + "\n")

    cwd = tmp_path / "elsewhere"
    (cwd / "home").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ZPI_", "OPENAI_", "ANTHROPIC_", "PYTHON", "VIRTUAL_ENV"))}
    env.update({"HOME": str(cwd / "home"), "PATH": f"{venv / 'bin'}:{env.get('PATH', '')}"})
    code = ("import json, zpi_host, zpi_builtins, zpi_compat_claude, zpi_compat_zcode\n"
            "from importlib.metadata import distribution\n"
            "print(json.dumps({m.__name__: m.__file__ for m in (zpi_host, zpi_builtins, "
            "zpi_compat_claude, zpi_compat_zcode)}))\n")
    where = subprocess.run([str(python), "-c", code], capture_output=True, text=True,
                           cwd=cwd, env=env, timeout=60)
    assert where.returncode == 0, where.stderr
    for name, file in json.loads(where.stdout).items():
        assert Path(file).is_relative_to(venv), (name, file)
    assert shutil.which("zpi-host", path=env["PATH"]) == str(venv / "bin" / "zpi-host")

    demo = subprocess.run(["bash", str(REPO / "examples/demo/run.sh")], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=120)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "Hello, world!" in demo.stdout
    for dist in ("zpi-builtins 0.1.0", "zpi-compat-claude 0.1.0", "zpi-compat-zcode 0.1.0"):
        assert dist in demo.stdout  # the --list-plugins table at the end
    assert not (cwd / "home" / ".zpi").exists()
