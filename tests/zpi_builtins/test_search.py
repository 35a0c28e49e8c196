"""builtins:search: glob and grep on real trees under tmp_path (.gitignore at several depths,
hidden folders, binary files, symlinks out of the workspace), both grep engines, argument
errors, workspace permissions and the spill of a long result."""

from __future__ import annotations

import os
import random
import re
import shutil
from pathlib import Path

import pytest
from helpers.builtins import builtins_settings, scripted_session

from zpi_builtins import search as service
from zpi_builtins import search_grep
from zpi_builtins.search import (
    execute_glob,
    format_grep,
    grep_tool,
    prepare_glob,
    prepare_grep,
    search,
)
from zpi_builtins.search_files import compile_glob
from zpi_host.tools import ToolArgumentError, ToolContext, ToolFailure

RG = shutil.which("rg")
needs_rg = pytest.mark.skipif(RG is None, reason="ripgrep (rg) is not installed: the check "
                                                 "against its results cannot run")


def write(root: Path, rel: str, content: str | bytes, mtime: int | None = None) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A workspace with ignore rules at two depths, a hidden folder, a binary file and
    symlinks to a file and a folder outside it."""
    ws = tmp_path / "ws"
    outside = tmp_path / "outside"
    write(outside, "secret.py", "needle outside\n")
    write(ws, ".gitignore", "build/\n*.log\n!keep.log\n")
    write(ws, "src/.gitignore", "generated_*.py\n")
    write(ws, "src/app.py", "import os\n\ndef needle():\n    return 1\n", 1_000)
    write(ws, "src/lib/util.py", "x = 1\nNEEDLE = 2\n", 3_000)
    write(ws, "src/generated_api.py", "needle\n", 4_000)
    write(ws, "docs/guide.md", "a needle in the docs\n", 2_000)
    write(ws, "build/out.py", "needle\n")
    write(ws, "debug.log", "needle\n")
    write(ws, "keep.log", "needle kept\n", 500)
    write(ws, ".hidden/h.py", "needle\n")
    write(ws, ".env", "needle\n")
    write(ws, "blob.bin", b"needle\0binary\n")
    (ws / "src" / "link.py").symlink_to(outside / "secret.py")
    (ws / "out").symlink_to(outside)
    return ws


def ctx(cwd: Path) -> ToolContext:
    return ToolContext(cwd=cwd)


def grep_text(root: Path, use_rg: bool, **arguments) -> str:
    """The grep tool's text, run in ``root`` (the ``path`` argument relative to it)."""
    tool = grep_tool(use_rg)
    result = tool.execute(tool.prepare_arguments({"pattern": "needle", **arguments}), ctx(root))
    assert result.details["engine"] == ("ripgrep" if use_rg else "python") or \
        "path" in arguments  # one file is always searched in Python
    return result.text_content


def glob_text(root: Path, pattern: str, **more) -> str:
    return execute_glob(prepare_glob({"pattern": pattern, **more}), ctx(root)).text_content


# ------------------------------------------------------------------------------ glob


def test_glob_matches_double_star_newest_first_and_skips_ignored_and_symlinks(tree):
    found = glob_text(tree, "**/*.py").splitlines()
    assert found[-2:] == ["src/lib/util.py", "src/app.py"]  # generated_ (nested .gitignore),
    # build/, the symlinked file and folder are all left out; hidden names are kept (newest)
    assert found[:-2] == [".hidden/h.py"]
    assert glob_text(tree, "*.log").splitlines() == ["keep.log"]
    assert glob_text(tree, "**/*.{md,log}").splitlines() == ["docs/guide.md", "keep.log"]
    assert glob_text(tree, "*.py") .startswith("No files found")
    assert glob_text(tree, "**/*.py", path="src/lib").splitlines() == ["src/lib/util.py"]
    # a folder outside the workspace must come as path, which the permission check judges
    with pytest.raises(ToolArgumentError, match="must be relative to path"):
        prepare_glob({"pattern": f"{tree}/src/**/*.py"})


def test_glob_finds_dot_files_and_folders_as_claude_codes_does(tree):
    write(tree, ".claude/hookify.block-rm.local.md", "---\nname: x\n---\n")
    write(tree, ".claude/settings.json", "{}")
    write(tree, ".git/config", "[core]\n")
    write(tree, ".gitignore", "build/\n*.log\n!keep.log\n.claude/settings.json\n")
    assert glob_text(tree, ".claude/hookify.*.local.md").splitlines() == [
        ".claude/hookify.block-rm.local.md"]
    assert glob_text(tree, ".env").splitlines() == [".env"]
    # ignore rules still apply to hidden names, and version-control folders stay out
    assert glob_text(tree, ".claude/*.json").startswith("No files found")
    assert glob_text(tree, ".git/*").startswith("No files found")
    assert ".git/config" not in glob_text(tree, "**/*")


