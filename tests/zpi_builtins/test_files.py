"""builtins:files: ai-zen's extra tools in real sessions over real files, a loopback web
server for downloads and a loopback images API; ``is_available`` applied when a session's
tools are chosen, never when plugins are listed."""

from __future__ import annotations

import base64
import json
import threading
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from helpers.builtins import builtins_settings, scripted_session
from helpers.cli import zpi
from helpers.web_server import web_server

from zpi_builtins.files import files_tools
from zpi_builtins.files_batch import apply_matching
from zpi_builtins.files_outline import inspect_file
from zpi_host.session.assembly import create_session
from zpi_host.session.tool_selection import ToolSet, select_tools
from zpi_host.testing import ScriptedModel
from zpi_host.tools import SessionDefinition, Tool, ToolContext, ToolResult

pytestmark = pytest.mark.anyio

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")
SHELL = {"shell_tools": True}
LOOPBACK = {"allow_private_addresses": True}


def call(name: str, **arguments: Any) -> dict:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def results(session: Any) -> list[tuple[str, bool]]:
    return [("".join(getattr(c, "text", "") for c in m.content), m.is_error)
            for m in session.messages if m.role == "tool"]


async def run_calls(tmp_path, *calls: dict, files: dict | None = None,
                    web: dict | None = None, **options: Any) -> list[tuple[str, bool]]:
    services: dict[str, Any] = {"files": files or SHELL}
    if web is not None:
        services["web"] = web
    session = await scripted_session(tmp_path, [*calls, "done"],
                                     settings=builtins_settings(**services), **options)
    await session.run("go")
    await session.dispose()
    return results(session)


# ------------------------------------------------------------------------------ availability


def test_is_available_is_asked_when_tools_are_chosen_and_a_failing_check_leaves_it_out():
    def boom(settings, definition):
        raise RuntimeError("no")

    def run(args, ctx):
        return ToolResult.text("x")

    schema = {"type": "object", "properties": {}}
    always = Tool("always", "d", schema, run)
    never = Tool("never", "d", schema, run, is_available=lambda s, d: False)
    broken = Tool("broken", "d", schema, run, is_available=boom)
    truthy = Tool("truthy", "d", schema, run, is_available=lambda s, d: 1)  # type: ignore
    found = ToolSet()
    for t in (always, never, broken, truthy):
        found.add(t, "p")
    definition = SessionDefinition()
    chosen = select_tools(found, available=lambda t: t.available({}, definition))
    assert [t.name for t in chosen] == ["always"]
    # named explicitly: still left out, and naming it is not an error (the name is known)
    chosen = select_tools(found, tools=["never", "always"],
                          available=lambda t: t.available({}, definition))
    assert [t.name for t in chosen] == ["always"]
    assert len(select_tools(found)) == 4  # without the check: everything found


async def test_view_image_only_for_a_vision_model_and_generate_image_only_with_an_image_model(
        tmp_path):
    models = {"v": {"provider": "openai", "model": "see", "vision": True},
              "b": {"provider": "openai", "model": "blind"}}

    async def tools_of(model: str, files: dict) -> set[str]:
        session = await create_session(model=model, provider=ScriptedModel(["x"]),
                                       cwd=tmp_path, settings={
                                           "models": models,
                                           **builtins_settings(files=files)})
        await session.dispose()
        return set(session.tools)

    blind = await tools_of("b", {})
    assert {"inspect_file", "batch_edit", "download_file"} <= blind
    assert not {"view_image", "generate_image"} & blind
    assert not {"mkdir", "rm", "rename", "copy", "exist", "sleep"} & blind  # bash does them
    seeing = await tools_of("v", {"image_model": "gpt-image-1", "shell_tools": True})
    assert {"view_image", "generate_image", "mkdir", "rm", "sleep"} <= seeing
    assert not {"view_image"} & await tools_of("b", {"image_model": "m"})


