"""Fuzzing settings files: whatever ``settings.json`` holds, ``SettingsManager`` never raises;
bad values become warnings and their keys fall back, and every reader of the merged settings
either works or stops with a typed error (issue 11).
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path
from typing import Any

import anyio
from helpers.reliability import scaled
from hypothesis import given, settings
from hypothesis import strategies as st

from zpi_host.errors import ZpiError
from zpi_host.settings.manager import SettingsManager, SettingsProblem
from zpi_host.settings.schema import Setting, find, settings_table

KNOWN = [path for path, _ in settings_table()]
SECTIONS = sorted({path.rsplit(".", 1)[0] for path in KNOWN if "." in path})

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False) | st.text(max_size=10)
    | st.sampled_from(["turn", "record", "bypass", "plan", "read", "fail-open", "x:y"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=8,
)


def _good_value(path: str) -> st.SearchStrategy[Any]:
    """A value the schema accepts for ``path`` (found by filtering random values and a few
    typical ones), so fuzzed files mix good and bad keys."""
    node = find(path)
    assert isinstance(node, Setting)
    typical = [node.default, [], {}, 1, 0.5, True, "turn", "record", ["a"], "plan", None]
    accepted = [v for v in typical if node.kind.accepts(v)]
    return st.sampled_from(accepted) if accepted else st.just(node.default)


@st.composite
def settings_objects(draw: st.DrawFn) -> Any:
    shape = draw(st.sampled_from(["schema", "schema", "schema", "random"]))
    if shape == "random":
        return draw(json_values)
    data: dict[str, Any] = {}
    for _ in range(draw(st.integers(0, 6))):
        choice = draw(st.sampled_from(["known", "known", "section", "unknown"]))
        if choice == "section":
            path, value = draw(st.sampled_from(SECTIONS)), draw(json_values)
        elif choice == "unknown":
            path = draw(st.sampled_from(SECTIONS)) + "." + draw(st.text(max_size=6))
            value = draw(json_values)
        else:
            path = draw(st.sampled_from(KNOWN))
            value = draw(st.one_of(json_values, _good_value(path)))
        _put(data, path.split("."), value)
    return data


def _put(data: dict[str, Any], parts: list[str], value: Any) -> None:
    for part in parts[:-1]:
        child = data.get(part)
        if not isinstance(child, dict):
            child = data[part] = {}
        data = child
    data[parts[-1]] = value


def _files(user: Any, project: Any, raw: bytes | None
           ) -> tuple[Path, Path, tempfile.TemporaryDirectory[str]]:
    folder = tempfile.TemporaryDirectory()
    agent, cwd = Path(folder.name) / "agent", Path(folder.name) / "project"
    (cwd / ".zpi").mkdir(parents=True)
    agent.mkdir()
    (agent / "settings.json").write_text(json.dumps(user))
    (cwd / ".zpi" / "settings.json").write_bytes(raw if raw is not None
                                                 else json.dumps(project).encode())
    return agent, cwd, folder


def _check_merged(manager: SettingsManager) -> None:
    """Every known key of the merged settings has the schema's type."""
    for path, setting in settings_table():
        value = manager.get(path, default=_ABSENT)
        if value is not _ABSENT:
            assert setting.kind.accepts(value), (path, value)
    for problem in manager.problems:
        where = str(problem.path) if problem.path is not None else "settings (in memory)"
        assert isinstance(problem, SettingsProblem) and str(problem).startswith(where)


_ABSENT = object()


def _readers(settings: dict[str, Any], cwd: Path) -> None:
    """Each reader of the settings: works, or a typed error."""
    from zpi_compat_claude.discovery import ClaudeSettings
    from zpi_host.agent.compaction import CompactionSettings
    from zpi_host.contract.hookrunner import HookPolicies
    from zpi_host.permissions import build_policy
    from zpi_host.providers.catalog import RequestPolicy, list_models

    readers = [
        lambda: RequestPolicy.from_settings(settings),
        lambda: CompactionSettings.from_settings(settings),
        lambda: HookPolicies(settings),
        lambda: build_policy(settings, cwd=cwd),
        lambda: ClaudeSettings.from_settings(settings, cwd),
        lambda: list_models(settings),
    ]
    for read in readers:
        with contextlib.suppress(ZpiError):
            read()


@given(settings_objects(), settings_objects(),
       st.one_of(st.none(), st.binary(max_size=30), st.sampled_from(
           [b"{", b"\xff\xfe", b"[]", b"null", b'{"a": 1}{', b"\xef\xbb\xbf{}",
            b"[" * 5_000, b'{"a": 1' + b"0" * 5_000 + b"}"])))
def test_settings_manager_never_raises(user, project, raw):
    agent, cwd, folder = _files(user, project, raw)
    with folder:
        manager = SettingsManager(agent, cwd)
        _check_merged(manager)
        _readers(manager.snapshot(), cwd)


@given(settings_objects())
def test_in_memory_settings_never_raise(data):
    if not isinstance(data, dict):
        data = {"value": data}
    manager = SettingsManager.in_memory(data)
    _check_merged(manager)


@settings(max_examples=scaled(25, 800))
@given(settings_objects())
def test_a_session_starts_or_stops_with_a_typed_error(project):
    """The whole assembly with fuzzed project settings: a session, or a ZpiError."""
    from zpi_host.contract.plugins import PluginConfig, PluginHost
    from zpi_host.session.assembly import create_session

    agent, cwd, folder = _files({}, project, None)
    script = Path(folder.name) / "script.jsonl"
    script.write_text('{"text": "hi"}\n')

    async def start_and_run() -> None:
        try:
            session = await create_session(
                model=f"scripted:{script}", cwd=cwd, agent_dir=agent, persist=False,
                host=PluginHost(PluginConfig(autoload=False)).load())
        except ZpiError:
            return
        try:
            result = await session.run("hello")
        finally:
            await session.dispose()
        assert result.result == "hi" or result.is_error

    with folder:
        anyio.run(start_and_run)
