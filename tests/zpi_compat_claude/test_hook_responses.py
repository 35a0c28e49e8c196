"""``tool_response`` per tool in Claude Code 2.1's exact shape, from real files."""

from __future__ import annotations

from zpi_compat_claude.hooks.responses import Originals, claude_tool_response, structured_patch


def test_bash_response_has_claudes_five_fields():
    assert claude_tool_response("bash", {"command": "ls"}, "out", {"total_bytes": 3}, "/") == {
        "stdout": "out", "stderr": "", "interrupted": False, "isImage": False,
        "noOutputExpected": False}
    quiet = claude_tool_response("Bash", {"command": "true"}, "(no output)",
                                 {"total_bytes": 0}, "/")
    assert quiet["stdout"] == ""


def test_read_response_is_the_raw_text_of_the_lines_read(tmp_path):
    (tmp_path / "n.txt").write_text("one\ntwo\nthree\nfour\n")
    shown = "     2\ttwo\n     3\tthree\n\n[showing lines 2-3 of 4; call read with offset=4]"
    response = claude_tool_response(
        "read", {"path": "n.txt", "offset": 2, "limit": 2}, shown,
        {"path": str(tmp_path / "n.txt"), "lines": 4, "start": 2, "end": 3}, tmp_path)
    assert response == {"type": "text", "file": {
        "filePath": str(tmp_path / "n.txt"), "content": "two\nthree", "numLines": 2,
        "startLine": 2, "totalLines": 4}}


def test_read_response_keeps_the_final_newline_of_a_read_that_reaches_the_end(tmp_path):
    shown = "     1\tone\n     2\ttwo"
    whole = {"path": str(tmp_path / "n.txt"), "lines": 2, "start": 1, "end": 2}
    ends = claude_tool_response("Read", {"file_path": "n.txt"}, shown,
                                {**whole, "newline_at_end": True}, tmp_path)
    assert ends["file"]["content"] == "one\ntwo\n"
    bare = claude_tool_response("Read", {"file_path": "n.txt"}, shown,
                                {**whole, "newline_at_end": False}, tmp_path)
    assert bare["file"]["content"] == "one\ntwo"


def test_read_response_is_what_the_tool_returned_not_the_file_now(tmp_path):
    """A symlink swapped in after the read (to a secret) is never followed: the response is
    built from the tool's own output, tabs inside lines and empty lines kept."""
    secret = tmp_path / "secret"
    secret.write_text("TOKEN=hunter2\n")
    target = tmp_path / "n.txt"
    target.symlink_to(secret)
    shown = "     1\ta\tb\n     2\t\n     3\tc"
    response = claude_tool_response(
        "Read", {"file_path": str(target)}, shown,
        {"path": str(target), "lines": 3, "start": 1, "end": 3}, tmp_path)
    assert response["file"]["content"] == "a\tb\n\nc"
    assert response["file"]["numLines"] == 3


def test_write_response_update_has_the_original_and_a_patch(tmp_path):
    target = tmp_path / "n.txt"
    target.write_text("a\nb\n")
    originals = Originals()
    originals.keep("c1", "write", {"path": "n.txt", "content": "a\nB\n"}, tmp_path)
    target.write_text("a\nB\n")  # what the tool did
    response = claude_tool_response(
        "write", {"path": "n.txt", "content": "a\nB\n"}, "ok",
        {"path": str(target), "created": False}, tmp_path,
        originals.take("c1", str(target)))
    assert response == {
        "type": "update", "filePath": str(target), "content": "a\nB\n",
        "structuredPatch": [{"oldStart": 1, "oldLines": 2, "newStart": 1, "newLines": 2,
                             "lines": [" a", "-b", "+B"]}],
        "originalFile": "a\nb\n", "userModified": False}


def test_write_response_create_has_no_original(tmp_path):
    originals = Originals()
    originals.keep("c1", "Write", {"file_path": str(tmp_path / "new.txt")}, tmp_path)
    (tmp_path / "new.txt").write_text("x")
    response = claude_tool_response(
        "write", {"path": "new.txt", "content": "x"}, "ok",
        {"path": str(tmp_path / "new.txt"), "created": True}, tmp_path,
        originals.take("c1", str(tmp_path / "new.txt")))
    assert response["type"] == "create" and response["originalFile"] is None
    assert response["structuredPatch"] == [] and response["userModified"] is False


def test_edit_response_has_claudes_fields(tmp_path):
    target = tmp_path / "e.txt"
    target.write_text("keep\nold\n")
    originals = Originals()
    arguments = {"path": "e.txt", "edits": [{"old_text": "old", "new_text": "new"}]}
    originals.keep("c1", "edit", arguments, tmp_path)
    target.write_text("keep\nnew\n")
    response = claude_tool_response("edit", arguments, "ok", {"path": str(target)}, tmp_path,
                                    originals.take("c1", str(target)))
    assert response == {
        "filePath": str(target), "oldString": "old", "newString": "new",
        "originalFile": "keep\nold\n",
        "structuredPatch": [{"oldStart": 1, "oldLines": 2, "newStart": 1, "newLines": 2,
                             "lines": [" keep", "-old", "+new"]}],
        "userModified": False, "replaceAll": False}


def test_an_original_of_another_path_is_not_used(tmp_path):
    (tmp_path / "a.txt").write_text("a")
    originals = Originals()
    originals.keep("c1", "write", {"path": "a.txt"}, tmp_path)
    assert originals.take("c1", str(tmp_path / "b.txt")) is None  # input was replaced


def test_structured_patch_of_an_insertion_into_an_empty_file():
    assert structured_patch("", "x\n") == [
        {"oldStart": 0, "oldLines": 0, "newStart": 1, "newLines": 1, "lines": ["+x"]}]


def test_other_tools_get_the_result_text():
    assert claude_tool_response("mcp__db__query", {}, "rows", None, "/") == "rows"
