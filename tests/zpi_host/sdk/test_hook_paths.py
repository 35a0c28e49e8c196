"""SDK hooks see what Claude Code gives them: absolute ``file_path``s in ``tool_input`` (a
guard comparing absolute paths is not bypassed by a relative one) and, for ``Read``, the raw
text of the file in ``tool_response.file.content`` (its final newline kept)."""

from __future__ import annotations

import pytest

from zpi_host.sdk import HookMatcher, UserMessage, query

from .conftest import collect

pytestmark = pytest.mark.anyio


def results(messages):
    return [b for m in messages if isinstance(m, UserMessage) for b in m.content]


def recorder(seen, answer=None):
    async def hook(input_data, tool_use_id, context):
        seen.append(input_data)
        return answer(input_data) if answer is not None else {}
    return hook


async def test_pre_and_post_tool_use_get_absolute_file_paths(scripted):
    (scripted.cwd / "sub").mkdir()
    (scripted.cwd / "sub" / "a.txt").write_text("old\n")
    pre, post = [], []
    scripted.turns({"tool_calls": [
        {"name": "Read", "arguments": {"file_path": "sub/a.txt"}},
        {"name": "Edit", "arguments": {"file_path": "sub/../sub/a.txt", "old_string": "old",
                                       "new_string": "new"}},
        {"name": "Write", "arguments": {"file_path": "b.txt", "content": "b"}}]}, "ok")
    options = scripted.options(permission_mode="bypassPermissions", hooks={
        "PreToolUse": [HookMatcher("Read|Edit|Write", [recorder(pre)])],
        "PostToolUse": [HookMatcher("Read|Edit|Write", [recorder(post)])]})
    messages = await collect(query("go", options))
    assert [r.is_error for r in results(messages)] == [False, False, False]
    a, b = str(scripted.cwd / "sub" / "a.txt"), str(scripted.cwd / "b.txt")
    assert [i["tool_input"]["file_path"] for i in pre] == [a, a, b]
    assert [i["tool_input"]["file_path"] for i in post] == [a, a, b]
    assert pre[1]["tool_input"] == {"file_path": a, "old_string": "old", "new_string": "new"}
    edit = post[1]["tool_response"]
    assert edit["filePath"] == a and edit["originalFile"] == "old\n"  # kept by that path


async def test_a_guard_comparing_absolute_paths_stops_a_relative_one(scripted):
    secret = scripted.cwd / "secret.txt"
    secret.write_text("TOKEN=hunter2\n")

    def guard(input_data):
        if input_data["tool_input"].get("file_path") == str(secret):
            return {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                           "permissionDecision": "deny",
                                           "permissionDecisionReason": "secret"}}
        return {}

    scripted.turns({"tool_calls": [{"name": "Read", "arguments": {
        "file_path": "secret.txt"}}]}, "ok")
    options = scripted.options(permission_mode="bypassPermissions", hooks={
        "PreToolUse": [HookMatcher("Read", [recorder([], guard)])]})
    read, = results(await collect(query("go", options)))
    assert read.is_error and "secret" in read.content and "hunter2" not in read.content


async def test_an_updated_input_with_the_absolute_path_is_what_runs(scripted):
    def rewrite(input_data):
        return {"hookSpecificOutput": {
            "hookEventName": "PreToolUse", "permissionDecision": "allow",
            "updatedInput": {**input_data["tool_input"], "content": "from the hook"}}}

    scripted.turns({"tool_calls": [{"name": "Write", "arguments": {
        "file_path": "out.txt", "content": "from the model"}}]}, "ok")
    options = scripted.options(hooks={"PreToolUse": [HookMatcher("Write", [
        recorder([], rewrite)])]})
    write, = results(await collect(query("go", options)))
    assert not write.is_error
    assert (scripted.cwd / "out.txt").read_text() == "from the hook"


@pytest.mark.parametrize(("text", "arguments", "content"), [
    ("one\ntwo\n", {}, "one\ntwo\n"),
    ("one\ntwo", {}, "one\ntwo"),
    ("one\r\ntwo\r\n", {}, "one\ntwo\n"),
    ("one\ntwo\nthree\n", {"limit": 2}, "one\ntwo"),
    ("one\ntwo\nthree\n", {"offset": 3}, "three\n"),
])
async def test_read_response_content_keeps_the_final_newline(scripted, text, arguments,
                                                             content):
    (scripted.cwd / "f.txt").write_bytes(text.encode())
    post = []
    scripted.turns({"tool_calls": [{"name": "Read", "arguments": {
        "file_path": "f.txt", **arguments}}]}, "ok")
    options = scripted.options(permission_mode="bypassPermissions", hooks={
        "PostToolUse": [HookMatcher("Read", [recorder(post)])]})
    await collect(query("go", options))
    assert post[0]["tool_response"]["file"]["content"] == content
