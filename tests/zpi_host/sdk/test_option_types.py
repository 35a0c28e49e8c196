"""Every option is type-checked before anything runs: a wrong type is a UsageError naming
the option, the type given and the type expected (``disallowed_tools="Bash"`` is not split
into letters, leaving Bash enabled)."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import attrs
import pytest

from zpi_host.errors import UsageError
from zpi_host.sdk import AgentOptions, SDKClient, query
from zpi_host.sdk.option_types import check_option_types, describe

from .conftest import collect

pytestmark = pytest.mark.anyio

BAD_VALUES = [
    ("tools", 5), ("tools", [1]),
    ("allowed_tools", "Bash"), ("allowed_tools", [1]), ("allowed_tools", {"Bash": True}),
    ("disallowed_tools", "Bash"), ("disallowed_tools", [None]),
    ("system_prompt", 3), ("system_prompt", ["be brief"]),
    ("permission_mode", 1), ("permission_mode", ["default"]),
    ("continue_conversation", "yes"), ("continue_conversation", 1),
    ("resume", 123), ("resume", ["abc"]), ("session_id", 123),
    ("max_turns", "3"), ("max_turns", 2.5), ("max_turns", True),
    ("max_budget_usd", "1"), ("max_budget_usd", True),
    ("model", 123), ("model", ["scripted:memory"]),
    ("cwd", 123), ("cwd", ["/tmp"]),
    ("settings", 42), ("settings", {"model": "a:b"}),
    ("add_dirs", "/tmp"), ("add_dirs", [1]),
    ("env", ["A=1"]), ("env", "A=1"), ("env", {"A": 1}), ("env", {1: "x"}),
    ("stderr", "stderr"), ("can_use_tool", "yes"),
    ("hooks", []), ("hooks", "PreToolUse"), ("hooks", {"PreToolUse": "x"}), ("hooks", {1: []}),
    ("include_partial_messages", "yes"), ("include_partial_messages", 1),
    ("fork_session", "no"),
    ("agents", ["reviewer"]), ("agents", "reviewer"),
    ("setting_sources", "user"), ("setting_sources", [1]),
    ("plugins", "plugins/dir"), ("plugins", ["plugins/dir"]), ("plugins", {"type": "local"}),
    ("effort", 1), ("output_format", "json"),
    ("session_store_flush", 1), ("load_timeout_ms", "60"), ("load_timeout_ms", 1.5),
    ("load_timeout_ms", True),
    ("persist_session", "no"), ("persist_session", 0),
    ("agent_dir", 1), ("project_key", 1), ("ask_user", "no"),
]


def test_the_table_is_long_enough_and_names_real_options():
    names = {f.name for f in attrs.fields(AgentOptions)}
    assert len(BAD_VALUES) >= 42
    assert {name for name, _ in BAD_VALUES} <= names


@pytest.mark.parametrize(("name", "value"), BAD_VALUES,
                         ids=[f"{n}={v!r}" for n, v in BAD_VALUES])
async def test_a_wrong_type_is_a_usage_error_and_nothing_runs(scripted, name, value):
    (scripted.cwd / "keep.txt").write_text("keep\n")
    scripted.turns({"tool_calls": [{"name": "Bash", "arguments": {"command": "rm keep.txt"}}]},
                   "ran")
    options = scripted.options(**{"permission_mode": "bypassPermissions", name: value})
    with pytest.raises(UsageError, match=f"option {name}") as info:
        await collect(query("go", options))
    assert type(info.value).__module__.startswith("zpi_host")
    assert scripted.scripted.requests == []  # the model was never asked
    assert (scripted.cwd / "keep.txt").exists()
    assert not list(Path(scripted.agent_dir).rglob("*.jsonl"))  # no session was saved


@pytest.mark.parametrize(("options", "message"), [
    ({"disallowed_tools": "Bash"}, "option disallowed_tools must be a list of str, got str "
                                   "'Bash'; put a single value in a list: ['Bash']"),
    ({"env": ["A=1"]}, "option env must be a dict of str to str, got list ['A=1']"),
    ({"env": {"A": 1}}, "option env['A'] must be a str, got int 1"),
    ({"cwd": 123}, "option cwd must be a str, or a Path, or None, got int 123"),
    ({"add_dirs": ["ok", 7]}, "option add_dirs[1] must be a str, or a Path, got int 7"),
    ({"max_turns": True}, "option max_turns must be an int, or None, got bool True"),
    ({"can_use_tool": "yes"}, "option can_use_tool must be an async callable"),
])
def test_the_message_says_which_option_what_was_given_and_what_is_expected(options, message):
    with pytest.raises(UsageError) as info:
        AgentOptions(**options).check()
    assert str(info.value).startswith(message)


async def test_the_client_refuses_a_wrong_type_at_connect(scripted):
    client = SDKClient(scripted.options(allowed_tools="Read"))
    with pytest.raises(UsageError, match="option allowed_tools must be a list of str"):
        await client.connect()
    assert scripted.scripted.requests == []


def test_right_types_pass_including_ints_for_numbers_and_tuples_for_lists(tmp_path):
    class Folder:  # any os.PathLike is a path
        def __fspath__(self):
            return str(tmp_path)

    check_option_types(AgentOptions(agent_dir=Folder(), cwd=PurePosixPath(tmp_path)))
    check_option_types(AgentOptions(
        cwd=tmp_path, add_dirs=(str(tmp_path), tmp_path), max_budget_usd=1, max_turns=3,
        env={"A": "1"}, tools={"type": "preset", "preset": "claude_code"},
        system_prompt={"type": "preset", "append": "x"}, stderr=print))


def test_expected_types_in_words():
    assert describe(list[str] | None) == "a list of str, or None"
    assert describe(dict[str, str | None]) == "a dict of str to str, or None"
    assert describe(int) == "an int"