def test_glob_patterns_translate_like_gitignore_globs():
    assert compile_glob("**/*.py").match("a.py") and compile_glob("**/*.py").match("a/b/c.py")
    assert not compile_glob("*.py").match("a/b.py")
    assert compile_glob("src/**").match("src/a/b") and not compile_glob("src/**").match("srcx")
    assert compile_glob("[!a]?.{js,ts}").match("bc.ts") and not compile_glob("[!a]?.js").match(
        "ab.js")
    with pytest.raises(ToolArgumentError, match="unclosed"):
        prepare_glob({"pattern": "src/{a,b"})


def test_glob_refuses_a_file_or_missing_path_with_what_to_do(tree):
    with pytest.raises(ToolFailure, match="is not a folder"):
        glob_text(tree, "*", path="src/app.py")
    with pytest.raises(ToolFailure, match="does not exist"):
        glob_text(tree, "*", path="nowhere")


# ------------------------------------------------------------------------------ grep


@pytest.mark.parametrize("use_rg", [pytest.param(True, marks=needs_rg), False])
def test_grep_modes_respect_ignores_and_skip_binary_hidden_and_symlinked_files(tree, use_rg):
    assert grep_text(tree, use_rg).splitlines() == [
        "Found 3 file(s)", "docs/guide.md", "src/app.py", "keep.log"]
    assert grep_text(tree, use_rg, **{"-i": True, "output_mode": "content"}).splitlines() == [
        "docs/guide.md:1:a needle in the docs", "keep.log:1:needle kept",
        "src/app.py:3:def needle():", "src/lib/util.py:2:NEEDLE = 2"]
    counted = grep_text(tree, use_rg, output_mode="count", **{"-i": True})
    assert counted.splitlines()[:4] == ["docs/guide.md:1", "keep.log:1", "src/app.py:1",
                                        "src/lib/util.py:1"]
    assert counted.endswith("Found 4 matching line(s) in 4 file(s)")
    assert grep_text(tree, use_rg, type="py", **{"-i": True}).splitlines()[1:] == [
        "src/lib/util.py", "src/app.py"]
    # an include glob overrides .gitignore for the files it names, as rg --glob does
    assert grep_text(tree, use_rg, glob="*.log", output_mode="content").splitlines() == [
        "debug.log:1:needle", "keep.log:1:needle kept"]
    assert grep_text(tree, use_rg, path="src", output_mode="content",
                     **{"-n": False}) == "src/app.py:def needle():"


@pytest.mark.parametrize("use_rg", [pytest.param(True, marks=needs_rg), False])
def test_grep_context_multiline_and_head_limit(tmp_path, use_rg):
    write(tmp_path, "a.txt", "one\ntwo needle\nthree\nfour\nfive\nsix needle\nseven\n")
    write(tmp_path, "b.txt", "start\nneedle\nspans\nend\n")
    assert grep_text(tmp_path, use_rg, output_mode="content", **{"-B": 1, "-A": 1}) == "\n".join([
        "a.txt-1-one", "a.txt:2:two needle", "a.txt-3-three", "--", "a.txt-5-five",
        "a.txt:6:six needle", "a.txt-7-seven", "--", "b.txt-1-start", "b.txt:2:needle",
        "b.txt-3-spans"])
    args = {"pattern": "needle.spans", "multiline": True}
    for mode, expected in (("content", "b.txt:2:needle\nb.txt:3:spans"),
                           ("count", "b.txt:2\n\nFound 2 matching line(s) in 1 file(s)")):
        parsed = prepare_grep({**args, "output_mode": mode})
        assert format_grep(search(parsed, tmp_path, use_rg)[0], parsed, tmp_path,
                           tmp_path)[0] == expected
    limited = grep_text(tmp_path, use_rg, output_mode="content", head_limit=2)
    assert limited.splitlines()[:2] == ["a.txt:2:two needle", "a.txt:6:six needle"]
    assert "[showing the first 2 of 3 lines" in limited


def test_grep_of_one_file_and_of_a_binary_file(tree):
    assert grep_text(tree, True, path="src/app.py", output_mode="content") == \
        "src/app.py:3:def needle():"
    assert grep_text(tree, True, path="blob.bin") == "No files found"


