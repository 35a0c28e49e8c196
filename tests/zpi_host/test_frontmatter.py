"""The shared frontmatter parser: syntax only, every failure a FrontmatterError naming the file."""

from __future__ import annotations

import pytest

from zpi_host.errors import ZpiError
from zpi_host.frontmatter import FrontmatterError, parse_frontmatter, read_frontmatter


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
    with pytest.raises(FrontmatterError, match="cannot read"):
        read_frontmatter(tmp_path)  # a folder
