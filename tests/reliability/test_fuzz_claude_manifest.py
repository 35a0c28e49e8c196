"""Fuzzing Claude plugin folders: ``.claude-plugin/plugin.json`` (``manifest.py``) and
``hooks/hooks.json`` (``hooks/config.py``). A manifest reads or raises :class:`ManifestError`
naming the file; a hooks configuration never raises (problems are diagnostics); a whole folder
loads or is listed as failed, never a traceback.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path
from typing import Any

from helpers.reliability import scaled
from hypothesis import given, settings
from hypothesis import strategies as st

from zpi_compat_claude.hooks.config import EVENTS, parse_hooks
from zpi_compat_claude.manifest import KNOWN_FIELDS, ManifestError, read_manifest

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(max_size=10)
    | st.sampled_from(["./skills", "../out", "/abs", "my-plugin", "command", "Bash|Edit",
                       "*", "(", "string", "number", "boolean", "directory", "file"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=10,
)
MANIFEST_KEYS = sorted(KNOWN_FIELDS)


@st.composite
def manifests(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 9)) == 0:
        return draw(json_values)
    data: dict[str, Any] = {"name": draw(st.sampled_from(["my-plugin", "Bad Name", "", "a"])
                                         | json_values)}
    for key in draw(st.lists(st.sampled_from([*MANIFEST_KEYS, "x"]), max_size=5)):
        if key == "userConfig":
            data[key] = draw(st.dictionaries(
                st.sampled_from(["token", "bad key", "n"]),
                st.fixed_dictionaries({"type": st.sampled_from(
                    ["string", "number", "boolean", "directory", "file", "x"])},
                    optional={"default": json_values, "min": json_values, "max": json_values,
                              "multiple": json_values, "required": json_values,
                              "sensitive": json_values, "title": json_values}),
                max_size=2))
        else:
            data[key] = draw(json_values)
    return data


handlers = st.fixed_dictionaries(
    {"type": st.sampled_from(["command", "http", "prompt", "x"]) | json_values},
    optional={"command": st.sampled_from(["true", "", "echo hi"]) | json_values,
              "timeout": json_values | st.sampled_from([1e308, -1, 0, 10**400]),
              "shell": json_values, "once": json_values, "async": json_values,
              "if": json_values, "x": json_values})
groups = st.fixed_dictionaries(
    {"hooks": st.lists(handlers | json_values, max_size=3) | json_values},
    optional={"matcher": st.sampled_from(["Bash", "Edit|Write", "*", "(", "mcp__.*", ""])
              | json_values, "x": json_values})
hook_files = st.one_of(
    json_values,
    st.dictionaries(st.sampled_from([*EVENTS, "PreToolUse", "Nope", "x"]),
                    st.lists(groups | json_values, max_size=3) | json_values, max_size=3)
    .map(lambda events: {"hooks": events}),
    st.fixed_dictionaries({"hooks": json_values}, optional={"description": json_values}),
)


@given(manifests())
def test_a_manifest_reads_or_raises_a_manifest_error(tmp_path, data):
    root = tmp_path / "plugin"
    (root / ".claude-plugin").mkdir(parents=True, exist_ok=True)
    path = root / ".claude-plugin" / "plugin.json"
    path.write_text(json.dumps(data))
    warnings: list[str] = []
    try:
        read_manifest(root, warnings)
    except ManifestError as exc:
        assert str(path) in str(exc)
    assert all(isinstance(w, str) for w in warnings)


@given(st.binary(max_size=40)
       | st.sampled_from([b"[" * 5_000, b'{"name": 1' + b"0" * 5_000 + b"}"]))
def test_manifest_bytes_read_or_raise_a_manifest_error(tmp_path, raw):
    (tmp_path / ".claude-plugin").mkdir(exist_ok=True)
    (tmp_path / ".claude-plugin" / "plugin.json").write_bytes(raw)
    with contextlib.suppress(ManifestError):
        read_manifest(tmp_path, [])


@given(hook_files)
def test_hooks_json_never_raises(data):
    config, problems = parse_hooks(data, "hooks.json")
    assert all(isinstance(p, str) and p.startswith("hooks.json") for p in problems)
    for groups_of_event in config.events.values():
        for group in groups_of_event:
            for handler in group.handlers:
                assert handler.timeout_s is None or handler.timeout_s > 0
                assert isinstance(handler.command, str) and handler.command.strip()


@settings(max_examples=scaled(25, 1_000))
@given(manifests(), hook_files)
def test_a_whole_folder_loads_or_is_listed_as_failed(manifest, hooks):
    from zpi_host.contract.plugins import PluginConfig, PluginHost

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "plugin"
        (root / ".claude-plugin").mkdir(parents=True)
        (root / "hooks").mkdir()
        (root / ".claude-plugin" / "plugin.json").write_text(json.dumps(manifest))
        (root / "hooks" / "hooks.json").write_text(json.dumps(hooks))
        settings = {"compat": {"claude": {"plugin_dirs": [str(root)]}}}
        host = PluginHost(PluginConfig(load_only=["claude"], settings=settings,
                                       cwd=Path(folder))).load()
        records = [r for r in host.records if r.name.startswith("claude:")]
        assert records, [r.name for r in host.records]
        for record in records:
            assert record.status in ("ok", "failed")
            if record.status == "failed":
                assert record.error and "Traceback" not in record.error


def test_a_timeout_too_large_for_a_float_is_a_diagnostic():
    """Found by the long run: ``"timeout": 10**400`` raised OverflowError."""
    handler = {"type": "command", "command": "true", "timeout": 10**400}
    config, problems = parse_hooks({"hooks": {"SessionStart": [{"hooks": [handler]}]}},
                                   "hooks.json")
    assert "\"timeout\" must be a number of seconds" in problems[0]
    [group] = config.events["SessionStart"]
    assert group.handlers[0].timeout_s is None


def test_a_handler_type_that_is_not_a_string_is_a_diagnostic():
    """Found by this suite: ``{"type": []}`` raised TypeError (unhashable)."""
    config, problems = parse_hooks({"hooks": {"SessionStart": [{"hooks": [{"type": []}]}]}},
                                   "hooks.json")
    assert not config and "unknown handler type []" in problems[0]
