"""The shared frontmatter parser: syntax only, every failure a FrontmatterError naming the file."""

from __future__ import annotations

import pytest

from zpi_host.errors import ZpiError
from zpi_host.resources.frontmatter import FrontmatterError, parse_frontmatter, read_frontmatter


def test_metadata_and_stripped_body():
    metadata, body = parse_frontmatter("---\nname: x\ntags: [a, b]\n---\n\nBody text\n", "f.md")
    assert metadata == {"name": "x", "tags": ["a", "b"]}
    assert body == "Body text"


def test_no_frontmatter_is_all_body():
    assert parse_frontmatter("# Title\n\ntext\n", "f.md") == ({}, "# Title\n\ntext")
    # a rule further down is not frontmatter
    assert parse_frontmatter("text\n---\nmore\n", "f.md")[0] == {}


def test_empty_frontmatter_bom_and_leading_blank_lines():
    assert parse_frontmatter("---\n---\nbody", "f.md") == ({}, "body")
    assert parse_frontmatter(b"\xef\xbb\xbf---\na: 1\n---\nb", "f.md") == ({"a": 1}, "b")
    assert parse_frontmatter("\n\n---\na: 1\n---\nb", "f.md") == ({"a": 1}, "b")


def test_bad_yaml_names_file_and_line():
    text = "---\nname: x\ndescription: ok\n  bad: indent\n---\nbody\n"
    with pytest.raises(FrontmatterError) as info:
        parse_frontmatter(text, "skills/x/SKILL.md")
    error = info.value
    assert isinstance(error, ZpiError)
    assert error.line == 4
    assert "invalid YAML" in error.problem
    assert str(error).startswith("skills/x/SKILL.md, line 4: invalid YAML")


def test_line_numbers_count_leading_blank_lines():
    with pytest.raises(FrontmatterError) as info:
        parse_frontmatter("\n\n---\na: 1\n\tb: 2\n---\n", "f.md")
    assert info.value.line == 5


def test_claude_style_plain_values_are_text():
    text = "---\ndescription: Use it: when X\nargument-hint: [pr] [priority]\nn: 3\n---\nb"
    metadata, _ = parse_frontmatter(text, "f.md")
    assert metadata == {"description": "Use it: when X", "argument-hint": "[pr] [priority]",
                        "n": 3}


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("---\n- a\n- b\n---\n", "must be a mapping"),
        ("---\njust text\n---\n", "must be a mapping"),
        ("---\n1: a\n---\n", "keys must be text"),
        ("---\nname: x\n", "never closed"),
        ("---\nwhen: 2024-13-45\n  x: y\n---\n", "invalid YAML"),
    ],
)
def test_structural_problems(text, fragment):
    with pytest.raises(FrontmatterError, match=fragment):
        parse_frontmatter(text, "f.md")


def test_not_utf8(tmp_path):
    path = tmp_path / "f.md"
    path.write_bytes(b"---\nname: caf\xe9\n---\n")
    with pytest.raises(FrontmatterError, match="not UTF-8") as info:
        read_frontmatter(path)
    assert info.value.path == path
    assert str(path) in str(info.value)


def test_unreadable_file(tmp_path):
    with pytest.raises(FrontmatterError, match="cannot read"):
        read_frontmatter(tmp_path / "missing.md")
    with pytest.raises(FrontmatterError, match="it is a directory, not a regular file"):
        read_frontmatter(tmp_path)  # a folder


# --------------------------------------------------- the fast path for simple frontmatter

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from zpi_host.resources.frontmatter import simple_mapping  # noqa: E402

#: pieces that make a line look simple to a careless reader but mean something else in YAML
_TRICKY = ["yes", "No", "ON", "off", "TRUE", "False", "null", "Null", "~", "y", "n", "a: b",
           "a:", " #c", "#c", "[a, b]", "{a: 1}", "'q'", '"q"', "1", "1.5", "2024-01-01",
           ".inf", "-x", "? x", "*x", "&x", "!x", "|", ">", "%x", "@x", "`x", "x  y", "é",
           "a#b", "a,b", "x]", "x}", "\t", "\r", "  "]


def _line() -> st.SearchStrategy[str]:
    word = st.text(st.sampled_from("abcxyzAB_-019 .:#,[]{}'\"!&*?|>%@`~=\\"), max_size=12)
    key = st.one_of(st.sampled_from(["name", "description", "allowed-tools", "yes", "on", "Null",
                                     "x_1", "_k", "1", "a b", "k:"]), word)
    value = st.one_of(st.sampled_from(_TRICKY), word, st.builds(
        lambda a, b: f"{a}{b}", st.sampled_from(["Say", "Greets the", "a", "Z"]),
        st.one_of(st.sampled_from(_TRICKY), word)))
    spaces = st.sampled_from([" ", "  ", "\t", ""])
    return st.one_of(st.builds(lambda k, s, v, t: f"{k}:{s}{v}{t}", key, spaces, value,
                               st.sampled_from(["", " ", "  "])),
                     st.sampled_from(["", "  ", "# c", "  more", "- item", "---"]))


@settings(max_examples=400, deadline=None)
@given(st.lists(_line(), max_size=5))
def test_the_fast_path_reads_exactly_what_yaml_reads(lines: list[str]) -> None:
    """Whenever the fast path answers, PyYAML (the parser it stands in for) reads the same."""
    from frontmatter.default_handlers import YAMLHandler

    block = "\n".join(lines)
    fast = simple_mapping(block)
    if fast is None:
        return
    loaded = YAMLHandler().load(block)
    assert (loaded if loaded is not None else {}) == fast


@pytest.mark.parametrize("piece", _TRICKY)
@pytest.mark.parametrize("template", ["name: {}", "name: Say{}", "name: Say {} now", "{}: x"])
def test_the_fast_path_agrees_with_yaml_on_each_tricky_piece(template: str, piece: str) -> None:
    from frontmatter.default_handlers import YAMLHandler

    block = template.format(piece)
    fast = simple_mapping(block)
    if fast is not None:
        assert YAMLHandler().load(block) == fast, block


def test_the_fast_path_takes_plain_text_and_leaves_the_rest_to_yaml() -> None:
    assert simple_mapping("name: greet\ndescription: Greets the user, politely [twice].\n") \
        == {"name": "greet", "description": "Greets the user, politely [twice]."}
    assert simple_mapping("") == {}
    for block in ["enabled: yes", "count: 3", "when: 2024-01-01", "tags: [a, b]",
                  "description: a: b", "name: x # comment", "name: 'x'", "name:\n  nested: 1",
                  "# only a comment", "on: x", "name:\tx", "name: é"]:
        assert simple_mapping(block) is None, block


def test_a_simple_frontmatter_does_not_import_yaml(tmp_path) -> None:
    import subprocess
    import sys

    skill = tmp_path / "SKILL.md"
    skill.write_text("---\nname: greet\ndescription: Greets the user.\n---\nSay hello.\n")
    done = subprocess.run([sys.executable, "-c", (
        "import sys; from pathlib import Path; from zpi_host.resources.frontmatter import "
        f"read_frontmatter; print(read_frontmatter(Path({str(skill)!r}))); "
        "print('yaml' in sys.modules)")], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == [
        "({'name': 'greet', 'description': 'Greets the user.'}, 'Say hello.')", "False"]
