"""ResourceLoader: skills, commands, agent definitions and context files from real folders."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from zpi_host.resources import (
    Command,
    ResourceLoader,
    ResourceSource,
    Skill,
    expand_template,
    split_arguments,
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def skill_text(name: str | None, description: str | None = "Does a thing.",
               body: str = "Skill body.", extra: str = "") -> str:
    lines = ["---"]
    if name is not None:
        lines.append(f"name: {name}")
    if description is not None:
        lines.append(f"description: {description}")
    if extra:
        lines.append(extra)
    lines += ["---", body, ""]
    return "\n".join(lines)


@pytest.fixture
def agent_dir(tmp_path: Path) -> Path:
    path = tmp_path / "agent"
    path.mkdir()
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "work" / "project"
    path.mkdir(parents=True)
    return path


def load(project: Path, agent_dir: Path, **kwargs) -> ResourceLoader:
    return ResourceLoader(project, agent_dir, **kwargs).load()


def problems(loader: ResourceLoader) -> list[str]:
    return [str(d) for d in loader.diagnostics]


# -- skills ------------------------------------------------------------------------------------


def test_valid_skill_is_found_without_its_body(project, agent_dir):
    path = write(project / ".zpi/skills/pdf-tools/SKILL.md",
                 skill_text("pdf-tools", "Fill PDF forms.", body="SECRET BODY"))
    loader = load(project, agent_dir)
    assert loader.diagnostics == ()
    (skill,) = loader.skills
    assert skill == loader.skill("pdf-tools")
    assert (skill.name, skill.description, skill.path) == ("pdf-tools", "Fill PDF forms.", path)
    assert skill.root == path.parent
    assert skill.origin == "project"
    assert skill.namespace is None
    assert skill.metadata["name"] == "pdf-tools"
    assert "SECRET BODY" not in repr(skill)
    assert skill.body() == "SECRET BODY"
    hash(skill)  # frozen and shareable, metadata notwithstanding


def test_skill_body_is_read_on_demand(project, agent_dir):
    path = write(project / ".zpi/skills/a/SKILL.md", skill_text("a", body="old"))
    (skill,) = load(project, agent_dir).skills
    write(path, skill_text("a", body="new"))
    assert skill.body() == "new"


def test_skill_name_defaults_to_folder(project, agent_dir):
    write(project / ".zpi/skills/from-folder/SKILL.md", skill_text(None))
    assert [s.name for s in load(project, agent_dir).skills] == ["from-folder"]


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("a" * 65, "the limit is 64"),
        ("Pdf", "lowercase letters, digits and single hyphens"),
        ("pdf--tools", "single hyphens"),
        ("-pdf", "single hyphens"),
        ("pdf-", "single hyphens"),
        ("pdf_tools", "single hyphens"),
    ],
)
def test_invalid_skill_names_are_skipped(project, agent_dir, name, fragment):
    path = write(project / ".zpi/skills" / name / "SKILL.md", skill_text(name))
    loader = load(project, agent_dir)
    assert loader.skills == ()
    (diagnostic,) = loader.diagnostics
    assert diagnostic.path == path
    assert diagnostic.kind == "skill"
    assert fragment in diagnostic.problem
    assert str(path) in str(diagnostic)


def test_64_character_name_is_accepted(project, agent_dir):
    name = "a" * 64
    write(project / ".zpi/skills" / name / "SKILL.md", skill_text(name))
    assert [s.name for s in load(project, agent_dir).skills] == [name]


def test_skill_name_must_match_folder(project, agent_dir):
    write(project / ".zpi/skills/folder/SKILL.md", skill_text("other"))
    loader = load(project, agent_dir)
    assert loader.skills == ()
    assert "differs from its folder name 'folder'" in loader.diagnostics[0].problem


@pytest.mark.parametrize(
    ("description", "fragment"),
    [
        (None, "has no 'description'"),
        ('""', "'description' is empty"),
        ("x" * 1025, "1025 characters long; the limit is 1024"),
        ("[a, b]", "'description' must be text"),
    ],
)
def test_skill_description_rules(project, agent_dir, description, fragment):
    write(project / ".zpi/skills/s/SKILL.md", skill_text("s", description))
    loader = load(project, agent_dir)
    assert loader.skills == ()
    assert fragment in loader.diagnostics[0].problem


def test_1024_character_description_is_accepted(project, agent_dir):
    write(project / ".zpi/skills/s/SKILL.md", skill_text("s", "x" * 1024))
    assert len(load(project, agent_dir).skills) == 1


def test_wrong_field_type_is_a_diagnostic(project, agent_dir):
    write(project / ".zpi/skills/s/SKILL.md",
          skill_text("s", extra='disable-model-invocation: "yes"'))
    loader = load(project, agent_dir)
    assert loader.skills == ()
    assert "'disable-model-invocation' must be true or false" in loader.diagnostics[0].problem


def test_malformed_yaml_names_file_and_line(project, agent_dir):
    path = write(project / ".zpi/skills/s/SKILL.md",
                 "---\nname: s\ndescription: d\n  oops: x\n---\nbody\n")
    write(project / ".zpi/skills/good/SKILL.md", skill_text("good"))
    loader = load(project, agent_dir)
    assert [s.name for s in loader.skills] == ["good"]
    (diagnostic,) = loader.diagnostics
    assert diagnostic.path == path
    assert diagnostic.problem.startswith("line 4: invalid YAML")
    assert str(diagnostic).startswith(f"{path}: line 4")


def test_folders_without_skill_md_and_stray_files_are_ignored(project, agent_dir):
    write(project / ".zpi/skills/README.md", "not a skill")
    write(project / ".zpi/skills/empty/notes.md", "no SKILL.md here")
    write(project / ".zpi/skills/.hidden/SKILL.md", skill_text(".hidden"))
    loader = load(project, agent_dir)
    assert loader.skills == () and loader.diagnostics == ()


def test_missing_folders_are_empty(tmp_path):
    loader = load(tmp_path / "nowhere", tmp_path / "no-agent-dir")
    assert (loader.skills, loader.commands, loader.agents, loader.diagnostics) == ((),) * 4


def test_symlinked_skill_folder_is_followed_within_the_project(project, agent_dir):
    write(project / "shared/linked/SKILL.md", skill_text("linked"))
    (project / ".zpi/skills").mkdir(parents=True)
    os.symlink(project / "shared/linked", project / ".zpi/skills/linked")
    assert [s.name for s in load(project, agent_dir).skills] == ["linked"]


def test_a_skill_linked_out_of_the_project_is_a_problem_not_read(project, agent_dir, tmp_path):
    """A repository's ``.zpi`` may not make the host read the user's files elsewhere."""
    write(tmp_path / "shared/linked/SKILL.md", skill_text("linked"))
    (project / ".zpi/skills").mkdir(parents=True)
    os.symlink(tmp_path / "shared/linked", project / ".zpi/skills/linked")
    loader = load(project, agent_dir)
    assert loader.skills == ()
    [problem] = loader.diagnostics
    assert (problem.kind, problem.path) == ("skill", project / ".zpi/skills/linked/SKILL.md")
    assert problem.problem.startswith(f"it leads to {tmp_path}/shared/linked/SKILL.md, "
                                      f"outside {project}; it was not read")


# -- skills_prompt -----------------------------------------------------------------------------


def test_skills_prompt_lists_name_description_location_not_body(project, agent_dir):
    path = write(project / ".zpi/skills/pdf/SKILL.md",
                 skill_text("pdf", "Read <PDF> & forms.", body="BODY-MARKER"))
    write(project / ".zpi/skills/hidden/SKILL.md",
          skill_text("hidden", extra="disable-model-invocation: true", body="HIDDEN-MARKER"))
    loader = load(project, agent_dir)
    assert len(loader.skills) == 2
    prompt = loader.skills_prompt()
    assert "<name>pdf</name>" in prompt
    assert "<description>Read &lt;PDF&gt; &amp; forms.</description>" in prompt
    assert f"<location>{path}</location>" in prompt
    assert "read tool" in prompt
    assert "BODY-MARKER" not in prompt
    assert "hidden" not in prompt


def test_skills_prompt_empty_without_skills(project, agent_dir):
    assert load(project, agent_dir).skills_prompt() == ""


# -- commands ----------------------------------------------------------------------------------


def test_commands_flat_and_nested(project, agent_dir):
    write(project / ".zpi/commands/review.md", "# Review the diff\n\nLook at $ARGUMENTS.\n")
    write(project / ".zpi/commands/git/commit.md",
          "---\ndescription: Commit staged work\nargument-hint: [message]\n"
          "allowed-tools: Bash(git add:*), Bash(git commit:*), Read\nmodel: fast\n"
          "disable-model-invocation: true\n---\nCommit with message $ARGUMENTS\n")
    write(project / ".zpi/commands/git/deep/log.md", "Show the log")
    write(project / ".zpi/commands/notes.txt", "not markdown")
    loader = load(project, agent_dir)
    assert loader.diagnostics == ()
    assert [c.name for c in loader.commands] == ["git:commit", "git:deep:log", "review"]
    review = loader.command("/review")
    assert review is not None
    assert review.description == "Review the diff"  # default: first line of the body
    assert review.expand("src/") == "# Review the diff\n\nLook at src/."
    commit = loader.command("git:commit")
    assert commit is not None
    assert commit.description == "Commit staged work"
    assert commit.argument_hint == "[message]"
    assert commit.allowed_tools == ("Bash(git add:*)", "Bash(git commit:*)", "Read")
    assert commit.model == "fast"
    assert commit.disable_model_invocation is True
    assert commit.origin == "project"
    assert commit.path == project / ".zpi/commands/git/commit.md"
    assert commit.body == "Commit with message $ARGUMENTS"


def test_command_with_bad_file_name_or_fields(project, agent_dir):
    write(project / ".zpi/commands/two words.md", "x")
    write(project / ".zpi/commands/typed.md", "---\ndescription: 12\n---\nx")
    write(project / ".zpi/commands/tools.md", "---\nallowed-tools: {a: 1}\n---\nx")
    write(project / ".zpi/commands/latin1.md", "")
    (project / ".zpi/commands/latin1.md").write_bytes(b"caf\xe9")
    loader = load(project, agent_dir)
    assert loader.commands == ()
    found = {d.path.name: d.problem for d in loader.diagnostics if d.path}
    assert "may only use letters" in found["two words.md"]
    assert "'description' must be text" in found["typed.md"]
    assert "'allowed-tools' must be" in found["tools.md"]
    assert "not UTF-8" in found["latin1.md"]


def test_command_symlink_loop_is_skipped(project, agent_dir):
    write(project / ".zpi/commands/sub/a.md", "A")
    os.symlink(project / ".zpi/commands", project / ".zpi/commands/sub/loop")
    loader = load(project, agent_dir)
    assert [c.name for c in loader.commands] == ["sub:a"]
    (diagnostic,) = loader.diagnostics
    assert diagnostic.path == project / ".zpi/commands/sub/loop"
    assert "already scanned" in diagnostic.problem


def test_symlinked_command_folder_is_followed_within_the_project(project, agent_dir):
    write(project / "shared-cmds/x.md", "X")
    (project / ".zpi/commands").mkdir(parents=True)
    os.symlink(project / "shared-cmds", project / ".zpi/commands/team")
    assert [c.name for c in load(project, agent_dir).commands] == ["team:x"]


@pytest.mark.parametrize("kind", ["commands", "agents"])
def test_hostile_command_and_agent_files_are_problems(project, agent_dir, tmp_path, kind):
    """A FIFO (would block), a device (never ends), a link out of the project and a file
    over the limit: each one a problem of its file, none read, the load finishes."""
    from zpi_host.fs.shipped import TEXT_LIMIT

    folder = project / ".zpi" / kind
    folder.mkdir(parents=True)
    write(tmp_path / "private.md", "PRIVATE")
    os.mkfifo(folder / "fifo.md")
    os.symlink("/dev/zero", folder / "zero.md")
    os.symlink(tmp_path / "private.md", folder / "out.md")
    (folder / "big.md").write_text("x" * (TEXT_LIMIT + 1))
    loader = load(project, agent_dir)
    assert loader.commands == () and loader.agents == ()
    problems = {d.path.name: d.problem for d in loader.diagnostics}
    assert problems["fifo.md"].startswith("it is a FIFO (named pipe), not a regular file")
    assert problems["zero.md"].startswith("it is a symlink to /dev/zero, outside")
    assert problems["out.md"].startswith(f"it is a symlink to {tmp_path}/private.md")
    assert problems["big.md"].startswith(f"it is {TEXT_LIMIT + 1} bytes, more than the 4 MiB")
    assert {d.kind for d in loader.diagnostics} == {kind[:-1]}


def test_the_users_own_commands_may_link_anywhere(project, agent_dir, tmp_path):
    write(tmp_path / "dotfiles/x.md", "X")
    (agent_dir / "commands").mkdir()
    os.symlink(tmp_path / "dotfiles/x.md", agent_dir / "commands/x.md")
    assert [c.name for c in load(project, agent_dir).commands] == ["x"]


# -- placeholders ------------------------------------------------------------------------------


def test_expand_arguments_and_indexes():
    template = "all=[$ARGUMENTS] first=[$ARGUMENTS[0]] second=[$1] zero=[$0] none=[$5]"
    assert expand_template(template, ' "two words" b ') == (
        'all=["two words" b] first=[two words] second=[b] zero=[two words] none=[]'
    )


def test_expand_unbalanced_quotes_fall_back_to_whitespace():
    assert split_arguments("it's fine") == ["it's", "fine"]
    assert expand_template("$0|$1", "it's fine") == "it's|fine"


def test_expand_does_not_rescan_and_keeps_unrelated_dollars():
    assert expand_template("say $ARGUMENTS", "$0 $ARGUMENTS") == "say $0 $ARGUMENTS"
    assert expand_template("$ARGUMENTSX $HOME $1x $ $ARGUMENTS", "a") == "$ARGUMENTSX $HOME $1x $ a"


def test_expand_multi_digit_index():
    words = " ".join(str(i) for i in range(12))
    assert expand_template("$10-$ARGUMENTS[11]", words) == "10-11"


def test_expand_appends_arguments_when_no_placeholder():
    expanded = expand_template("Do the thing.", "now please")
    assert expanded == "Do the thing.\n\nARGUMENTS: now please"
    assert expand_template("Do the thing.", "  ") == "Do the thing."
    assert expand_template("Use $0.", "x y") == "Use x."


# -- commands in code --------------------------------------------------------------------------


def test_code_commands_validated_and_colliding(project, agent_dir):
    write(project / ".zpi/commands/deploy.md", "Deploy from file")
    seen = []
    commands = [
        Command("deploy", "from code", template="x", origin="ops"),  # file wins
        Command("status", "Show status", handler=seen.append, origin="ops"),
        Command("ops:run", "Run", template="Run $0", origin="ops"),
        Command("/slash", "bad", template="x", origin="ops"),
        Command("bad name", "bad", template="x", origin="ops"),
        Command("neither", "bad", origin="ops"),
        Command("both", "bad", template="x", handler=print, origin="ops"),
        "not a command",
    ]
    loader = load(project, agent_dir, commands=commands)
    assert [c.name for c in loader.commands] == ["deploy", "status", "ops:run"]
    assert loader.command("deploy").template == "Deploy from file"
    assert loader.command("ops:run").expand("fast") == "Run fast"
    status = loader.command("status")
    status.handler("now")
    assert seen == ["now"]
    with pytest.raises(TypeError, match="runs code"):
        status.expand("x")
    found = problems(loader)
    assert len(found) == 6
    assert "already taken by" in found[0] and str(project / ".zpi/commands/deploy.md") in found[0]
    assert "without the leading '/'" in found[1]
    assert "may only use letters" in found[2]
    assert "exactly one of template= or handler=" in found[3]
    assert "exactly one of template= or handler=" in found[4]
    assert "not a zpi_host.resources.Command" in found[5]
    assert all(d.path is None and d.kind == "command" for d in loader.diagnostics)


# -- sources and namespaces --------------------------------------------------------------------


def test_plugin_source_namespaces_every_kind(project, agent_dir, tmp_path):
    root = tmp_path / "plugin"
    write(root / "skills/helper/SKILL.md", skill_text("helper"))
    write(root / "commands/git/commit.md", "Commit")
    write(root / "agents/reviewer.md", "---\ndescription: Reviews\n---\nYou review.")
    source = ResourceSource(root, namespace="myplugin", origin="myplugin")
    loader = load(project, agent_dir, sources=[source])
    assert [s.name for s in loader.skills] == ["myplugin:helper"]
    assert loader.skill("myplugin:helper").namespace == "myplugin"
    assert loader.skill("myplugin:helper").origin == "myplugin"
    assert loader.command("/myplugin:git:commit") is not None
    assert [a.name for a in loader.agents] == ["myplugin:reviewer"]
    assert loader.diagnostics == ()


def test_source_kinds_limit_what_is_read(project, agent_dir, tmp_path):
    root = tmp_path / "plugin"
    write(root / "skills/helper/SKILL.md", skill_text("helper"))
    write(root / "commands/c.md", "C")
    write(root / "AGENTS.md", "plugin context")
    loader = load(project, agent_dir, sources=[ResourceSource(root, kinds="skills")])
    assert [s.name for s in loader.skills] == ["helper"]
    assert loader.commands == ()
    assert all(c.path.parent != root for c in loader.context_files)
    loader = load(project, agent_dir, sources=[ResourceSource(root, kinds={"context"})])
    assert loader.skills == ()
    assert loader.context_files[-1].path == root / "AGENTS.md"


def test_resource_source_validation(tmp_path):
    with pytest.raises(ValueError, match="unknown resource kind"):
        ResourceSource(tmp_path, kinds={"skills", "hooks"})
    with pytest.raises(ValueError, match="namespace"):
        ResourceSource(tmp_path, namespace="has space")
    assert ResourceSource(str(tmp_path)).root == tmp_path


def test_duplicates_first_source_wins(project, agent_dir, tmp_path):
    write(agent_dir / "skills/same/SKILL.md", skill_text("same", "from the agent dir"))
    later = write(project / ".zpi/skills/same/SKILL.md", skill_text("same", "from the project"))
    write(project / ".zpi/commands/c.md", "project c")
    plugin_c = write(tmp_path / "plugin/commands/c.md", "plugin c")
    write(project / ".zpi/agents/a.md", "---\ndescription: project a\n---\np")
    plugin_a = write(tmp_path / "plugin/agents/a.md", "---\ndescription: plugin a\n---\np")
    loader = load(project, agent_dir, sources=[ResourceSource(tmp_path / "plugin", origin="p")])
    assert loader.skill("same").description == "from the agent dir"
    assert loader.skill("same").origin == "agent"
    assert loader.command("c").template == "project c"
    assert loader.agents[0].description == "project a"
    assert [(d.path, d.kind) for d in loader.diagnostics] == [
        (later, "skill"), (plugin_c, "command"), (plugin_a, "agent")]
    assert "'same' is already taken by" in loader.diagnostics[0].problem
    assert loader.diagnostics[1].origin == "p"


def test_invalid_source_object_is_a_diagnostic(project, agent_dir):
    loader = load(project, agent_dir, sources=["/not/a/source"])
    assert loader.diagnostics[0].kind == "source"


# -- agents ------------------------------------------------------------------------------------


def test_agent_definitions(project, agent_dir):
    write(project / ".zpi/agents/reviewer.md",
          "---\ndescription: Reviews code\ntools: Read, Grep, Bash(git diff:*)\nmodel: inherit\n"
          "---\nYou are a reviewer.\n")
    write(project / ".zpi/agents/team/planner.md",
          "---\nname: planner-x\ndescription: Plans\ntools: [read, bash]\ncolor: blue\n---\nPlan.")
    write(project / ".zpi/agents/bare.md", "---\ndescription: All tools\n---\nGo.")
    loader = load(project, agent_dir)
    assert loader.diagnostics == ()
    reviewer = loader.agent("reviewer")
    assert reviewer is not None
    assert reviewer.tools == ("Read", "Grep", "Bash(git diff:*)")
    assert reviewer.model == "inherit"
    assert reviewer.prompt == "You are a reviewer."
    assert reviewer.path == project / ".zpi/agents/reviewer.md"
    planner = loader.agent("planner-x")
    assert planner.tools == ("read", "bash")
    assert planner.metadata["color"] == "blue"
    assert loader.agent("bare").tools is None


def test_agent_problems(project, agent_dir):
    write(project / ".zpi/agents/nodesc.md", "---\nname: nodesc\n---\nbody")
    write(project / ".zpi/agents/tools.md", "---\ndescription: d\ntools: 3\n---\nbody")
    write(project / ".zpi/agents/model.md", "---\ndescription: d\nmodel: [a]\n---\nbody")
    loader = load(project, agent_dir)
    assert loader.agents == ()
    found = {d.path.name: d.problem for d in loader.diagnostics}
    assert "has no 'description'" in found["nodesc.md"]
    assert "'tools' must be" in found["tools.md"]
    assert "'model' must be text" in found["model.md"]


# -- context files -----------------------------------------------------------------------------


def test_context_files_from_agent_dir_then_root_to_cwd(tmp_path, agent_dir, project):
    write(agent_dir / "AGENTS.md", "agent-wide")
    write(tmp_path / "CLAUDE.md", "top claude")  # fallback: no AGENTS.md there
    write(tmp_path / "work/AGENTS.md", "work agents")
    write(tmp_path / "work/CLAUDE.md", "work claude (shadowed)")
    write(project / "AGENTS.md", "project agents")
    loader = load(project, agent_dir)
    mine = [c for c in loader.context_files if c.path.is_relative_to(tmp_path)]
    assert [(c.path, c.text, c.origin) for c in mine] == [
        (agent_dir / "AGENTS.md", "agent-wide", "agent"),
        (tmp_path / "CLAUDE.md", "top claude", "project"),
        (tmp_path / "work/AGENTS.md", "work agents", "project"),
        (project / "AGENTS.md", "project agents", "project"),
    ]
    prompt = loader.context_prompt()
    positions = [prompt.index(f"## {c.path}\n\n{c.text}") for c in mine]
    assert positions == sorted(positions)
    assert "work claude" not in prompt


def test_context_file_in_agent_dir_falls_back_to_claude_md(project, agent_dir):
    write(agent_dir / "CLAUDE.md", "claude-wide")
    loader = load(project, agent_dir)
    assert loader.context_files[0].path == agent_dir / "CLAUDE.md"


def test_unreadable_context_file_is_a_diagnostic(project, agent_dir):
    (project / "AGENTS.md").write_bytes(b"\xff\xfe bad")
    loader = load(project, agent_dir)
    assert loader.diagnostics[0].path == project / "AGENTS.md"
    assert "not UTF-8" in loader.diagnostics[0].problem


def test_context_prompt_empty_without_files(project, agent_dir):
    loader = load(project, agent_dir)
    if not loader.context_files:  # a stray AGENTS.md above tmp_path would be legitimate
        assert loader.context_prompt() == ""


# -- refresh and fingerprint -------------------------------------------------------------------


def test_refresh_picks_up_new_and_removed_files_in_place(project, agent_dir):
    loader = load(project, agent_dir)
    assert loader.skills == ()
    write(project / ".zpi/skills/new/SKILL.md", skill_text("new"))
    write(project / ".zpi/commands/c.md", "C")
    assert loader.refresh() is loader
    assert [s.name for s in loader.skills] == ["new"]
    assert [c.name for c in loader.commands] == ["c"]
    (project / ".zpi/commands/c.md").unlink()
    loader.refresh()
    assert loader.commands == ()


def _touch_later(path: Path) -> None:
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))


def test_fingerprint_is_stable_and_changes_on_edit(project, agent_dir):
    path = write(project / ".zpi/skills/s/SKILL.md", skill_text("s"))
    loader = load(project, agent_dir)
    first = loader.fingerprint()
    assert first == loader.fingerprint() == loader.refresh().fingerprint()
    assert first == load(project, agent_dir).fingerprint()
    write(path, skill_text("s", "An edited description."))
    _touch_later(path)
    assert loader.fingerprint() != first


def test_fingerprint_changes_when_a_file_appears(project, agent_dir):
    (project / ".zpi/commands").mkdir(parents=True)
    loader = load(project, agent_dir)
    before = loader.fingerprint()
    write(project / "AGENTS.md", "new context")
    assert loader.fingerprint() != before
    before = loader.fingerprint()
    write(project / ".zpi/commands/new.md", "N")
    _touch_later(project / ".zpi/commands")
    assert loader.fingerprint() != before


def test_fingerprint_covers_skipped_files(project, agent_dir):
    path = write(project / ".zpi/skills/s/SKILL.md", skill_text("S"))
    loader = load(project, agent_dir)
    assert loader.skills == ()
    before = loader.fingerprint()
    write(path, skill_text("s"))  # the fix shows in the fingerprint
    assert loader.fingerprint() != before


# -- cost ------------------------------------------------------------------------------------


def test_import_does_not_load_yaml():
    code = ("import sys, zpi_host.resources; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('yaml', 'frontmatter')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_many_resources_load(project, agent_dir):
    for index in range(120):
        write(project / f".zpi/skills/s{index}/SKILL.md", skill_text(f"s{index}"))
        write(project / f".zpi/commands/c{index}.md", f"Command {index}")
    loader = load(project, agent_dir)
    assert len(loader.skills) == 120 and len(loader.commands) == 120
    assert loader.diagnostics == ()
    assert all(isinstance(s, Skill) for s in loader.skills)
    assert attrs.fields(Skill).metadata.hash is False