def test_list_plugins_lists_every_tool_the_service_can_provide(tmp_path):
    done = zpi(tmp_path, "--list-plugins", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    rows = rows["plugins"] if isinstance(rows, dict) else rows
    row = next(r for r in rows if r["name"] == "builtins:files")
    listed = json.dumps(row)
    for name in ("view_image", "generate_image", "inspect_file", "rm", "sleep"):
        assert name in listed


# ------------------------------------------------------------------------------ shell tools


async def test_mkdir_copy_rename_exist_rm_change_real_files(tmp_path):
    (tmp_path / "a.txt").write_text("hello")
    found = await run_calls(
        tmp_path, call("mkdir", path="out/deep"), call("copy", source="a.txt",
                                                       destination="out/deep/b.txt"),
        call("copy", source="a.txt", destination="out/deep/b.txt"),
        call("rename", source="out/deep/b.txt", destination="out/c.txt"),
        call("exist", path="out/c.txt"), call("exist", path="out/deep/b.txt"),
        call("rm", path="out"), call("rm", path="out", recursive=True),
        call("rm", path="."))
    texts = [t for t, _ in found]
    assert "Made the folder out/deep" in texts[0]
    assert texts[1].startswith("Copied") and "already exists" in texts[2] and found[2][1]
    assert "Moved out/deep/b.txt to out/c.txt" in texts[3]
    assert "a file of 5 bytes" in texts[4] and "does not exist" in texts[5]
    assert "not empty" in texts[6] and found[6][1]
    assert texts[7].startswith("Removed out")
    assert "working directory" in texts[8] and found[8][1]
    assert not (tmp_path / "out").exists() and (tmp_path / "a.txt").read_text() == "hello"


async def test_rm_removes_a_symlink_not_its_target_and_path_rules_apply(tmp_path):
    ws = tmp_path / "ws"
    (ws / "keep").mkdir(parents=True)
    (ws / "keep" / "x").write_text("x")
    (ws / "target.txt").write_text("t")
    (ws / "link").symlink_to(ws / "target.txt")
    found = await run_calls(ws, call("rm", path="link"))
    assert not (ws / "link").is_symlink() and (ws / "target.txt").read_text() == "t"
    assert found[0][1] is False
    session = await scripted_session(ws, [call("rm", path="keep/x"), "done"],
                                     settings={"permissions": {"deny": ["rm(keep/**)"]},
                                               **builtins_settings(files=SHELL)})
    await session.run("go")
    await session.dispose()
    text, is_error = results(session)[0]
    assert is_error and "rm(keep/**)" in text and (ws / "keep").exists()


async def test_sleep_waits_and_refuses_more_than_the_setting(tmp_path):
    found = await run_calls(tmp_path, call("sleep", seconds=0),
                            call("sleep", seconds=10),
                            files={"shell_tools": True, "max_sleep_seconds": 1})
    assert found[0] == ("Slept 0 s", False)
    assert found[1][1] and "max_sleep_seconds" in found[1][0]


# ------------------------------------------------------------------------------ inspect_file


def test_inspect_file_outlines_a_large_file_in_bounded_memory(tmp_path):
    path = tmp_path / "big.py"
    with path.open("w") as out:
        out.write("# Title\n\n```\n# not a heading\n```\n")
        for i in range(40_000):
            out.write(f"def f{i}(x):\n    return x  {'#' * 60}\n")
        out.write("class Last:\n" + "y" * 300_000 + "\n")
    tracemalloc.start()
    try:
        result = inspect_file({"path": str(path), "max_items": 5}, ToolContext(cwd=tmp_path),
                              None)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 * 1024 * 1024 < path.stat().st_size  # never the whole file
    text = result.text_content
    assert "80007 lines" in text and "longest line 300000 bytes" in text
    assert "      1: # Title" in text and "not a heading" not in text
    assert "      6: def f0(x):" in text
    assert result.details["entries"] == 40_002 and "39997 more entries" in text


def test_inspect_file_says_binary_and_refuses_a_folder(tmp_path):
    (tmp_path / "b.bin").write_bytes(b"\0\1\2" * 10)
    result = inspect_file({"path": "b.bin"}, ToolContext(cwd=tmp_path), None)
    assert "binary file of 30 bytes" in result.text_content
    from zpi_host.tools import ToolFailure

    with pytest.raises(ToolFailure, match=r"not a regular file|does not exist|directory"):
        inspect_file({"path": "."}, ToolContext(cwd=tmp_path), None)


# ------------------------------------------------------------------------------ batch_edit


def test_apply_matching_applies_what_matches_and_reports_the_rest():
    text, applied, unmatched = apply_matching(
        "a b a c", [("b", "B", False), ("a", "A", False), ("a", "A", True), ("zz", "y", False)])
    assert text == "A B A c" and applied == [1, 3]
    assert [n for n, _ in unmatched] == [2, 4] and "2 times" in unmatched[0][1]


async def test_batch_edit_writes_the_matching_edits_and_lists_only_the_unmatched(tmp_path):
    path = tmp_path / "m.py"
    path.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    found = await run_calls(tmp_path, call("batch_edit", path="m.py", edits=[
        {"old_text": "one\ntwo", "new_text": "1\n2"},
        {"old_text": "missing", "new_text": "x"}]),
        call("batch_edit", path="m.py", edits=[{"old_text": "nope", "new_text": "x"}]))
    assert path.read_bytes() == b"1\r\n2\r\nthree\r\n"
    text, is_error = found[0]
    assert not is_error and "Applied 1 of 2" in text and "edit 2: old_text not found" in text
    assert "edit 1" not in text
    assert found[1][1] and "nothing was written" in found[1][0]


# ------------------------------------------------------------------------------ download_file


async def test_download_file_saves_through_the_guard_within_the_limit(tmp_path):
    with web_server() as server:
        server.page("/file.bin", b"\x00data" * 100, "application/octet-stream")
        server.redirect("/moved", "/file.bin")
        server.page("/big", b"x" * 5000, "application/octet-stream")
        found = await run_calls(
            tmp_path, call("download_file", url=server.url("/moved"), path="got.bin"),
            call("download_file", url=server.url("/file.bin"), path="got.bin"),
            call("download_file", url=server.url("/big"), path="big.bin"),
            files={"download_max_bytes": 1000}, web=LOOPBACK)
        refused = await run_calls(
            tmp_path, call("download_file", url=server.url("/file.bin"), path="no.bin"))
    assert (tmp_path / "got.bin").read_bytes() == b"\x00data" * 100
    assert "500 bytes" in found[0][0] and not found[0][1]
    assert found[1][1] and "already exists" in found[1][0]
    assert found[2][1] and "download_max_bytes" in found[2][0]
    assert refused[0][1] and "allow_private_addresses" in refused[0][0]
    leftovers = [p.name for p in tmp_path.iterdir() if "zpi-download" in p.name]
    assert leftovers == [] and not (tmp_path / "big.bin").exists()
    assert not (tmp_path / "no.bin").exists()


# ------------------------------------------------------------------------------ images


@contextmanager
def images_api(answer: dict, status: int = 200) -> Iterator[tuple[str, list]]:
    seen: list = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            seen.append((self.path, self.headers.get("Authorization"), json.loads(body)))
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", seen
    finally:
        httpd.shutdown()
        httpd.server_close()


async def test_generate_image_asks_the_images_api_and_saves_the_png(tmp_path, monkeypatch):
    monkeypatch.setenv("IMAGES_KEY", "k-123")
    answer = {"data": [{"b64_json": base64.b64encode(PNG).decode()}]}
    with images_api(answer) as (url, seen):
        files = {"image_model": "draw-1", "image_base_url": url,
                 "image_api_key_env": "IMAGES_KEY"}
        found = await run_calls(tmp_path, call("generate_image", prompt="a dot", path="d.png",
                                               size="1x1"),
                                call("generate_image", prompt="again", path="d.png"),
                                files=files)
    assert (tmp_path / "d.png").read_bytes() == PNG
    assert not found[0][1] and "image/png" in found[0][0]
    assert found[1][1] and "already exists" in found[1][0]
    path, auth, body = seen[0]
    assert path == "/v1/images/generations" and auth == "Bearer k-123"
    assert body == {"model": "draw-1", "prompt": "a dot", "n": 1, "size": "1x1",
                    "response_format": "b64_json"}


async def test_generate_image_reports_an_api_error(tmp_path, monkeypatch):
    monkeypatch.setenv("IMAGES_KEY", "k")
    with images_api({"error": {"message": "bad prompt"}}, status=400) as (url, _):
        found = await run_calls(tmp_path, call("generate_image", prompt="x", path="e.png"),
                                files={"image_model": "m", "image_base_url": url,
                                       "image_api_key_env": "IMAGES_KEY"})
    assert found[0][1] and "HTTP 400: bad prompt" in found[0][0]
    assert not (tmp_path / "e.png").exists()


async def test_view_image_gives_the_model_the_image(tmp_path):
    (tmp_path / "dot.png").write_bytes(PNG)
    (tmp_path / "no.png").write_text("not an image")
    model = ScriptedModel([call("view_image", path="dot.png"),
                           call("view_image", path="no.png"), "done"])
    session = await create_session(
        model="v", provider=model, cwd=tmp_path,
        settings={"models": {"v": {"provider": "openai", "model": "see", "vision": True}}})
    await session.run("look")
    await session.dispose()
    tool_messages = [m for m in session.messages if m.role == "tool"]
    images = [c for c in tool_messages[0].content if getattr(c, "type", "") == "image"]
    assert images and base64.b64decode(images[0].data) == PNG
    assert tool_messages[1].is_error


def test_files_tools_respect_shell_tools_setting():
    names = [t.name for t in files_tools({})]
    assert "rm" not in names and "inspect_file" in names
    names = [t.name for t in files_tools(builtins_settings(files=SHELL))]
    assert {"rm", "mkdir", "rename", "copy", "exist", "sleep"} <= set(names)


def test_cli_accept_edits_runs_batch_edit_and_the_default_denies_it(tmp_path):
    from helpers.cli import EXE, clean_environment

    def run_cli(*flags: str) -> str:
        script = tmp_path / "script.jsonl"
        script.write_text(json.dumps(call("batch_edit", path="f.txt", edits=[
            {"old_text": "a", "new_text": "b"}])) + "\n" + json.dumps("done") + "\n")
        import subprocess

        out = subprocess.run([EXE, "run", *flags, "--model", f"scripted:{script}",
                              "--output-format", "json", "go"], capture_output=True,
                             text=True, cwd=ws, env=clean_environment(tmp_path), timeout=60,
                             stdin=subprocess.DEVNULL)
        assert out.returncode == 0, out.stderr
        return (ws / "f.txt").read_text()

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "f.txt").write_text("a\n")
    assert run_cli() == "a\n"  # non-interactive default: denied
    assert run_cli("--permission-mode", "acceptEdits") == "b\n"


