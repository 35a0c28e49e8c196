"""Every plugin of Anthropic's official marketplace (the plugin folders of the
``claude-plugins-official`` repository and of ``claude-code``'s ``plugins/``, vendored
unchanged under tests/fixtures/claude_plugins_official) loads with this host: ``--list-plugins``
lists what its files declare, and in a session against the scripted model each of its
commands expands and reaches the model, each skill loads through the ``skill`` tool and each
agent runs as a sub-agent. The hooks' effects are in test_marketplace_hooks.py; what differs
from Claude Code is in docs/claude-plugins.md, "The official marketplace"."""

from __future__ import annotations

import json
import subprocess

import pytest
from helpers.cli import EXE, clean_environment
from helpers.marketplace import (
    FIXTURES,
    REPOSITORIES,
    body,
    every_plugin,
    frontmatter_name,
    frontmatter_value,
    plain_line,
    plugin_dirs,
)

from zpi_host.providers.messages import ToolResultMessage
from zpi_host.session.assembly import create_session
from zpi_host.testing import FunctionModel, ModelServer, ScriptedModel

pytestmark = pytest.mark.anyio
FIXTURES_PLUGIN_DEV = FIXTURES / "claude-code" / "plugins" / "plugin-dev"

# What each folder contributes, as Claude Code names it (c: commands, a: agents, s: skills,
# h: hook events, m: MCP servers; names without the plugin prefix). Read off the plugins'
# files: command file paths, agents' and skills' frontmatter `name` (a skill's folder when
# its `name` is not a valid skill name, as plugin-dev's "Agent Development"), hooks.json's
# events, .mcp.json's servers. The LSP plugins contribute nothing from their folders: their
# servers are declared in the marketplace's own marketplace.json (`strict: false`).
EXPECTED = {
    'claude-plugins-official': {
        'agent-sdk-dev': 'c=new-sdk-app a=agent-sdk-verifier-py,agent-sdk-verifier-ts',
        'asana': 'c=asana-setup',
        'clangd-lsp': '',
        'claude-code-setup': 's=claude-automation-recommender',
        'claude-md-management': 'c=revise-claude-md s=claude-md-improver',
        'claude-security': (
            'a=claude-security,explore,patch-generator,patch-verifier,scan-inventory,'
            'scan-researcher,scan-verifier '
            's=claude-security'
        ),
        'code-modernization': (
            'c=modernize-assess,modernize-brief,modernize-extract-rules,modernize-harden,'
            'modernize-map,modernize-preflight,modernize-reimagine,modernize-status,'
            'modernize-transform,modernize-uplift '
            'a=architecture-critic,business-rules-extractor,legacy-analyst,scaffolder,'
            'security-auditor,test-engineer,uplift-migrator,version-delta-analyst'
        ),
        'code-review': 'c=code-review',
        'code-simplifier': 'a=code-simplifier',
        'commit-commands': 'c=clean_gone,commit,commit-push-pr',
        'context7': 'm=context7',
        'csharp-lsp': '',
        'cwc-makers': 'c=maker-setup s=cardputer-buddy,m5-onboard',
        'discord': 's=access,configure m=discord',
        'example-plugin': 'c=example-command s=example-command,example-skill m=example-server',
        'explanatory-output-style': 'h=SessionStart',
        'fakechat': 'm=fakechat',
        'feature-dev': 'c=feature-dev a=code-architect,code-explorer,code-reviewer',
        'firebase': 'm=firebase',
        'frontend-design': 's=frontend-design',
        'github': 'm=github',
        'gitlab': 'm=gitlab',
        'gopls-lsp': '',
        'greptile': 'm=greptile',
        'hookify': (
            'c=configure,help,hookify,list '
            'a=conversation-analyzer '
            's=writing-hookify-rules '
            'h=PostToolUse,PreToolUse,Stop,UserPromptSubmit'
        ),
        'imessage': 's=access,configure m=imessage',
        'jdtls-lsp': '',
        'kotlin-lsp': '',
        'laravel-boost': 'm=laravel-boost',
        'learning-output-style': 'h=SessionStart',
        'linear': 'm=linear',
        'lua-lsp': '',
        'math-olympiad': 's=math-olympiad',
        'mcp-server-dev': 's=build-mcp-app,build-mcp-server,build-mcpb',
        'mcp-tunnels': 'c=create-docker-mcp-tunnel',
        'php-lsp': '',
        'playground': 's=playground',
        'playwright': 'm=playwright',
        'plugin-dev': (
            'c=create-plugin '
            'a=agent-creator,plugin-validator,skill-reviewer '
            's=agent-development,command-development,hook-development,mcp-integration,'
            'plugin-settings,plugin-structure,skill-development'
        ),
        'pr-review-toolkit': (
            'c=review-pr '
            'a=code-reviewer,code-simplifier,comment-analyzer,pr-test-analyzer,'
            'silent-failure-hunter,type-design-analyzer'
        ),
        'project-artifact': 's=project-artifact',
        'pyright-lsp': '',
        'ralph-loop': 'c=cancel-ralph,help,ralph-loop h=Stop',
        'receipts': 's=receipts',
        'ruby-lsp': '',
        'rust-analyzer-lsp': '',
        'security-guidance': 'h=PostToolUse,SessionStart,Stop,UserPromptSubmit',
        'serena': 'm=serena',
        'session-report': 's=session-report',
        'skill-creator': 's=skill-creator',
        'swift-lsp': '',
        'telegram': 's=access,configure m=telegram',
        'terraform': 'm=terraform',
        'typescript-lsp': '',
    },
    'claude-code': {
        'agent-sdk-dev': 'c=new-sdk-app a=agent-sdk-verifier-py,agent-sdk-verifier-ts',
        'claude-opus-4-5-migration': 's=claude-opus-4-5-migration',
        'code-review': 'c=code-review',
        'commit-commands': 'c=clean_gone,commit,commit-push-pr',
        'explanatory-output-style': 'h=SessionStart',
        'feature-dev': 'c=feature-dev a=code-architect,code-explorer,code-reviewer',
        'frontend-design': 's=frontend-design',
        'hookify': (
            'c=configure,help,hookify,list '
            'a=conversation-analyzer '
            's=writing-rules '
            'h=PostToolUse,PreToolUse,Stop,UserPromptSubmit'
        ),
        'learning-output-style': 'h=SessionStart',
        'plugin-dev': (
            'c=create-plugin '
            'a=agent-creator,plugin-validator,skill-reviewer '
            's=agent-development,command-development,hook-development,mcp-integration,'
            'plugin-settings,plugin-structure,skill-development'
        ),
        'pr-review-toolkit': (
            'c=review-pr '
            'a=code-reviewer,code-simplifier,comment-analyzer,pr-test-analyzer,'
            'silent-failure-hunter,type-design-analyzer'
        ),
        'ralph-wiggum': 'c=cancel-ralph,help,ralph-loop h=Stop',
        'security-guidance': 'h=PostToolUse,SessionStart,Stop,UserPromptSubmit',
    },
}

