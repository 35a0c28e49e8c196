"""The disk cache of attrs-generated methods (zpi_host.support.codecache): a second process reuses
the
compiled code, the classes behave exactly as freshly compiled ones (hash seeds included), and
a bad or foreign cache file is ignored."""

from __future__ import annotations

import json
import marshal
import os
import py_compile
import subprocess
import sys
from importlib.util import MAGIC_NUMBER, cache_from_source
from pathlib import Path
from typing import Any

import pytest

from zpi_host.support.codecache import EARLIER_NAME, MAX_IDLE_DAYS, GeneratedCodeCache, cache_path

#: run in a fresh process: install the cache at argv[1], build attrs classes, report
PROGRAM = r"""
import json, sys
from pathlib import Path
from typing import Any
from zpi_host.support.codecache import install
cache = install(Path(sys.argv[1]))
import attrs

@attrs.frozen
class Point:
    x: int
    y: int = 0

@attrs.define
class Box:
    items: list = attrs.field(factory=list)

p = Point(1, 2)
seed = hash("<attrs generated hash __main__.Point>")
# the classes attrs builds for itself count apart: what this program's two did
internal = sum("__main__." not in name for name in cache.used)
print(json.dumps({
    "hits": max(cache.hits - internal, 0), "added": max(cache.added - internal, 0),
    "attrs_own": sorted({name.split(" ")[-1].rstrip(">") for name in cache.used
                         if "__main__." not in name}),
    "hash_ok": hash(p) == hash((seed, 1, 2)),
    "eq": p == Point(1, 2) and p != Point(2, 1),
    "repr": repr(p) + " " + repr(Box([3])),
    "frozen": not hasattr(p, "__dict__"),
}))
"""


