"""Hooks in ZCode's config files: each file read on its own (``enabled``, ``timeoutMs``,
``maxOutputBytes``, ``events``), then both as the plugin ``zcode:config``."""

from __future__ import annotations

import pytest
from helpers.zcode import CORPUS, load_host, rows, user_config, workspace_config

from zpi_compat_claude.manifest import ManifestError
from zpi_compat_zcode.config_hooks import read_config_hooks

FILES = CORPUS / "config-files"


def test_an_enabled_file_gives_its_defaults_to_its_handlers():
    hooks = read_config_hooks(FILES / "user-config.json")
    assert hooks is not None and hooks.enabled and hooks.diagnostics == ()
    (prompt,) = hooks.config.events["UserPromptSubmit"][0].handlers
    assert prompt.args is not None and prompt.timeout_s == 15.0 and prompt.output_cap == 64
    (pre,) = hooks.config.events["PreToolUse"][0].handlers
    assert pre.args is None and pre.timeout_s == 15.0


def test_a_handler_timeout_wins_over_the_file_default():
    hooks = read_config_hooks(FILES / "workspace-config.json")
    (pre,) = hooks.config.events["PreToolUse"][0].handlers
    assert pre.timeout_s == 5.0 and pre.output_cap is None  # the dialect's 32 KiB applies
    (start,) = hooks.config.events["SessionStart"][0].handlers
    assert start.timeout_s is None  # the dialect's 60 s applies


def test_hooks_are_off_unless_enabled():
    hooks = read_config_hooks(FILES / "disabled-config.json")
    assert not hooks.enabled and hooks.config.events == {}
    assert "enabled is not true, so its hooks do not run" in hooks.diagnostics[0]


def test_bad_values_are_diagnostics():
    hooks = read_config_hooks(FILES / "bad-config.json")
    text = " | ".join(hooks.diagnostics)
    assert not hooks.enabled
    for expected in ("unknown field 'colour' ignored", "enabled must be true or false",
                     "timeoutMs must be a number of milliseconds above 0",
                     "maxOutputBytes must be a whole number of bytes above 0"):
        assert expected in text


def test_unreadable_and_absent_files(tmp_path):
    with pytest.raises(ManifestError, match="invalid JSON at line 2"):
        read_config_hooks(FILES / "broken-json.json")
    assert read_config_hooks(tmp_path / "missing.json") is None
    (tmp_path / "plain.json").write_text('{"theme": "dark"}')
    assert read_config_hooks(tmp_path / "plain.json") is None


def test_both_files_are_one_plugin_listing_its_files(zpi_env, tmp_path):
    user = user_config(zpi_env.home, "user-config.json")
    workspace = workspace_config(tmp_path, "workspace-config.json")
    host = load_host({}, tmp_path)
    row = rows(host, tmp_path)["zcode:config"]
    assert (row["source"], row["status"]) == ("zcode", "ok")
    assert sorted(row["contributes"]["files"]) == sorted([str(user), str(workspace)])
    assert sorted(row["contributes"]["hooks"]) == ["PreToolUse", "SessionStart",
                                                   "UserPromptSubmit"]
    plugin = host.get("zcode:config").plugin
    first, second = plugin._matching("PreToolUse", "Bash")
    assert "user-config" in first.command and second.argv is not None  # user first


def test_a_broken_file_is_a_warning_unless_nothing_is_usable(zpi_env, tmp_path):
    user = zpi_env.home / ".zcode" / "cli" / "config.json"
    user.parent.mkdir(parents=True)
    user.write_bytes((FILES / "broken-json.json").read_bytes())
    host = load_host({}, tmp_path)
    failed = rows(host, tmp_path)["zcode:config"]
    assert failed["status"] == "failed" and "invalid JSON" in failed["error"]
    workspace_config(tmp_path, "workspace-config.json")
    row = rows(load_host({}, tmp_path), tmp_path)["zcode:config"]
    assert row["status"] == "ok" and any("invalid JSON" in w for w in row["warnings"])


def test_disabled_files_are_listed_with_the_reason(zpi_env, tmp_path):
    workspace_config(tmp_path, "disabled-config.json")
    row = rows(load_host({}, tmp_path), tmp_path)["zcode:config"]
    assert row["status"] == "ok" and row["contributes"] == {}
    assert any("enabled is not true" in w for w in row["warnings"])


@pytest.mark.parametrize("hostile", ["fifo", "dev-zero", "outside"])
def test_a_hostile_workspace_config_is_reported_not_read(zpi_env, tmp_path, hostile):
    """A FIFO ``.zcode/config.json`` hung the load; ``/dev/zero`` would be read forever."""
    import os

    target = tmp_path / "project" / ".zcode" / "config.json"
    target.parent.mkdir(parents=True)
    if hostile == "fifo":
        os.mkfifo(target)
        expected = "it is a FIFO (named pipe), not a regular file"
    elif hostile == "dev-zero":
        os.symlink("/dev/zero", target)
        expected = "it is a symlink to /dev/zero, outside"
    else:
        (tmp_path / "theirs.json").write_bytes((FILES / "user-config.json").read_bytes())
        os.symlink(tmp_path / "theirs.json", target)
        expected = f"it is a symlink to {tmp_path}/theirs.json, outside {tmp_path}/project"
    row = rows(load_host({}, tmp_path / "project"), tmp_path / "project")["zcode:config"]
    assert row["status"] == "failed" and f"{target}: {expected}" in row["error"]