#: Claude Code events and hook features the host reads but does not have (each one a warning)
UNSUPPORTED_HOOK_WARNINGS = {
    "claude-security": ["UserPromptExpansion is a Claude Code event this host does not have"],
    "security-guidance": ['"asyncRewake" is not supported',
                          "unknown field 'rewakeMessage' ignored",
                          "unknown field 'rewakeSummary' ignored"],
}
SHORT = {"c": "commands", "a": "agents", "s": "skills", "h": "hooks", "m": "mcp servers"}


def expected_contributions(spec: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for part in spec.split():
        key, _, names = part.partition("=")
        found[SHORT[key]] = names.split(",")
    return found


def list_plugins(tmp_path, repository: str) -> dict[str, dict]:
    """``zpi-host --list-plugins --json`` with every folder of ``repository``, by name."""
    args = [a for d in plugin_dirs(repository) for a in ("--plugin-dir", str(d))]
    done = subprocess.run([EXE, "--list-plugins", "--json", "--strict", *args],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env=clean_environment(tmp_path), stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    return {row["name"].removeprefix("claude:"): row for row in json.loads(done.stdout)
            if row["source"] == "claude" and row["name"].startswith("claude:")}


@pytest.mark.parametrize("repository", sorted(REPOSITORIES))
def test_list_plugins_shows_what_each_folder_declares(tmp_path, repository):
    rows = list_plugins(tmp_path, repository)
    names = {d.name if not (d / ".claude-plugin" / "plugin.json").exists() else
             json.loads((d / ".claude-plugin" / "plugin.json").read_text())["name"]
             for d in plugin_dirs(repository)}
    assert names == set(EXPECTED[repository]) and names <= set(rows)
    for name, spec in EXPECTED[repository].items():
        row = rows[name]
        assert row["status"] == "ok", (name, row["error"])
        got = {k: sorted(v.split(":", 1)[1] if k in ("commands", "agents", "skills") else v
                         for v in values)
               for k, values in row["contributes"].items() if k != "resources"}
        assert got == expected_contributions(spec), name
        for warning in row["warnings"]:
            known = [*UNSUPPORTED_HOOK_WARNINGS.get(name, []), "must be lowercase letters"]
            assert any(k in warning for k in known), (name, warning)
    for name, needles in UNSUPPORTED_HOOK_WARNINGS.items():
        for needle in needles if name in EXPECTED[repository] else ():
            assert any(needle in w for w in rows[name]["warnings"]), (name, needle)


def components(folder, kind: str):
    """The Markdown files of ``kind`` (``commands``, ``agents``, ``skills``) in ``folder``."""
    if kind == "skills":
        return sorted((folder / "skills").glob("*/SKILL.md"))
    return sorted((folder / kind).rglob("*.md")) if (folder / kind).is_dir() else []


def name_of(folder) -> str:
    manifest = folder / ".claude-plugin" / "plugin.json"
    return json.loads(manifest.read_text())["name"] if manifest.exists() else folder.name


def with_parts(kind: str):
    return [pytest.param(folder, id=ident) for ident, folder in every_plugin()
            if components(folder, kind)]


def git_workspace(tmp_path):
    """A small git repository to run the commands in (several read `git status`)."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "app.py").write_text("print('hi')\n")
    for argv in (["init", "-q"], ["add", "."],
                 ["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "start"]):
        subprocess.run(["git", *argv], cwd=work, check=True, capture_output=True)
    return work


def sent_prompts(model: ScriptedModel) -> list[str]:
    return [r.messages[-1].text_content for r in model.requests
            if hasattr(r.messages[-1], "text_content")]


@pytest.mark.parametrize("folder", with_parts("commands"))
async def test_each_command_expands_and_reaches_the_model(zpi_env, tmp_path, folder):
    """Each command of the plugin, run as ``/<plugin>:<name> some words``, sends its body
    to the model (variables and arguments filled in, shell blocks run or refused by the
    default mode, never sent as text)."""
    work = git_workspace(tmp_path)
    plugin = name_of(folder)
    for path in components(folder, "commands"):
        command = ":".join(path.relative_to(folder / "commands").with_suffix("").parts)
        model = ScriptedModel(["ok"])
        session = await create_session(model="t:m", provider=model, cwd=work,
                                       plugin_dirs=[folder])
        try:
            await session.run(f"/{plugin}:{command} some words")
        finally:
            await session.dispose()
        prompt = sent_prompts(model)[0]
        assert plain_line(path) in prompt, (path, prompt[:400])
        assert "${CLAUDE_PLUGIN_ROOT}" not in prompt and "\n```!\n" not in prompt
        text = body(path)
        if "$ARGUMENTS" in text:
            assert "some words" in prompt, path


@pytest.mark.parametrize("folder", with_parts("skills"))
async def test_each_skill_loads_through_the_skill_tool(zpi_env, tmp_path, folder):
    """The model loads each skill by the name the listing shows; the tool answers with the
    skill's folder and its instructions (a skill marked ``disable-model-invocation`` is the
    user's only, as in Claude Code: the tool refuses it)."""
    plugin = name_of(folder)
    paths = components(folder, "skills")
    names = []
    for path in paths:
        name = frontmatter_name(path) or path.parent.name
        names.append(name if name.replace("-", "").isalnum() and name == name.lower()
                     else path.parent.name)
    model = ScriptedModel([{"tool_calls": [{"name": "skill",
                                            "arguments": {"skill": f"{plugin}:{n}"}}
                                           for n in names]}, "done"])
    work = tmp_path / "work"
    work.mkdir()
    session = await create_session(model="t:m", provider=model, cwd=work,
                                   plugin_dirs=[folder])
    try:
        assert all(f"{plugin}:{n}" in session.system_prompt for n in names)
        await session.run("use the skills")
    finally:
        await session.dispose()
    results = [m for m in session.messages if isinstance(m, ToolResultMessage)]
    assert len(results) == len(paths)
    for path, result in zip(paths, results, strict=True):
        text = result.content[0].text
        if frontmatter_value(path, "disable-model-invocation") == "true":
            assert result.is_error and "disable-model-invocation" in text, text
            continue
        assert not result.is_error, text
        assert text.startswith("Base directory for this skill:"), text[:200]
        assert plain_line(path) in text, path


@pytest.mark.parametrize("folder", with_parts("agents"))
async def test_each_agent_runs_as_a_sub_agent(zpi_env, tmp_path, monkeypatch, folder):
    """Each agent of the plugin runs through the ``task`` tool with its own prompt; its
    ``tools`` written in Claude Code's names start it (a name with no counterpart here is
    dropped with a warning naming it, never a refused agent). ``model: inherit`` runs on the
    session's model; ``model: sonnet``/``opus`` on that Claude model (here a loopback server
    speaking Anthropic's API)."""
    plugin = name_of(folder)
    paths = components(folder, "agents")
    agents = [f"{plugin}:{frontmatter_name(p) or p.stem}" for p in paths]
    models = [frontmatter_value(p, "model") or "inherit" for p in paths]
    lines = {plain_line(p): a for p, a in zip(paths, agents, strict=True)}
    aliased = [a for a, m in zip(agents, models, strict=True) if m != "inherit"]
    server = ModelServer(["answered by the aliased model"] * len(aliased)).start()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    ran: list[str] = []

    def answer(request):
        for line, agent in lines.items():
            if line in request.system_prompt and request.messages[0].text_content.startswith(
                    "work on"):
                ran.append(agent)
                return f"{agent} done"
        if len(request.messages) == 1:
            return {"tool_calls": [{"name": "task", "arguments": {
                "agent_type": a, "description": "check", "prompt": f"work on {a}"}}
                for a in agents]}
        return "all done"

    work = tmp_path / "work"
    work.mkdir()
    try:
        session = await create_session(model="t:m", provider=FunctionModel(answer),
                                       cwd=work, plugin_dirs=[folder])
        try:
            await session.run("delegate")
        finally:
            await session.dispose()
    finally:
        server.close()
    results = [m for m in session.messages if isinstance(m, ToolResultMessage)]
    assert [r.content[0].text for r in results] == [
        f"{a} done" if m == "inherit" else "answered by the aliased model"
        for a, m in zip(agents, models, strict=True)]
    assert sorted(ran) == sorted(a for a in agents if a not in aliased)
    systems = [json.dumps(r.json["system"]) for r in server.requests]
    for path, agent, model in zip(paths, agents, models, strict=True):
        if model != "inherit":
            assert sum(json.dumps(plain_line(path))[1:-1] in s for s in systems) >= 1, agent
    assert all(r.json["model"].startswith(("claude-sonnet", "claude-opus"))
               for r in server.requests)


def test_agent_frontmatter_that_is_not_yaml_reads_as_claude_code_reads_it():
    """claude-code's plugin-dev agents write a many-line ``description`` (with ``Context:``
    and ``user:`` lines) unquoted: the description keeps every line up to the next agent
    field, and the fields after it (``model``, ``tools``) keep their YAML values."""
    from zpi_compat_claude.agent_text import repaired_agent_text
    from zpi_host.resources.frontmatter import FrontmatterError, parse_frontmatter

    source = FIXTURES_PLUGIN_DEV / "agents" / "agent-creator.md"
    text = source.read_text(encoding="utf-8")
    with pytest.raises(FrontmatterError):
        parse_frontmatter(text, source)
    repaired = repaired_agent_text(text)
    assert repaired is not None
    metadata, rest = parse_frontmatter(repaired, source)
    assert metadata["name"] == "agent-creator" and metadata["model"] == "sonnet"
    assert metadata["tools"] == ["Write", "Read"] and metadata["color"] == "magenta"
    assert metadata["description"].startswith("Use this agent when the user asks")
    assert "Context: User wants to create a code review agent" in metadata["description"]
    assert metadata["description"].rstrip().endswith("</example>")
    assert rest == parse_frontmatter("---\nname: x\n---\n" + text.split("\n---\n", 1)[1],
                                     source)[1]
    assert repaired_agent_text(repaired) is None  # valid frontmatter is left alone
