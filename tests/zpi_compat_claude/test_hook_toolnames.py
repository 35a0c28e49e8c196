"""The one table between this host's tool names and inputs and Claude Code's spelling."""

from __future__ import annotations

import pytest

from zpi_compat_claude.hooks.toolnames import (
    CLAUDE_NAMES,
    claude_tool_input,
    claude_tool_name,
    host_tool_input,
    host_tool_name,
)

CWD = "/work/space"


@pytest.mark.parametrize(("host", "claude"), [
    ("read", "Read"), ("write", "Write"), ("edit", "Edit"), ("bash", "Bash"), ("glob", "Glob"),
    ("grep", "Grep"), ("web_fetch", "WebFetch"), ("web_search", "WebSearch"), ("task", "Task"),
    ("ask_user", "AskUserQuestion"), ("todo_write", "TodoWrite"),
])
def test_names_both_ways(host, claude):
    assert claude_tool_name(host) == claude and host_tool_name(claude) == host


def test_unknown_names_pass_through_and_aliases():
    assert claude_tool_name("my_tool") == "my_tool" and host_tool_name("mcp__a__b") == "mcp__a__b"
    assert host_tool_name("Agent") == "task" and host_tool_name("MultiEdit") == "edit"
    assert len(set(CLAUDE_NAMES.values())) == len(CLAUDE_NAMES)


def test_the_names_come_from_the_kernels_one_table():
    from zpi_host.permissions.toolnames import CLAUDE_SPELLINGS, same_tool

    for host, spellings in CLAUDE_SPELLINGS.items():
        assert all(host_tool_name(name) == host for name in spellings)
        assert claude_tool_name(host) in spellings
        assert set(same_tool(host)) == {host, *spellings}


def test_tools_under_claudes_names_keep_their_input_with_absolute_paths():
    """The SDK's standard tools take Claude's input already: only the paths change."""
    assert claude_tool_input("Read", {"file_path": "a/../b.txt", "limit": 2}, CWD) == {
        "file_path": "/work/space/b.txt", "limit": 2}
    assert claude_tool_input("Edit", {"file_path": "f.py", "old_string": "a",
                                      "new_string": "b"}, CWD) == {
        "file_path": "/work/space/f.py", "old_string": "a", "new_string": "b"}
    assert claude_tool_input("Write", {"file_path": "/abs/x", "content": "c"}, CWD) == {
        "file_path": "/abs/x", "content": "c"}
    assert claude_tool_input("Grep", {"pattern": "x", "path": "src"}, CWD) == {
        "pattern": "x", "path": "/work/space/src"}
    assert claude_tool_input("Bash", {"command": "ls", "timeout": 5000}, CWD) == {
        "command": "ls", "timeout": 5000}  # Claude's milliseconds already


def test_read_and_write_get_absolute_file_paths():
    assert claude_tool_input("read", {"path": "a/b.txt", "offset": 3, "limit": 5}, CWD) == {
        "file_path": "/work/space/a/b.txt", "offset": 3, "limit": 5}
    assert claude_tool_input("write", {"path": "/abs/x", "content": "c"}, CWD) == {
        "file_path": "/abs/x", "content": "c"}
    assert host_tool_input("write", {"file_path": "/abs/y", "content": "d"}) == {
        "path": "/abs/y", "content": "d"}


def test_a_single_edit_is_claudes_edit_and_several_its_multi_edit_shape():
    one = {"path": "f.py", "edits": [{"old_text": "a", "new_text": "b"}]}
    assert claude_tool_input("edit", one, CWD) == {
        "file_path": "/work/space/f.py", "old_string": "a", "new_string": "b",
        "replace_all": False}
    many = {"path": "f.py", "edits": [{"old_text": "a", "new_text": "b", "replace_all": True},
                                      {"old_text": "c", "new_text": "d"}]}
    assert claude_tool_input("edit", many, CWD) == {"file_path": "/work/space/f.py", "edits": [
        {"old_string": "a", "new_string": "b", "replace_all": True},
        {"old_string": "c", "new_string": "d", "replace_all": False}]}


def test_updated_edit_input_goes_back_to_this_hosts_shape():
    assert host_tool_input("edit", {"file_path": "/f", "old_string": "a", "new_string": "B",
                                    "replace_all": False}) == {
        "path": "/f", "edits": [{"old_text": "a", "new_text": "B", "replace_all": False}]}
    assert host_tool_input("edit", {"file_path": "/f", "edits": [
        {"old_string": "a", "new_string": "b"}]}) == {
        "path": "/f", "edits": [{"old_text": "a", "new_text": "b"}]}


def test_bash_timeout_is_milliseconds_for_claude():
    assert claude_tool_input("bash", {"command": "ls", "timeout": 30}, CWD) == {
        "command": "ls", "timeout": 30000}
    back = host_tool_input("bash", {"command": "ls", "timeout": 1500, "description": "list",
                                    "run_in_background": False})
    assert back == {"command": "ls", "timeout": 2}


def test_other_tools_keep_their_input():
    assert claude_tool_input("my_tool", {"path": "x"}, CWD) == {"path": "x"}
    assert host_tool_input("my_tool", {"file_path": "x"}) == {"file_path": "x"}