def run(cache: Path, *, seed: str = "0", write: bool = True) -> dict[str, object]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if not write:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    done = subprocess.run([sys.executable, "-c", PROGRAM, str(cache)], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    assert result["hash_ok"] and result["eq"], result
    assert result["repr"] == "Point(x=1, y=2) Box(items=[3])"
    return result


def test_a_second_process_reuses_the_compiled_methods(tmp_path: Path) -> None:
    cache = tmp_path / "pycache" / "attrs.marshal"
    first = run(cache, seed="1")
    assert first["hits"] == 0 and first["added"] == 2
    assert cache.is_file()
    # another hash seed: the code comes from the cache, with this process's seed put back
    second = run(cache, seed="2")
    assert second["hits"] == 2 and second["added"] == 0


def test_the_classes_attrs_builds_for_itself_go_through_the_cache(tmp_path: Path) -> None:
    """Installed before attrs is imported, the cache is in place before the ``attr`` package
    builds its own validator classes (``attr._make``'s own classes: the next test)."""
    cache = tmp_path / "attrs.marshal"
    first = run(cache)
    assert "attr.validators._InstanceOfValidator" in first["attrs_own"]  # type: ignore[operator]
    second = run(cache)
    assert second["attrs_own"] == first["attrs_own"]


def test_nothing_is_written_when_bytecode_writing_is_off(tmp_path: Path) -> None:
    cache = tmp_path / "attrs.marshal"
    run(cache, write=False)
    assert not cache.exists()
    run(cache)
    assert run(cache, write=False)["hits"] == 2  # read either way, as .pyc files are


@pytest.mark.parametrize("content", [b"", b"garbage", marshal.dumps((b"\0\0\r\n", 0, {})),
                                     marshal.dumps(("not", "a", "cache")),
                                     marshal.dumps([1, 2, 3])])
def test_a_damaged_or_foreign_file_is_ignored_and_replaced(tmp_path: Path,
                                                           content: bytes) -> None:
    cache = tmp_path / "attrs.marshal"
    cache.write_bytes(content)
    assert run(cache)["hits"] == 0
    assert run(cache)["hits"] == 2


def test_the_cache_lives_in_a_module_bytecode_slot_that_uninstalls_remove(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pip uninstall removes the .pyc of each module it installed: the cache is one, the slot
    module ships in the package, and a save there removes the earlier layout's stray file."""
    import zpi_host.support

    path = cache_path()
    slot = Path(zpi_host.support.__file__).with_name("codecache_slot.py")
    assert slot.is_file() and path == Path(cache_from_source(str(slot)))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    earlier = tmp_path / EARLIER_NAME
    earlier.write_bytes(b"old")
    # what pip's install-time byte compiling leaves in the slot: a real .pyc, ignored
    py_compile.compile(str(slot), cfile=str(tmp_path / path.name), doraise=True)
    cache = GeneratedCodeCache(tmp_path / path.name)
    assert cache.entries == {}
    cache.compile("x = 1\n", "<attrs generated methods m.X>")
    cache.save()
    assert not earlier.exists()
    assert GeneratedCodeCache(tmp_path / path.name).entries.keys() == {
        "<attrs generated methods m.X>"}


def test_an_entry_for_another_script_is_not_used(tmp_path: Path) -> None:
    cache = GeneratedCodeCache(tmp_path / "c.marshal")
    name = "<attrs generated methods m.C>"
    first = cache.compile("def f():\n    return 1\n", name)
    second = cache.compile("def f():\n    return 2\n", name)
    namespace: dict[str, object] = {}
    exec(second, namespace)
    assert first is not second and namespace["f"]() == 2  # type: ignore[operator]
    assert cache.hits == 0


def test_an_unwritable_place_is_not_an_error(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    blocker = tmp_path / "file"
    blocker.write_text("")
    cache = GeneratedCodeCache(blocker / "sub" / "c.marshal")  # a folder under a file
    cache.compile("x = 1\n", "<attrs generated methods m.X>")
    cache.save()
    assert not (blocker / "sub").exists()


def test_the_cli_builds_its_classes_through_the_cache(tmp_path: Path) -> None:
    program = ("import io, contextlib, zpi_host.support.codecache as c, zpi_host.cli as cli\n"
               "with contextlib.redirect_stdout(io.StringIO()):\n"
               "    code = cli.main(['--list-plugins', '--json'])\n"
               "print(code, c._installed is not None and c._installed.hits + "
               "c._installed.added > 0)")
    env = {**os.environ, "ZPI_AGENT_DIR": str(tmp_path / "agent")}
    done = subprocess.run([sys.executable, "-c", program], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.stdout.split() == ["0", "True"], done.stderr


def test_the_file_keeps_what_was_used_first_and_stays_bounded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setattr("zpi_host.support.codecache.MAX_ENTRIES", 3)
    path = tmp_path / "c.marshal"

    def names(cache: GeneratedCodeCache) -> set[str]:
        return set(GeneratedCodeCache(cache.path).entries)

    first = GeneratedCodeCache(path)
    for n in range(3):
        first.compile(f"x = {n}\n", f"<attrs generated methods m.A{n}>")
    first.save()
    second = GeneratedCodeCache(path)  # uses one of them and a new one: both kept, one other
    second.compile("x = 2\n", "<attrs generated methods m.A2>")
    second.compile("y = 1\n", "<attrs generated methods m.B>")
    second.save()
    kept = names(second)
    assert len(kept) == 3 and {"<attrs generated methods m.A2>",
                               "<attrs generated methods m.B>"} <= kept
    third = GeneratedCodeCache(path)  # used more than the bound: nothing saved
    for n in range(4):
        third.compile(f"z = {n}\n", f"<attrs generated methods m.C{n}>")
    third.save()
    assert names(third) == kept


#: a fresh process: argv[1] the cache ("" for none), argv[2] "before" to import dataclasses
#: before the cache is installed; builds dataclasses and reports what they do
DATACLASS_PROGRAM = r"""
import json, sys
from pathlib import Path
from typing import Any
if sys.argv[2] == "before":
    import dataclasses
cache = None
if sys.argv[1]:
    from zpi_host.support.codecache import install
    cache = install(Path(sys.argv[1]))
import dataclasses, inspect

@dataclasses.dataclass(frozen=True, order=True)
class Point:
    x: int
    y: "int" = 0
    tags: list = dataclasses.field(default_factory=list, compare=False)

@dataclasses.dataclass
class Box:
    items: list

p = Point(1, 2)
try:
    p.x = 3
    frozen = False
except dataclasses.FrozenInstanceError:
    frozen = True
print(json.dumps({
    "methods": None if cache is None else sum(n.startswith("<dataclasses") for n in cache.used),
    "hits": None if cache is None else cache.hits,
    "added": None if cache is None else cache.added,
    "repr": repr(p) + repr(Box([1])), "eq": p == Point(1, 2, ["x"]), "lt": p < Point(2),
    "hash": hash(p) == hash((1, 2)), "frozen": frozen,
    "signature": str(inspect.signature(Point.__init__)),
    "annotations": repr(Point.__init__.__annotations__),
    "file": Point.__init__.__code__.co_filename,
}))
"""


def run_dataclasses(cache: str, when: str = "after") -> dict[str, object]:
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    done = subprocess.run([sys.executable, "-c", DATACLASS_PROGRAM, cache, when], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize("when", ["after", "before"])
def test_dataclasses_methods_come_from_the_cache_and_behave_the_same(tmp_path: Path,
                                                                      when: str) -> None:
    """dataclasses compiles the source of each method it generates: with the cache installed
    (before or after dataclasses is imported) a second process takes the code from the cache,
    and the classes are the same as without it (signatures, annotations, file name)."""
    plain = run_dataclasses("")
    cache = str(tmp_path / "attrs.marshal")
    first = run_dataclasses(cache, when)
    second = run_dataclasses(cache, when)
    assert first["methods"] >= 6 and first["added"] >= first["methods"]  # type: ignore[operator]
    assert second["methods"] == first["methods"] and second["added"] == 0
    assert second["hits"] >= second["methods"]  # type: ignore[operator]
    shown = ("repr", "eq", "lt", "hash", "frozen", "signature", "annotations", "file")
    assert {k: first[k] for k in shown} == {k: second[k] for k in shown} == {
        k: plain[k] for k in shown}
    assert plain["frozen"] and plain["eq"] and plain["lt"] and plain["file"] == "<string>"


def test_generated_record_decoders_come_from_the_cache(tmp_path: Path) -> None:
    """transcript.plain generates a decoding function per record class: with the cache
    installed, a second process takes their code from it and decodes the same."""
    program = ("import json, sys; from pathlib import Path\n"
               "from zpi_host.support.codecache import install\n"
               "cache = install(Path(sys.argv[1]))\n"
               "from zpi_host.transcript.plain import structure\n"
               "from zpi_host.providers.messages import Usage\n"
               "usage = structure({'inputTokens': 3, 'outputTokens': 4}, Usage)\n"
               "print(json.dumps([repr(usage), sum(n.startswith('<plain structurer') "
               "for n in cache.used), cache.added]))")
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)

    def run_once() -> list[object]:
        done = subprocess.run([sys.executable, "-c", program, str(tmp_path / "c.marshal")],
                              env=env, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)  # type: ignore[no-any-return]

    first, second = run_once(), run_once()
    assert first[0] == second[0] and "input_tokens=3" in str(first[0])
    assert first[1] == second[1] == 1 and first[2] and second[2] == 0


def test_the_classes_of_attrs_own_module_come_from_the_cache(tmp_path: Path) -> None:
    """``attr._make`` builds its own classes while it is imported, before its compile helper
    can be routed: their methods come from the cache too (compiled as the built-in would),
    with each process's hash seed put back."""
    program = ("import json, sys; from pathlib import Path\n"
               "from zpi_host.support.codecache import install\n"
               "cache = install(Path(sys.argv[1]))\n"
               "import attr\n"
               "from attr import _make\n"
               "factory = attr.Factory(list)\n"
               "seed = hash('<attrs generated hash attr._make.Factory>')\n"
               "print(json.dumps([sorted(n for n in cache.used if 'attr._make.' in n), "
               "cache.hits, cache.added, hash(factory) == hash((seed, list, False)), "
               "factory == attr.Factory(list), repr(factory), "
               "'compile' in vars(_make)]))")
    env = {**os.environ}
    env.pop("PYTHONDONTWRITEBYTECODE", None)

    def run_once(seed: str) -> list[Any]:
        done = subprocess.run([sys.executable, "-c", program, str(tmp_path / "c.marshal")],
                              env={**env, "PYTHONHASHSEED": seed}, capture_output=True,
                              text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)  # type: ignore[no-any-return]

    first, second = run_once("1"), run_once("2")
    assert "<attrs generated __hash__ attr._make.Factory>" in first[0]
    assert first[0] == second[0] and first[2] >= len(first[0]) and second[2] == 0
    assert second[1] >= len(second[0])
    for result in (first, second):
        assert result[3:] == [True, True, "Factory(factory=<class 'list'>, takes_self=False)",
                              False]


def test_entries_no_process_used_for_a_month_leave_the_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    path = tmp_path / "c.marshal"
    old = GeneratedCodeCache(path)
    old.today -= MAX_IDLE_DAYS + 1  # a process a month and a day ago
    old.compile("x = 1\n", "<attrs generated methods m.Old>")
    old.compile("y = 1\n", "<attrs generated methods m.Kept>")
    old.save()
    recent = GeneratedCodeCache(path)
    recent.today -= 1  # yesterday: uses one of them, marking it, and adds nothing
    recent.compile("y = 1\n", "<attrs generated methods m.Kept>")
    assert recent.added == 0 and recent.stale_marks
    recent.save()
    marks = {name: entry[2] for name, entry in GeneratedCodeCache(path).entries.items()}
    assert marks == {"<attrs generated methods m.Old>": old.today,
                     "<attrs generated methods m.Kept>": recent.today}
    now = GeneratedCodeCache(path)  # today: the unused old entry is dropped at the next save
    now.compile("z = 1\n", "<attrs generated methods m.New>")
    now.save()
    assert set(GeneratedCodeCache(path).entries) == {"<attrs generated methods m.Kept>",
                                                     "<attrs generated methods m.New>"}
    again = GeneratedCodeCache(path)  # the same day, nothing new: the file is not rewritten
    again.compile("z = 1\n", "<attrs generated methods m.New>")
    assert not again.stale_marks and again.added == 0


def test_a_file_of_the_earlier_layout_is_read_as_empty(tmp_path: Path) -> None:
    path = tmp_path / "c.marshal"
    code = compile("x = 1\n", "<attrs generated methods m.A>", "exec")
    path.write_bytes(marshal.dumps((MAGIC_NUMBER, 0, {
        "<attrs generated methods m.A>": ("x = 1\n", code)})))
    cache = GeneratedCodeCache(path)
    assert cache.entries == {}
    cache.compile("x = 1\n", "<attrs generated methods m.A>")
    assert cache.hits == 0 and cache.added == 1


def test_zpi_no_code_cache_turns_it_off_and_a_run_is_the_same(tmp_path: Path) -> None:
    """The cache only saves start-up time: with ``ZPI_NO_CODE_CACHE=1`` the CLI installs
    nothing and a scripted run answers, records and prints exactly the same."""
    script = tmp_path / "script.jsonl"
    script.write_text('{"tool_calls": [{"name": "read", "arguments": {"path": "a.txt"}}]}\n'
                      '{"text": "done"}\n')
    (tmp_path / "a.txt").write_text("hello\n")
    program = ("import io, json, sys, contextlib, zpi_host.support.codecache as c\n"
               "from zpi_host.cli import main\n"
               "out = io.StringIO()\n"
               "with contextlib.redirect_stdout(out):\n"
               "    code = main(sys.argv[1:])\n"
               "result = json.loads(out.getvalue())\n"
               "print(json.dumps({'code': code, 'installed': c._installed is not None,\n"
               "                  'result': result['result'], 'is_error': result['is_error'],\n"
               "                  'num_turns': result['num_turns'], 'usage': result['usage']}))")
    outcomes = {}
    for switch in ("0", "1"):
        env = {**os.environ, "ZPI_AGENT_DIR": str(tmp_path / f"agent-{switch}"),
               "ZPI_NO_CODE_CACHE": switch}
        done = subprocess.run(
            [sys.executable, "-c", program, "run", "--model", f"scripted:{script}",
             "--output-format", "json", "read a.txt"],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        outcomes[switch] = json.loads(done.stdout)
        sessions = sorted((tmp_path / f"agent-{switch}").rglob("*.jsonl"))
        outcomes[switch]["records"] = [
            [json.loads(line)["type"] for line in path.read_text().splitlines()]
            for path in sessions]
    assert outcomes["0"].pop("installed") is True
    assert outcomes["1"].pop("installed") is False
    assert outcomes["0"] == outcomes["1"]
    assert outcomes["1"]["result"] == "done" and outcomes["1"]["records"]