async def test_the_request_body_carries_view_image_only_for_a_vision_model(tmp_path):
    """What the model is sent: the loopback server records each request's tools."""
    from zpi_host.testing import ModelServer

    async def sent_tools(vision: bool) -> set[str]:
        with ModelServer(["hi"]) as server:
            settings = {"providers": {"openai": {"base_url": server.base_url + "/v1"}},
                        "models": {"m": {"provider": "openai", "model": "m",
                                         "vision": vision}},
                        **builtins_settings(title={"enabled": False})}
            session = await create_session(model="m", cwd=tmp_path, settings=settings,
                                           environ={"OPENAI_API_KEY": "sk-test"})
            await session.run("hello")
            await session.dispose()
            body = server.requests[0].json
        return {t["function"]["name"] for t in body["tools"]}

    seeing, blind = await sent_tools(True), await sent_tools(False)
    assert "view_image" in seeing and "view_image" not in blind
    assert "inspect_file" in seeing and "inspect_file" in blind


async def test_a_sub_agent_on_a_model_without_vision_has_no_view_image(zpi_env, tmp_path):
    """A child's tools are asked again with its own model: an agent definition on a model
    without vision does not get ``view_image`` from a parent that has it."""
    script = tmp_path / "child.jsonl"
    script.write_text(json.dumps("child done") + "\n")
    agents = tmp_path / ".zpi" / "agents"
    agents.mkdir(parents=True)
    (agents / "blind.md").write_text(f"---\ndescription: d\nmodel: scripted:{script}\n---\nP\n")
    (agents / "same.md").write_text("---\ndescription: d\nmodel: inherit\n---\nP\n")
    seen: dict[str, set[str]] = {}

    class Observer:
        async def subagent_started(self, child, link):
            seen[link.agent_type] = set(child.tools)

        async def subagent_stopped(self, child, link):
            pass

    session = await create_session(
        model="v", provider=ScriptedModel(["x", "y"]), cwd=tmp_path,
        settings={"models": {"v": {"provider": "openai", "model": "see", "vision": True}}})
    assert "view_image" in session.tools
    session.subagent_observers.append(Observer())
    await session.run_subagent("blind", "look")
    await session.run_subagent("same", "look")
    await session.dispose()
    assert "view_image" not in seen["blind"] and "inspect_file" in seen["blind"]
    assert "view_image" in seen["same"]


