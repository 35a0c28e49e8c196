"""What resuming a long session leaves to the garbage collector, and how often it resolves
the paths a session named."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from zpi_host.permissions import paths
from zpi_host.providers.messages import UserMessage
from zpi_host.session import housekeeping
from zpi_host.transcript import SessionManager, read_transcript


def test_loaded_records_go_to_the_oldest_generation(tmp_path: Path) -> None:
    with SessionManager.create(tmp_path / "project", agent_dir=tmp_path / "agent") as manager:
        for i in range(20):
            manager.append_message(UserMessage.text(f"prompt {i}"))
        path = manager.path
    assert path is not None
    transcript = read_transcript(path)
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    records = [r for r in transcript.records if gc.is_tracked(r)]
    assert records and all(id(r) in oldest for r in records)
    assert gc.get_freeze_count() == 0  # nothing stays frozen: a library must not leak cycles
    assert gc.isenabled()


def test_each_named_path_is_resolved_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    from types import SimpleNamespace

    seen: list[str] = []
    absolute = paths.absolute

    def counting(raw: str, cwd: Path) -> Path:
        seen.append(raw)
        return absolute(raw, cwd)

    monkeypatch.setattr(paths, "absolute", counting)
    (tmp_path / "src").mkdir()
    stale = tmp_path / "src" / ".a.py.zpi-999999999-abcd1234.tmp"  # of a process that is gone
    stale.write_text("partial")
    records = [SimpleNamespace(TYPE="tool_use", name=name, arguments={"path": f"src/{f}"})
               for _ in range(50) for name in ("read", "write") for f in ("a.py", "b.py")]
    records.append(SimpleNamespace(TYPE="message"))
    assert housekeeping.sweep_touched_folders(records, tmp_path) == [stale]
    assert sorted(seen) == ["src/a.py", "src/b.py"]


def test_only_folders_inside_the_working_directory_are_swept(tmp_path: Path) -> None:
    """A record naming a folder elsewhere (a shared store may say anything) is data: the
    stale temporary files there are left alone."""
    from types import SimpleNamespace

    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir()
    elsewhere.mkdir()
    inside = work / ".a.py.zpi-999999999-abcd1234.tmp"
    outside = elsewhere / ".b.py.zpi-999999999-abcd1234.tmp"
    for stale in (inside, outside):
        stale.write_text("partial")
    records = [SimpleNamespace(TYPE="tool_use", name="write", arguments={"path": path})
               for path in ("a.py", str(elsewhere / "b.py"), "../elsewhere/b.py")]
    assert housekeeping.sweep_touched_folders(records, work) == [inside]
    assert outside.exists()


def test_reading_a_transcript_does_not_hold_the_file_three_times(tmp_path: Path) -> None:
    """The file's bytes, its text and its lines are let go while the records are built: the
    traced peak of ``read_transcript`` stays near what the records keep plus one copy of the
    file, where holding bytes, lines and records together took about four times the file."""
    import tracemalloc

    from zpi_host.providers.messages import TextContent, ToolResultMessage

    with SessionManager.create(tmp_path / "project", agent_dir=tmp_path / "agent") as manager:
        for i in range(300):  # long results: the records hold little beside their text
            manager.append_message(ToolResultMessage(
                f"call_{i}", "read", (TextContent(f"line {i} " * 800),), False))
        path = manager.path
    assert path is not None
    size = path.stat().st_size
    gc.collect()
    tracemalloc.start()
    try:
        transcript = read_transcript(path)
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(transcript.records) == 301
    assert peak < kept + 1.3 * size, (peak / size, kept / size)
