"""The TranscriptStore contract on SQLite and on a real PostgreSQL: chain validation, the
folded current state, pages, leases with fencing tokens, takeover races."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from zpi_host.providers.messages import AssistantMessage, TextContent, ToolCallContent
from zpi_host.transcript.codec import build_record, dump_line, encode_record
from zpi_host.transcript.native import (
    ChainError,
    LeaseLostError,
    OpenCall,
    SessionOwnedError,
    iter_records,
)
from zpi_host.transcript.native_session import StoreSessionManager
from zpi_host.transcript.records import TitleRecord, new_uuid, now


def rec(parent: str, sid: str, cls: type = TitleRecord, **fields: Any) -> tuple[Any, str]:
    fields = fields or {"title": "t"}
    record = build_record(cls, {"uuid": new_uuid(), "parent_uuid": parent, "session_id": sid,
                                "timestamp": now(), **fields})
    return record, dump_line(encode_record(record)).decode().rstrip("\n")


def test_state_is_folded_with_every_append(make_store, tmp_path):
    store = make_store()
    m = StoreSessionManager.create_in(store, tmp_path)
    m.set_title("first")
    m.set_tags(["a", "b"])
    m.append("model_change", provider="p", model="m1")
    m.append("reasoning_level", level="high")
    m.append_message(AssistantMessage((TextContent("x"), ToolCallContent("c1", "bash", {})),
                                      provider="p", model="m1"))
    m.append_tool_use("c1", "bash", {})
    state = store.current_state(m.session_id)
    assert state == m.state
    assert (state.title, state.tags, state.model, state.reasoning_level) == \
        ("first", ("a", "b"), ("p", "m1"), "high")
    assert state.open_calls == (OpenCall("c1", "bash", True),)
    assert state.head_uuid == m.leaf_uuid and state.records == 7
    m.close()


def test_append_must_follow_the_head_and_a_retry_is_idempotent(make_store, tmp_path):
    store = make_store()
    m = StoreSessionManager.create_in(store, tmp_path)
    sid, head, lease = m.session_id, m.leaf_uuid, m.lease
    one = rec(head, sid)
    state = store.append(sid, [one], after=head, lease=lease)
    assert state.head_uuid == one[0].uuid
    assert store.append(sid, [one], after=head, lease=lease) == state  # lost answer: retried
    with pytest.raises(ChainError, match="moved on"):
        store.append(sid, [rec(head, sid)], after=head, lease=lease)
    with pytest.raises(ChainError, match="names parent"):
        store.append(sid, [rec(head, sid)], after=one[0].uuid, lease=lease)
    reused = build_record(TitleRecord, {"uuid": head, "parent_uuid": one[0].uuid,
                                        "session_id": sid, "timestamp": now(), "title": "t"})
    with pytest.raises(ChainError, match="already in"):
        store.append(sid, [(reused, dump_line(encode_record(reused)).decode().rstrip())],
                     after=one[0].uuid, lease=lease)
    assert [r.seq for r in iter_records(store, sid)] == [0, 1]
    # the manager, whose head is behind, is refused and accepts nothing more
    with pytest.raises(ChainError):
        m.set_title("late")
    with pytest.raises(Exception, match="accepts no more"):
        m.set_title("later")
    m.close()


def test_history_is_read_in_pages(make_store, tmp_path):
    store = make_store()
    m = StoreSessionManager.create_in(store, tmp_path)
    for n in range(25):
        m.set_title(f"t{n}")
    rows = list(iter_records(store, m.session_id, page=4))
    assert [r.seq for r in rows] == list(range(26))
    assert store.read(m.session_id, from_seq=10, limit=3)[0].seq == 10
    assert store.record(m.session_id, rows[5].uuid) == rows[5]
    m.close()


def test_a_second_owner_is_refused_until_the_lease_expires(make_store, tmp_path):
    store = make_store(lease_seconds=0.5)
    first = StoreSessionManager.create_in(store, tmp_path, owner="w1")
    first.set_title("mine")
    sid = first.session_id
    with pytest.raises(SessionOwnedError, match="owned by 'w1'"):
        StoreSessionManager.open_in(make_store(lease_seconds=0.5), sid, owner="w2")
    first._stop.set()  # the worker stops renewing (as a paused or dead one does)
    first._keeper.join()
    deadline = time.monotonic() + 30
    while True:
        try:
            second = StoreSessionManager.open_in(make_store(lease_seconds=0.5), sid, owner="w2")
            break
        except SessionOwnedError:
            assert time.monotonic() < deadline
            time.sleep(0.1)
    assert second.lease.token > first.lease.token
    with pytest.raises(LeaseLostError, match="lost the lease"):
        first.set_title("fenced")  # its token is checked in the append's transaction
    with pytest.raises(LeaseLostError):
        store.renew(first.lease)
    second.set_title("taken over")
    assert store.current_state(sid).title == "taken over"
    first.close()
    second.close()


def test_two_workers_racing_to_take_over_exactly_one_wins(make_store, tmp_path):
    store = make_store(lease_seconds=0.3)
    dead = StoreSessionManager.create_in(store, tmp_path, owner="dead")
    dead.set_title("x")
    dead._stop.set()
    dead._keeper.join()
    sid = dead.session_id
    time.sleep(0.6)  # past the lease: the session is free to take over
    workers = [make_store(lease_seconds=30) for _ in range(6)]
    start = threading.Barrier(len(workers))
    results: list[Any] = [None] * len(workers)

    def race(n: int) -> None:
        start.wait()
        try:
            results[n] = workers[n].acquire(sid, f"w{n}")
        except SessionOwnedError as exc:
            results[n] = exc

    threads = [threading.Thread(target=race, args=(n,)) for n in range(len(workers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    won = [r for r in results if not isinstance(r, Exception)]
    assert len(won) == 1, results
    assert all(isinstance(r, SessionOwnedError) for r in results if r not in won)
    assert won[0].token == dead.lease.token + 1
    dead.close()


def test_delete_is_refused_while_owned(make_store, tmp_path):
    store = make_store()
    m = StoreSessionManager.create_in(store, tmp_path, owner="w1")
    m.set_title("x")
    with pytest.raises(SessionOwnedError):
        store.delete(m.session_id)
    m.close()
    assert store.delete(m.session_id) is True
    assert store.current_state(m.session_id) is None


def test_an_unused_new_session_leaves_nothing(make_store, tmp_path):
    store = make_store()
    m = StoreSessionManager.create_in(store, tmp_path)
    m.close()
    assert store.current_state(m.session_id) is None


def test_a_manager_dropped_without_close_stops_renewing(make_store, tmp_path):
    import gc

    store = make_store(lease_seconds=0.3)
    m = StoreSessionManager.create_in(store, tmp_path, owner="leaky")
    m.set_title("x")
    sid, keeper = m.session_id, m._keeper
    del m
    gc.collect()
    keeper.join(timeout=30)
    assert not keeper.is_alive()
    deadline = time.monotonic() + 30
    while True:  # the lease expires on its own: another worker takes the session
        try:
            lease = store.acquire(sid, "next")
            break
        except SessionOwnedError:
            assert time.monotonic() < deadline
            time.sleep(0.1)
    assert lease.owner == "next" and lease.token == 2