def test_outline_lines_match_a_plain_split_across_any_piece_boundary(monkeypatch):
    """Every line is counted once, with its whole length, however the pieces fall."""
    import os
    import tempfile

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from zpi_builtins import files_outline

    @settings(max_examples=150, deadline=None)
    @given(st.binary(max_size=300).map(lambda b: b.replace(b"\r", b"")),
           st.integers(min_value=1, max_value=17), st.integers(min_value=1, max_value=9))
    def check(data, chunk, keep):
        monkeypatch.setattr(files_outline, "CHUNK", chunk)
        monkeypatch.setattr(files_outline, "LINE_KEEP", keep)
        with tempfile.TemporaryFile() as file:
            file.write(data)
            file.flush()
            os.lseek(file.fileno(), 0, os.SEEK_SET)
            got = list(files_outline._lines(file.fileno()))
        expected = data.split(b"\n")
        if data.endswith(b"\n") or not data:
            expected = expected[:-1]
        assert [length for _, length in got] == [len(line) for line in expected]
        assert [kept for kept, _ in got] == [line[:keep] for line in expected]

    check()


async def test_download_file_stops_a_body_without_a_length_at_the_limit(tmp_path):
    """No Content-Length (HTTP/1.0, the body ends when the connection closes): the bytes are
    counted as they come and the download stops past the limit, leaving nothing."""

    class Endless(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.end_headers()
            try:
                for _ in range(200):
                    self.wfile.write(b"z" * 1024)
            except OSError:
                pass  # the client stopped reading: what the test expects

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Endless)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/f"
        found = await run_calls(tmp_path, call("download_file", url=url, path="z.bin"),
                                files={"download_max_bytes": 10_000}, web=LOOPBACK)
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert found[0][1] and "larger than the limit of 10000 bytes" in found[0][0]
    assert list(tmp_path.iterdir()) == [] or all(
        "zpi-download" not in p.name and p.name != "z.bin" for p in tmp_path.iterdir())
