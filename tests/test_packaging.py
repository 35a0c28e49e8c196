"""What every distribution ships, and how tox finds a Python: the built sdists and wheels
(metadata, license, long description), the messages that point at the documentation, and the
four wheels alone in a fresh venv."""

from __future__ import annotations

import ast
import configparser
import importlib.resources
import re
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
