"""Where sessions live: agent dir, project keys, session ids; and a cheap import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from zpi_host.transcript import InvalidSessionIdError, agent_dir, check_session_id, project_key
from zpi_host.transcript.paths import MAX_KEY_LENGTH, find_session, session_path


def test_agent_dir(tmp_path: Path) -> None:
    assert agent_dir({"ZPI_AGENT_DIR": str(tmp_path / "a")}) == tmp_path / "a"
    assert agent_dir({"HOME": "/home/me"}).name == "agent"
    assert agent_dir({"ZPI_AGENT_DIR": ""}) == Path("~/.zpi/agent").expanduser()
    assert agent_dir({"ZPI_AGENT_DIR": "rel"}).is_absolute()


def test_project_key_replaces_unsafe_characters() -> None:
    assert project_key("/home/me/my project/é") == "-home-me-my-project--"
    assert project_key("/srv/app_1.2-x") == "-srv-app_1.2-x"


def test_project_key_is_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert project_key("sub") == project_key(tmp_path / "sub")
    assert project_key(tmp_path / "x" / ".." / "sub") == project_key(tmp_path / "sub")


def test_long_project_keys_are_stable_and_distinct() -> None:
    base = "/very/long/" + "directory-name/" * 10
    one, two = project_key(base + "one"), project_key(base + "two")
    assert len(one) == len(two) == MAX_KEY_LENGTH
    assert one != two and one[:83] == two[:83]
    assert one == project_key(base + "one")
    assert one == one[:83] + "-" + one[-16:] and all(c in "0123456789abcdef" for c in one[-16:])
    short = "/short/path"
    assert project_key(short) == "-short-path"


def test_session_ids_are_uuids() -> None:
    sid = "0B6B1C1E-5D0A-4F55-9D1E-3F5A2F1D6C2B"
    assert check_session_id(sid) == sid.lower()
    for bad in ("../x", "x", "0b6b1c1e-5d0a-4f55-9d1e-3f5a2f1d6c2b/../../x", None, 5,
                "0b6b1c1e-5d0a-4f55-9d1e-3f5a2f1d6c2b\n"):
        with pytest.raises(InvalidSessionIdError):
            check_session_id(bad)


def test_session_path_and_find(tmp_path: Path) -> None:
    sid = "0b6b1c1e-5d0a-4f55-9d1e-3f5a2f1d6c2b"
    path = session_path(sid, "/p", tmp_path)
    assert path == tmp_path / "sessions" / "-p" / f"{sid}.jsonl"
    assert find_session(sid, tmp_path) is None
    path.parent.mkdir(parents=True)
    path.write_text("")
    assert find_session(sid, tmp_path) == path
    assert find_session(sid, tmp_path, cwd="/elsewhere") == path


def test_importing_the_package_is_cheap() -> None:
    code = ("import sys, zpi_host.transcript as t; t.agent_dir; t.project_key; "
            "print(sorted(m for m in ('cattrs', 'zpi_host.transcript.store', 'anyio', 'httpx') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    assert out.strip() == "[]"