def test_grep_refuses_a_fifo_or_a_device_without_reading_it(tmp_path):
    """Read whole, ``/dev/zero`` took all the memory there is (a MemoryError under a 1 GiB
    limit); FIFOs and devices get a clear error, and are never opened."""
    ws = tmp_path / "ws"
    ws.mkdir()
    os.mkfifo(ws / "pipe")
    tool = grep_tool(False)
    for path, kind in (("pipe", "a FIFO (named pipe)"), ("/dev/null", "a character device")):
        with pytest.raises(ToolFailure, match=re.escape(
                f"{path} is {kind}, not a regular file or a folder; grep searches only those")):
            tool.execute(tool.prepare_arguments({"pattern": "x", "path": path}), ctx(ws))
    assert search_grep._read("/dev/null") is None  # one that became a device after the walk


def test_grep_arguments_are_checked_with_the_field_named():
    cases = [({"pattern": "("}, "pattern"), ({"pattern": ""}, "pattern"),
             ({"pattern": "x", "type": "cobol"}, "type"),
             ({"pattern": "x", "output_mode": "lines"}, "output_mode"),
             ({"pattern": "x", "-A": -1}, "-A"), ({"pattern": "x", "-C": 1000}, "-C"),
             ({"pattern": "x", "glob": "!*.py"}, "glob"), ({"pattern": "x", "-i": "yes"}, "-i"),
             ({"pattern": "x", "regex": "y"}, "regex")]
    for arguments, field in cases:
        with pytest.raises(ToolArgumentError) as caught:
            prepare_grep(arguments)
        assert caught.value.field == field, arguments
    parsed = prepare_grep({"pattern": "x", "-C": 2, "-A": 5})
    assert (parsed.before, parsed.after, parsed.numbers) == (2, 5, True)


@needs_rg
def test_a_pattern_ripgrep_cannot_run_falls_back_to_python(tmp_path):
    write(tmp_path, "a.txt", "foobar\nfoobaz\n")
    args = prepare_grep({"pattern": "foo(?=baz)", "output_mode": "content"})
    found, engine = search(args, tmp_path, True)
    assert engine == "python"
    assert format_grep(found, args, tmp_path, tmp_path)[0] == "a.txt:2:foobaz"


# ------------------------------------------------------------------------------ rg vs Python


def generated_tree(root: Path, seed: int, files: int) -> None:
    """A random tree: nested .gitignore/.ignore/.rgignore files with negations, hidden names,
    binary files, CRLF, long lines, files without a final newline."""
    rng = random.Random(seed)
    words = ["alpha", "beta", "needle", "Needle", "gamma", "delta", "x", "", "needle needle"]
    folders = ["", "a", "a/b", "a/b/c", "d", "d/.cache", "e/build", "f"]
    for folder in folders:
        (root / folder).mkdir(parents=True, exist_ok=True)
    write(root, ".gitignore", "*.tmp\nbuild/\n!a/keep.tmp\n")
    write(root, "a/.gitignore", "/b/c/\n*.skip\n")
    write(root, "d/.ignore", "ignored_*\n")
    write(root, "f/.rgignore", "*.md\n")
    write(root, "a/b/.gitignore", "!*.tmp\n")
    for i in range(files):
        folder = rng.choice(folders)
        name = rng.choice(["f", "ignored_", ".h", "g"]) + str(i) + rng.choice(
            [".py", ".md", ".txt", ".tmp", ".skip", ".rs"])
        lines = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 4)))
                 for _ in range(rng.randint(0, 30))]
        eol = rng.choice(["\n", "\r\n"])
        text = eol.join(lines) + rng.choice(["", eol])
        data = text.encode()
        if rng.random() < 0.05:
            data = data + b"\0" + b"needle\n" * 10
        write(root, f"{folder}/{name}" if folder else name, data)
    write(root, "a/keep.tmp", "needle\n")


@needs_rg
@pytest.mark.parametrize("arguments", [
    {}, {"-i": True, "output_mode": "content"}, {"output_mode": "count"},
    {"output_mode": "content", "-C": 2}, {"type": "py", "output_mode": "content", "-A": 1},
    {"glob": "*.tmp", "output_mode": "count"}, {"glob": "a/**/*.py *.md"},
    {"glob": "b/ *.rs", "output_mode": "count"},
    {"pattern": r"needle\s+needle$", "output_mode": "content"},
    {"pattern": "needle.beta|alpha\\nx", "multiline": True, "output_mode": "content"},
    {"pattern": "needle.beta", "multiline": True, "-i": True, "output_mode": "count"},
    {"pattern": r"^\w+$", "output_mode": "count", "path": "a"},
])
def test_python_gives_ripgreps_results_on_a_generated_tree(tmp_path, arguments):
    generated_tree(tmp_path, seed=15, files=400)
    args = prepare_grep({"pattern": "needle", **arguments})
    root = tmp_path / args.path if args.path else tmp_path
    by_rg, engine = search(args, root, True)
    assert engine == "ripgrep"
    by_python, _ = search(args, root, False)
    rg_text, py_text = (format_grep(f, args, root, tmp_path)[0] for f in (by_rg, by_python))
    assert by_rg.files, "the generated tree should have matches"
    assert py_text == rg_text


