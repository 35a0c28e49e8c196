"""The contracts of the session store protocol, for the stores built in and for adapters.

Call it from an async test::

    from zpi_host.testing import run_session_store_conformance

    async def test_my_store() -> None:
        await run_session_store_conformance(lambda: MyStore(...))

``make_store`` (sync or async) is called once per contract, so each starts from an empty
store. Contracts of an optional method (``list_sessions``, ``list_session_summaries``,
``delete``, ``list_subkeys``) are skipped when the store lacks it or when it is named in
``skip_optional``. A broken contract raises AssertionError naming it; the names of the
contracts run are returned.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from ..stores.session_store import OPTIONAL_METHODS, fold_session_summary, supports

__all__ = ["CONTRACTS", "run_session_store_conformance"]

MakeStore = Callable[[], Any]
_P = "proj-A"


def _key(sid: str = "s1", subpath: str | None = None, project: str = _P) -> Any:
    key = {"project_key": project, "session_id": sid}
    if subpath is not None:
        key["subpath"] = subpath
    return key


def _entry(n: int, *, uuid: bool = True, **more: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "user", "timestamp": f"2025-01-01T00:00:{n:02d}.000Z",
                             "message": {"role": "user", "content": [{"type": "text",
                                                                      "text": f"prompt {n}"}]},
                             "nested": {"list": [n, {"deep": "é"}], "none": None}}
    if uuid:
        entry["uuid"] = f"u-{n}"
    entry.update(more)
    return entry


async def append_load_round_trip(store: Any) -> None:
    entries = [_entry(1), _entry(2)]
    await store.append(_key(), entries)
    assert await store.load(_key()) == entries, "load must return what append stored"


async def any_text_round_trips(store: Any) -> None:
    texts = ["nul \x00 inside", "lone \ud800 surrogate", "pair 😀 and é", "\\u0000 as text"]
    entries = [_entry(n, text=text) for n, text in enumerate(texts)]
    entries.append({"type": "user", "uuid": "u-nul", "message": {
        "role": "user", "content": [{"type": "text", "text": "first \x00 \udfff"}]}})
    await store.append(_key(), entries)
    await store.append(_key(), entries)  # the same uuids: skipped, escaped or not
    assert await store.load(_key()) == entries, \
        "any text a transcript line may hold (a NUL, a lone surrogate) must load as appended"
    if supports(store, "list_session_summaries"):
        (summary,) = await store.list_session_summaries(_P)
        assert summary["data"] == fold_session_summary(None, _key(), entries)["data"], \
            "the summary keeps any text too"


async def absent_key_loads_none(store: Any) -> None:
    assert await store.load(_key("never")) is None, "a key never written loads as None"


async def appends_keep_call_order(store: Any) -> None:
    for n in range(5):
        await store.append(_key(), [_entry(2 * n), _entry(2 * n + 1)])
    loaded = await store.load(_key())
    assert [e["uuid"] for e in loaded] == [f"u-{n}" for n in range(10)], \
        "entries must load in the order they were appended"


async def empty_append_is_noop(store: Any) -> None:
    await store.append(_key(), [])
    assert await store.load(_key()) is None, "append([]) must not create the key"


async def uuid_is_idempotency_key(store: Any) -> None:
    await store.append(_key(), [_entry(1), _entry(2)])
    await store.append(_key(), [_entry(2), _entry(3), _entry(1)])
    loaded = await store.load(_key())
    assert [e["uuid"] for e in loaded] == ["u-1", "u-2", "u-3"], \
        "an entry whose uuid is stored already must be skipped"


async def entries_without_uuid_not_deduplicated(store: Any) -> None:
    plain = {"type": "title", "title": "same"}
    await store.append(_key(), [plain])
    await store.append(_key(), [plain])
    assert await store.load(_key()) == [plain, plain], \
        "entries without a uuid are appended every time"


async def subpaths_are_isolated(store: Any) -> None:
    await store.append(_key(), [_entry(1)])
    await store.append(_key(subpath="subagents/agent-a"), [_entry(1), _entry(2)])
    assert await store.load(_key()) == [_entry(1)], "a subpath must not leak into the main key"
    assert len(await store.load(_key(subpath="subagents/agent-a"))) == 2, \
        "the same uuid under another subpath is a different entry"
    assert await store.load(_key(subpath="subagents/agent-b")) is None


async def projects_are_isolated(store: Any) -> None:
    await store.append(_key(project="proj-A"), [_entry(1)])
    await store.append(_key(project="proj-B"), [_entry(2)])
    assert await store.load(_key(project="proj-A")) == [_entry(1)]
    assert await store.load(_key(project="proj-B")) == [_entry(2)]
    if supports(store, "list_sessions"):
        listed = await store.list_sessions("proj-B")
        assert [s["session_id"] for s in listed] == ["s1"]


async def list_sessions_of_project(store: Any) -> None:
    await store.append(_key("a"), [_entry(1)])
    await store.append(_key("b"), [_entry(2)])
    await store.append(_key("c", project="other"), [_entry(3)])
    listed = await store.list_sessions(_P)
    assert sorted(s["session_id"] for s in listed) == ["a", "b"]
    assert all(isinstance(s["mtime"], int) and s["mtime"] > 0 for s in listed), \
        "mtime is epoch milliseconds"


async def list_sessions_excludes_subpaths(store: Any) -> None:
    await store.append(_key("only-sub", subpath="subagents/agent-x"), [_entry(1)])
    await store.append(_key("main"), [_entry(1)])
    assert [s["session_id"] for s in await store.list_sessions(_P)] == ["main"]


async def mtimes_grow(store: Any) -> None:
    await store.append(_key("a"), [_entry(1)])
    first = {s["session_id"]: s["mtime"] for s in await store.list_sessions(_P)}["a"]
    await store.append(_key("a"), [_entry(2)])
    second = {s["session_id"]: s["mtime"] for s in await store.list_sessions(_P)}["a"]
    assert second > first, "every append must advance the key's mtime (the commit clock)"
    await store.append(_key("a"), [_entry(3, timestamp="1999-01-01T00:00:00.000Z")])
    third = {s["session_id"]: s["mtime"] for s in await store.list_sessions(_P)}["a"]
    assert third > second, "mtime comes from the store's clock, never from entry timestamps"


async def summaries_are_folded(store: Any) -> None:
    key = _key("sum")
    batches = [[{"type": "header", "uuid": "h", "cwd": "/w",
                 "timestamp": "2025-01-01T00:00:00.000Z"}, _entry(1)],
               [_entry(2), {"type": "title", "uuid": "t", "title": "T",
                            "timestamp": "2025-01-01T00:01:00.000Z"}]]
    expected = None
    for batch in batches:
        await store.append(key, batch)
        expected = fold_session_summary(expected, key, batch)
    await store.append(_key("sum", subpath="subagents/agent-z"),
                       [{"type": "title", "uuid": "t2", "title": "not me"}])
    summaries = await store.list_session_summaries(_P)
    assert [s["session_id"] for s in summaries] == ["sum"], "one summary per main key"
    assert expected is not None
    assert summaries[0]["data"] == expected["data"], \
        "the summary is fold_session_summary over the main key's appends (subpaths skipped)"
    if supports(store, "list_sessions"):
        mtime = {s["session_id"]: s["mtime"] for s in await store.list_sessions(_P)}["sum"]
        assert summaries[0]["mtime"] == mtime, "summary mtime shares the commit clock"


async def summary_ignores_duplicates(store: Any) -> None:
    key = _key("dup")
    await store.append(key, [_entry(1)])
    await store.append(key, [_entry(1)])
    summary = (await store.list_session_summaries(_P))[0]
    assert summary["data"] == fold_session_summary(None, key, [_entry(1)])["data"], \
        "entries skipped as duplicates must not be folded twice"


async def delete_main_cascades(store: Any) -> None:
    await store.append(_key("d"), [_entry(1)])
    await store.append(_key("d", subpath="subagents/agent-1"), [_entry(2)])
    await store.append(_key("keep"), [_entry(3)])
    await store.delete(_key("d"))
    assert await store.load(_key("d")) is None
    assert await store.load(_key("d", subpath="subagents/agent-1")) is None, \
        "deleting the main key removes its subkeys"
    assert await store.load(_key("keep")) == [_entry(3)]
    if supports(store, "list_sessions"):
        assert [s["session_id"] for s in await store.list_sessions(_P)] == ["keep"]
    if supports(store, "list_subkeys"):
        assert await store.list_subkeys(_key("d")) == []
    await store.delete(_key("d"))  # deleting twice is fine


async def delete_subpath_only(store: Any) -> None:
    await store.append(_key("d"), [_entry(1)])
    await store.append(_key("d", subpath="subagents/agent-1"), [_entry(2)])
    await store.append(_key("d", subpath="subagents/agent-2"), [_entry(3)])
    await store.delete(_key("d", subpath="subagents/agent-1"))
    assert await store.load(_key("d", subpath="subagents/agent-1")) is None
    assert await store.load(_key("d", subpath="subagents/agent-2")) == [_entry(3)]
    assert await store.load(_key("d")) == [_entry(1)]


async def list_subkeys_of_session(store: Any) -> None:
    await store.append(_key("k"), [_entry(1)])
    await store.append(_key("k", subpath="subagents/agent-1"), [_entry(2)])
    await store.append(_key("k", subpath="subagents/agent-2"), [_entry(3)])
    await store.append(_key("other", subpath="subagents/agent-3"), [_entry(4)])
    subkeys = await store.list_subkeys(_key("k"))
    assert sorted(subkeys) == ["subagents/agent-1", "subagents/agent-2"], \
        "list_subkeys gives the session's subpaths only, never the main transcript"


#: (name, optional method it needs or None, contract)
CONTRACTS: tuple[tuple[str, str | None, Callable[[Any], Awaitable[None]]], ...] = (
    ("append_load_round_trip", None, append_load_round_trip),
    ("any_text_round_trips", None, any_text_round_trips),
    ("absent_key_loads_none", None, absent_key_loads_none),
    ("appends_keep_call_order", None, appends_keep_call_order),
    ("empty_append_is_noop", None, empty_append_is_noop),
    ("uuid_is_idempotency_key", None, uuid_is_idempotency_key),
    ("entries_without_uuid_not_deduplicated", None, entries_without_uuid_not_deduplicated),
    ("subpaths_are_isolated", None, subpaths_are_isolated),
    ("projects_are_isolated", None, projects_are_isolated),
    ("list_sessions_of_project", "list_sessions", list_sessions_of_project),
    ("list_sessions_excludes_subpaths", "list_sessions", list_sessions_excludes_subpaths),
    ("mtimes_grow", "list_sessions", mtimes_grow),
    ("summaries_are_folded", "list_session_summaries", summaries_are_folded),
    ("summary_ignores_duplicates", "list_session_summaries", summary_ignores_duplicates),
    ("delete_main_cascades", "delete", delete_main_cascades),
    ("delete_subpath_only", "delete", delete_subpath_only),
    ("list_subkeys_of_session", "list_subkeys", list_subkeys_of_session),
)


async def run_session_store_conformance(
    make_store: MakeStore, *, skip_optional: frozenset[str] | set[str] = frozenset(),
) -> list[str]:
    """Run every contract on a fresh store from ``make_store``; returns the names run."""
    unknown = set(skip_optional) - OPTIONAL_METHODS
    if unknown:
        raise ValueError(f"skip_optional: not optional methods: {', '.join(sorted(unknown))} "
                         f"(optional: {', '.join(sorted(OPTIONAL_METHODS))})")
    ran = []
    for name, needs, contract in CONTRACTS:
        store = make_store()
        if inspect.isawaitable(store):
            store = await store
        if needs is not None and (needs in skip_optional or not supports(store, needs)):
            continue
        try:
            await contract(store)
        except AssertionError as exc:
            raise AssertionError(f"session store contract {name!r} broken by "
                                 f"{type(store).__name__}: {exc}") from exc
        ran.append(name)
    return ran
