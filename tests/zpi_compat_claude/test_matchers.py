"""Claude hook matchers: match-all, exact name lists, unanchored regular expressions."""

from __future__ import annotations

import re

import pytest

from zpi_compat_claude.hooks.matchers import MatcherError, compile_matcher


@pytest.mark.parametrize("value", [None, "", "*", "  ", " * "])
def test_empty_missing_or_star_match_everything(value):
    matcher = compile_matcher(value)
    assert matcher.kind == "all"
    assert matcher.matches("Bash") and matcher.matches("mcp__x__y") and matcher.matches("")


@pytest.mark.parametrize(("value", "names"), [
    ("Bash", {"Bash"}),
    ("Edit|Write", {"Edit", "Write"}),
    ("Read, Grep ,Glob", {"Read", "Grep", "Glob"}),
    ("Edit | MultiEdit|", {"Edit", "MultiEdit"}),
    ("startup", {"startup"}),
    ("my-tool_2", {"my-tool_2"}),
])
def test_letters_digits_and_separators_are_exact_names(value, names):
    matcher = compile_matcher(value)
    assert matcher.kind == "names" and matcher.names == names
    for name in names:
        assert matcher.matches(name)


def test_exact_names_do_not_match_parts_or_other_case():
    matcher = compile_matcher("Edit|Write")
    assert not matcher.matches("NotebookEdit")
    assert not matcher.matches("edit")
    assert not matcher.matches("Edits")


def test_anything_else_is_an_unanchored_regex():
    edits = compile_matcher("Edit.*")
    assert edits.kind == "regex" and edits.pattern is not None
    assert edits.matches("Edit") and edits.matches("NotebookEdit")
    assert not edits.matches("Write")
    mcp = compile_matcher("mcp__.*")
    assert mcp.matches("mcp__github__search") and not mcp.matches("Bash")
    anchored = compile_matcher("^Bash$")
    assert anchored.matches("Bash") and not anchored.matches("Bashful")


def test_a_value_without_a_field_matches_every_matcher():
    assert compile_matcher("Bash").matches(None)


def test_an_invalid_regex_is_a_typed_error():
    with pytest.raises(MatcherError) as caught:
        compile_matcher("Bash(")
    assert "not a valid regular expression" in str(caught.value)
    assert caught.value.value == "Bash("


def test_matchers_hold_their_compiled_form():
    matcher = compile_matcher("Edit.*")
    assert isinstance(matcher.pattern, re.Pattern)
    assert compile_matcher("Edit|Write").pattern is None  # names: a set lookup, no regex


def test_claude_codes_former_tool_names_match_what_hooks_see():
    """A plugin written for an older Claude Code (``BashOutput``, ``KillShell``, ``Agent``)
    matches the calls this host shows hooks as ``TaskOutput``, ``TaskStop`` and ``Task``."""
    from zpi_compat_claude.dialect import CLAUDE

    def compiled(value):
        return compile_matcher(value, CLAUDE.exact_matcher, CLAUDE.matcher_aliases)

    assert compiled("BashOutput").matches("TaskOutput")
    assert compiled("KillShell|Read").matches("TaskStop")
    assert compiled("KillBash").matches("TaskStop")
    assert compiled("Agent").matches("Task") and compiled("Task").matches("Task")
    assert compiled("Bash.*").matches("TaskOutput")  # as it matched BashOutput
    assert not compiled("BashOutput").matches("Bash")
    assert not compiled("MultiEdit").matches("Edit")
