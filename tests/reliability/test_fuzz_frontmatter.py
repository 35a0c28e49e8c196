"""Fuzzing Markdown frontmatter (``frontmatter.py``) and the resources built on it: any text or
bytes split into (metadata, body) or raise :class:`FrontmatterError`; a skill, command or agent
file with any frontmatter loads or becomes a diagnostic of the ResourceLoader.
"""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

from helpers.reliability import scaled
from hypothesis import given, settings
from hypothesis import strategies as st

from zpi_host.resources import ResourceLoader
from zpi_host.resources.frontmatter import FrontmatterError, parse_frontmatter

KEYS = ["name", "description", "allowed-tools", "tools", "argument-hint", "model",
        "disable-model-invocation", "user-invocable", "when_to_use", "color", "x", "1", "? k"]
YAML_VALUES = ["", "plain text", "a: b", "[pr] [priority]", "[a, b]", "{", "}", "{a: 1}",
               "!!python/object:os.system", "!!binary aGk=", "&a [*a, *a]", "*nowhere",
               "2024-13-45", "2024-01-01", "1e1000", "0x1F", "~", "null", "true", "yes", "|",
               ">-", "'unclosed", '"unclosed', "\t", "- item", "Read, Bash(git:*)", "@", "`",
               "%", "!", "#comment", "<<: *a", "\ud800", "\x00", "\u2028", "\ufeff"]

lines = st.one_of(
    st.tuples(st.sampled_from(KEYS), st.sampled_from(YAML_VALUES) | st.text(max_size=12))
    .map(lambda kv: f"{kv[0]}: {kv[1]}"),
    st.sampled_from(["  nested: 1", "- a", "---", "...", "%YAML 1.1", "? complex", ": v",
                     "key:", "  - b", "&anchor k: v", "k: &x 1", "j: *x"]),
    st.text(max_size=15),
)


@st.composite
def documents(draw: st.DrawFn) -> str:
    head = "\n" * draw(st.integers(0, 2)) + ("\ufeff" if draw(st.booleans()) else "")
    block = "\n".join(draw(st.lists(lines, max_size=6)))
    closing = draw(st.sampled_from(["\n---\n", "\n---", "\n", "", "\n--- \n", "\n----\n"]))
    body = draw(st.text(max_size=20))
    return f"{head}---\n{block}{closing}{body}"


@given(documents())
def test_frontmatter_text_splits_or_raises_a_frontmatter_error(text):
    try:
        metadata, body = parse_frontmatter(text, "doc.md")
    except FrontmatterError as exc:
        assert str(exc).startswith("doc.md")
        return
    assert isinstance(metadata, dict) and all(isinstance(k, str) for k in metadata)
    assert isinstance(body, str)


@given(st.binary(max_size=60) | documents().map(
    lambda t: t.encode("utf-8", "surrogatepass")))
def test_frontmatter_bytes_split_or_raise_a_frontmatter_error(data):
    with contextlib.suppress(FrontmatterError):
        parse_frontmatter(data, "doc.md")


@settings(max_examples=scaled(60, 3_000))
@given(documents(), documents(), documents())
def test_resources_with_any_frontmatter_load_or_become_diagnostics(skill, command, agent):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        zpi = root / "project" / ".zpi"
        (zpi / "skills" / "fuzzed").mkdir(parents=True)
        (zpi / "commands").mkdir()
        (zpi / "agents").mkdir()
        (zpi / "skills" / "fuzzed" / "SKILL.md").write_text(skill, "utf-8", "surrogatepass")
        (zpi / "commands" / "fuzzed.md").write_text(command, "utf-8", "surrogatepass")
        (zpi / "agents" / "fuzzed.md").write_text(agent, "utf-8", "surrogatepass")
        loader = ResourceLoader(root / "project", root / "agent").load()
        found = len(loader.skills) + len(loader.commands) + len(loader.agents)
        assert found + len(loader.diagnostics) >= 3, (loader.skills, loader.diagnostics)
        loader.skills_prompt()
        for item in loader.commands:
            with contextlib.suppress(FrontmatterError):
                item.expand("one two")
        for skill_item in loader.skills:
            with contextlib.suppress(FrontmatterError):
                assert isinstance(skill_item.body(), str)