# ------------------------------------------------------------------------------ in a session


def tool_texts(session) -> list[str]:
    return ["".join(c.text for c in m.content) for m in session.messages if m.role == "tool"]


def call(name: str, **arguments) -> dict:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


@pytest.mark.anyio
async def test_a_session_has_both_tools_read_only_and_judges_paths_like_read(zpi_env, tmp_path):
    ws = tmp_path / "ws"
    write(ws, "a.py", "needle\n")
    write(tmp_path / "outside", "b.py", "needle\n")
    (ws / "link").symlink_to(tmp_path / "outside")
    session = await scripted_session(ws, [
        call("grep", pattern="needle"), call("glob", pattern="**/*.py"),
        call("grep", pattern="needle", path=str(tmp_path / "outside")),
        call("glob", pattern="*", path="../outside"),
        call("grep", pattern="needle", path="link"), {"text": "done"}],
        settings={"permissions": {"deny": [f"glob({tmp_path}/outside)"]}})
    tools = session.tools
    assert tools["grep"].metadata.read_only and tools["grep"].metadata.concurrency_safe
    assert tools["glob"].metadata.read_only and tools["glob"].metadata.concurrency_safe
    await session.run("look")
    await session.dispose()
    found, listed, outside, denied, linked = tool_texts(session)
    assert found == "Found 1 file(s)\na.py" and listed == "a.py"
    assert "outside the workspace" in outside and "b.py" not in outside
    assert f"glob({tmp_path}/outside)" in denied and "b.py" not in denied
    assert "deny" in denied and "approver" not in denied
    # a symlink in the workspace to a folder outside it is judged where it leads
    assert "link (resolves to" in linked and "outside the workspace" in linked


@pytest.mark.anyio
async def test_a_long_result_is_spilled_and_grep_may_search_the_spilled_file(zpi_env, tmp_path):
    from zpi_host.session.assembly import create_session
    from zpi_host.testing import FunctionModel

    write(tmp_path / "ws", "big.txt", "".join(f"needle {i}\n" for i in range(20_000)))

    def model(request):
        results = ["".join(c.text for c in m.content) for m in request.messages
                   if m.role == "tool"]
        if not results:
            return call("grep", pattern="needle", output_mode="content")
        if len(results) == 1:  # the spill folder is outside the workspace, yet may be read
            spilled = results[0].split("full output in ")[1].split(" ...")[0]
            return call("grep", pattern="needle 19999$", path=spilled, output_mode="content")
        return {"text": "done"}

    session = await create_session(model="function:x", provider=FunctionModel(model),
                                   cwd=tmp_path / "ws", settings={})
    await session.run("look")
    await session.dispose()
    first, second = tool_texts(session)
    assert "bytes omitted; full output in" in first and first.startswith("big.txt:1:needle 0")
    assert second.endswith(":20000:big.txt:20000:needle 19999")


@pytest.mark.anyio
async def test_the_service_can_be_switched_off(zpi_env, tmp_path):
    off = await scripted_session(tmp_path, [{"text": "x"}],
                                 settings=builtins_settings(search={"enabled": False}))
    assert not {"glob", "grep"} & set(off.tools)
    await off.dispose()


def test_ripgrep_off_in_settings_uses_python(tmp_path):
    tools = service.zpi_register_tools(tmp_path, builtins_settings(search={"ripgrep": "off"}))
    assert tools is not None
    write(tmp_path, "a.txt", "needle\n")
    grep = next(t for t in tools if t.name == "grep")
    result = grep.execute(grep.prepare_arguments({"pattern": "needle"}), ctx(tmp_path))
    assert result.details["engine"] == "python"  # type: ignore[index, union-attr]


@pytest.mark.parametrize("use_rg", [pytest.param(True, marks=needs_rg), False])
def test_a_search_that_finds_too_much_stops_and_says_so(tmp_path, monkeypatch, use_rg):
    from zpi_builtins import search_grep

    for i in range(50):
        write(tmp_path, f"f{i:02}.txt", "needle\n" * 200)
    monkeypatch.setattr(search_grep, "MAX_COLLECT_BYTES", 2000)
    text = grep_text(tmp_path, use_rg, output_mode="content")
    assert "[the search stopped early" in text
    assert 0 < text.count(":needle") < 10_000  # output is read in pieces of up to 64 KiB
