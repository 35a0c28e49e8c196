"""``@path`` imports of ``CLAUDE.md`` files: relative to the importing file, ``~/``, five hops,
not inside code, cycles read once, and a repository's file kept inside its folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from zpi_host.resources import ResourceLoader
from zpi_host.resources.imports import IMPORT_DEPTH, find_imports


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "work" / "project"
    path.mkdir(parents=True)
    return path


def mine(loader: ResourceLoader, under: Path) -> list[tuple[Path, str]]:
    return [(c.path, c.text) for c in loader.context_files if c.path.is_relative_to(under)]


def test_find_imports_skips_code_and_reads_escaped_spaces():
    text = ("See @docs/a.md and @b.md.\n"
            "mail me@example.com\n"
            "`@in-span.md` and ``@double `x` span.md``\n"
            "```\n@in-fence.md\n```\n"
            "~~~md\n@in-tilde.md\n~~~\n"
            "@my\\ notes.md @~/home.md")
    assert find_imports(text) == ["docs/a.md", "b.md.", "my notes.md", "~/home.md"]


def test_imports_relative_to_the_importing_file_depth_first(tmp_path, project):
    agent = tmp_path / "agent"
    write(project / "CLAUDE.md", "Root. @docs/style.md then @missing.md and @someone")
    write(project / "docs/style.md", "Style. @../rules/naming.md.")
    write(project / "rules/naming.md", "Naming.")
    loader = ResourceLoader(project, agent).load()
    assert mine(loader, project) == [
        (project / "CLAUDE.md", "Root. @docs/style.md then @missing.md and @someone"),
        (project / "docs/style.md", "Style. @../rules/naming.md."),
        (project / "rules/naming.md", "Naming."),
    ]
    prompt = loader.context_prompt()
    assert prompt.index("Root.") < prompt.index("Style.") < prompt.index("Naming.")
    assert not loader.diagnostics


def test_depth_limit_and_cycles(tmp_path, project):
    agent = tmp_path / "agent"
    write(project / "CLAUDE.md", "@f1.md @CLAUDE.md")
    for i in range(1, IMPORT_DEPTH + 3):
        write(project / f"f{i}.md", f"file {i} @f{i + 1}.md @f1.md")
    loader = ResourceLoader(project, agent).load()
    names = [p.name for p, _ in mine(loader, project)]
    assert names == ["CLAUDE.md", *(f"f{i}.md" for i in range(1, IMPORT_DEPTH + 1))]


def test_home_imports_for_the_users_file_only(tmp_path, project, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    write(home / "private.md", "SECRET from home")
    agent = tmp_path / "agent"
    write(agent / "CLAUDE.md", "Mine. @~/private.md")
    write(project / "CLAUDE.md", "Shipped. @~/private.md @../../outside.md")
    write(tmp_path / "outside.md", "outside the project")
    loader = ResourceLoader(project, agent).load()
    texts = [c.text for c in loader.context_files]
    assert texts.count("SECRET from home") == 1  # through the user's file
    assert "outside the project" not in texts
    shipped = [d for d in loader.diagnostics if d.origin == "project"]
    assert {d.path for d in shipped} == {project.parent.parent / "outside.md"}
    assert all("outside" in d.problem for d in shipped)


def test_a_shipped_import_of_a_home_file_is_refused(tmp_path, project, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    write(home / ".aws/credentials", "key=abc")
    write(project / "CLAUDE.md", "@~/.aws/credentials")
    loader = ResourceLoader(project, tmp_path / "agent").load()
    assert "key=abc" not in loader.context_prompt()
    (problem,) = [d for d in loader.diagnostics if d.path == home / ".aws/credentials"]
    assert "outside" in problem.problem


def test_agents_md_imports_nothing(tmp_path, project):
    write(project / "AGENTS.md", "@notes.md")
    write(project / "notes.md", "notes")
    loader = ResourceLoader(project, tmp_path / "agent").load()
    assert [p.name for p, _ in mine(loader, project)] == ["AGENTS.md"]


def test_an_edited_import_refreshes_the_context(tmp_path, project):
    write(project / "CLAUDE.md", "@part.md")
    part = write(project / "part.md", "before")
    loader = ResourceLoader(project, tmp_path / "agent").load()
    assert "before" in loader.context_prompt()
    part.write_text("after, longer")
    loader.refresh()
    assert "after, longer" in loader.context_prompt()


def test_claude_local_md_is_read_after_each_project_folders_file_with_its_imports(
        tmp_path, project, monkeypatch):
    """Claude Code's project-local memory: ``CLAUDE.local.md`` in the working directory and
    each folder above it, after that folder's ``AGENTS.md``/``CLAUDE.md`` (so it is the more
    specific), with ``@path`` imports kept inside its folder as a shipped ``CLAUDE.md``'s."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    write(home / "private.md", "SECRET from home")
    write(project.parent / "CLAUDE.local.md", "parent local")
    write(project / "AGENTS.md", "shared")
    write(project / "CLAUDE.local.md", "mine here @sandbox.md @~/private.md")
    write(project / "sandbox.md", "sandbox url")
    loader = ResourceLoader(project, tmp_path / "agent").load()
    assert [(p.relative_to(tmp_path).as_posix(), t) for p, t in mine(loader, tmp_path)] == [
        ("work/CLAUDE.local.md", "parent local"),
        ("work/project/AGENTS.md", "shared"),
        ("work/project/CLAUDE.local.md", "mine here @sandbox.md @~/private.md"),
        ("work/project/sandbox.md", "sandbox url"),
    ]
    assert {c.origin for c in loader.context_files if c.path.name == "CLAUDE.local.md"} == \
        {"local"}
    assert "SECRET from home" not in loader.context_prompt()
    (problem,) = [d for d in loader.diagnostics if d.path == home / "private.md"]
    assert problem.origin == "local" and "outside" in problem.problem


def test_claude_local_md_comes_with_the_local_source_only(tmp_path, project):
    """As Claude Code ties it to its local settings: ``local`` alone reads the
    ``CLAUDE.local.md`` files and no ``CLAUDE.md``; ``project`` alone the reverse."""
    write(project / "CLAUDE.md", "team")
    write(project / "CLAUDE.local.md", "mine")
    only_local = ResourceLoader(project, tmp_path / "agent", file_origins=["local"]).load()
    assert [t for _, t in mine(only_local, project)] == ["mine"]
    only_project = ResourceLoader(project, tmp_path / "agent", file_origins=["project"]).load()
    assert [t for _, t in mine(only_project, project)] == ["team"]
