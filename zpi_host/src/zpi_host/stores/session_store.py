"""The session store protocol: where sessions are mirrored so that other processes and hosts
can resume them (docs/session-stores.md).

Duck-type compatible with claude-agent-sdk's ``SessionStore``: an adapter written for either
works with the other. Only ``append`` and ``load`` are required; ``list_sessions``,
``list_session_summaries``, ``delete`` and ``list_subkeys`` are optional and probed with
:func:`supports` (an adapter need not subclass :class:`SessionStore`). Entries are whole
transcript records (plain JSON objects) passed through verbatim; ``uuid`` is an idempotency
key. Also here: :func:`fold_session_summary` (the summary a store keeps inside ``append``),
:func:`project_key_for_directory` and :class:`InMemorySessionStore`.
"""

from __future__ import annotations

import copy
import json
import os
import re
import time
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, TypedDict, cast

from ..errors import UsageError, ZpiError

__all__ = [
    "OPTIONAL_METHODS", "InMemorySessionStore", "SessionKey", "SessionListSubkeysKey",
    "SessionStore", "SessionStoreEntry", "SessionStoreError", "SessionStoreFlushMode",
    "SessionStoreListEntry",
    "SessionSummaryEntry", "check_key", "checked_listing", "entries_jsonl", "entry_json",
    "fold_session_summary", "hide_passwords",
    "project_key_for_directory", "store_clock_ms", "supports",
]

#: the methods a store may leave out
OPTIONAL_METHODS = frozenset({"list_sessions", "list_session_summaries", "delete",
                              "list_subkeys"})
#: project keys longer than this are cut and given a hash suffix (as claude-agent-sdk does)
MAX_PROJECT_KEY_LENGTH = 200
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")
FIRST_PROMPT_LIMIT = 200


class SessionListSubkeysKey(TypedDict):
    """The key ``list_subkeys`` takes: a session, without ``subpath``."""

    project_key: str
    session_id: str


class SessionKey(SessionListSubkeysKey, total=False):
    """A transcript in a store. The main record has no ``subpath``; a sub-agent's is
    ``subagents/agent-<id>`` (an empty subpath is invalid: leave it out). Optional by the
    class's ``total=False`` rather than ``NotRequired``, which this module's postponed
    annotations would hide from ``__required_keys__``."""

    subpath: str


#: the subpath of a sub-agent's transcript is this prefix and the agent id
SUBAGENT_PREFIX = "subagents/agent-"


def subagent_key(key: SessionKey, agent_id: str) -> SessionKey:
    """The key of sub-agent ``agent_id`` of the session ``key``."""
    return {"project_key": key["project_key"], "session_id": key["session_id"],
            "subpath": SUBAGENT_PREFIX + agent_id}


class SessionStoreListEntry(TypedDict):
    session_id: str
    #: the store's commit time of the last append, epoch milliseconds
    mtime: int


class SessionSummaryEntry(TypedDict):
    """The summary a store keeps per main transcript. ``data`` is owned by
    :func:`fold_session_summary`: stores persist it verbatim and never interpret it."""

    session_id: str
    mtime: int
    data: dict[str, Any]


class _EntryType(TypedDict):
    type: str


class SessionStoreEntry(_EntryType, total=False):
    """One transcript record as a JSON object: ``type`` always, ``uuid`` and ``timestamp``
    usually, every other key passed through verbatim."""

    uuid: str
    timestamp: str


#: when mirrored records are flushed to the store: once per input, or after every record
SessionStoreFlushMode = Literal["batched", "eager"]


class SessionStore(Protocol):
    """What a store implements; see the module docstring and docs/session-stores.md."""

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Persist ``entries`` after the ones appended before (in call order within a process);
        an entry whose ``uuid`` is already stored under ``key`` is skipped; entries without a
        uuid are always appended. Keep the summary (:func:`fold_session_summary`) for main
        keys in the same transaction, stamped with the commit time."""
        ...

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """Every entry of ``key`` in order (deep-equal to what was appended), or None if the
        key was never written."""
        ...

    # The optional methods. A store that subclasses this Protocol and leaves one out inherits
    # its default, which raises NotImplementedError; :func:`supports` counts it as absent.

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        """The main transcripts of ``project_key`` with their last-append times."""
        raise NotImplementedError

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        """The summaries kept by ``append`` for ``project_key``'s sessions."""
        raise NotImplementedError

    async def delete(self, key: SessionKey) -> None:
        """Remove ``key`` (a main key: its sub-transcripts too)."""
        raise NotImplementedError

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        """The subpaths stored under a session."""
        raise NotImplementedError


class SessionStoreError(ZpiError):
    """A session store refused or failed an operation (its message names which)."""


def supports(store: Any, method: str) -> bool:
    """Whether ``store`` implements the optional ``method``: it has it, and not only as the
    default inherited from :class:`SessionStore` (another method that raises
    NotImplementedError when called counts as absent only at call time)."""
    if not callable(getattr(store, method, None)):
        return False
    return getattr(type(store), method, None) is not getattr(SessionStore, method, None)


def check_key(key: Any, *, subpath_allowed: bool = True) -> None:
    """A UsageError for a malformed key: what is wrong and what a key looks like."""
    shape = "{'project_key': str, 'session_id': str, 'subpath'?: str}"
    if not isinstance(key, Mapping):
        raise UsageError(f"a session key must be a mapping {shape}, got {type(key).__name__}")
    for name in ("project_key", "session_id"):
        value = key.get(name)
        if not isinstance(value, str) or not value:
            raise UsageError(f"session key {dict(key)!r}: {name} must be a non-empty string")
    if "subpath" in key:
        subpath = key["subpath"]
        if not subpath_allowed:
            raise UsageError(f"session key {dict(key)!r}: no subpath is taken here")
        if not isinstance(subpath, str) or not subpath:
            raise UsageError(f"session key {dict(key)!r}: subpath must be a non-empty string; "
                             "leave it out for the main transcript")


def check_entries(entries: Any) -> None:
    if not isinstance(entries, Sequence) or isinstance(entries, str | bytes):
        raise UsageError(f"entries must be a list of JSON objects, got "
                         f"{type(entries).__name__}")
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise UsageError(f"entry {i} must be a JSON object, got {type(entry).__name__}")


def entry_json(value: Any) -> str:
    """``value`` as compact JSON text that UTF-8 can carry, for the stores and files that hold
    entries: non-ASCII text as it is, but the whole value escaped as ASCII when it holds a lone
    surrogate. Transcript lines are ASCII JSON, so a record may hold one (a tool's output, a
    prompt) and must still be stored, loaded and resumed like any other."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    return text


def entries_jsonl(entries: Iterable[Any]) -> bytes:
    """Entries as the lines of a JSONL transcript (one :func:`entry_json` line each)."""
    return "".join(entry_json(entry) + "\n" for entry in entries).encode("utf-8")


def checked_listing(listed: Any, store: Any, method: str) -> list[Any]:
    """What a store's ``list_sessions``, ``list_session_summaries`` or ``list_subkeys``
    returned, checked against the protocol: a custom store's wrong answer is a
    :class:`SessionStoreError` naming the method and the item, not a ``TypeError`` later."""
    if method == "list_subkeys":
        shape, fine = "a string", lambda item: isinstance(item, str)
    else:
        summaries = method == "list_session_summaries"
        shape = ("an object with session_id (a string), mtime (an integer)"
                 + (" and data (an object)" if summaries else ""))

        def fine(item: Any) -> bool:
            return (isinstance(item, Mapping) and isinstance(item.get("session_id"), str)
                    and isinstance(item.get("mtime"), int)
                    and not isinstance(item.get("mtime"), bool)
                    and (not summaries or isinstance(item.get("data"), Mapping)))
    name = f"{type(store).__name__}.{method}()"
    if not isinstance(listed, list | tuple):
        raise SessionStoreError(f"{name} returned {type(listed).__name__}, not a list; "
                                "fix the store adapter")
    for index, item in enumerate(listed):
        if not fine(item):
            raise SessionStoreError(f"{name} returned {item!r:.120} at index {index}; each "
                                    f"item must be {shape}: fix the store adapter")
    return list(listed)


def store_clock_ms(previous: int | None = None) -> int:
    """The commit clock of the stores built in: epoch milliseconds, and always after
    ``previous`` (so a key's mtime grows with every append even within one millisecond)."""
    stamp = time.time_ns() // 1_000_000
    return stamp if previous is None or stamp > previous else previous + 1


#: where a store spec holds a password: ``scheme://user:PASSWORD@``, ``?password=`` (URLs) and
#: ``password=`` (libpq's ``key=value`` form)
_PASSWORDS = (
    re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^@/?#]*?:(?P<secret>[^@]*)@"),
    re.compile(r"[?&]password=(?P<secret>[^&#]*)"),
    re.compile(r"(?:^|\s)password\s*=\s*(?P<secret>'(?:[^'\\]|\\.)*'|\S+)"),
)
#: shorter passwords are hidden only where the whole spec is quoted (replacing every ``ab`` of
#: a message would garble it); libpq quotes a spec whole or a password token alone
MIN_PASSWORD_LENGTH = 4


def hide_passwords(text: str, spec: str) -> str:
    """``text`` (a message about the store ``spec``, such as a driver's error) with the
    passwords of ``spec`` replaced by ``***``: wherever ``spec`` appears whole, and every other
    occurrence of a password (as written, unquoted or percent-decoded)."""
    spans = sorted(((m.start("secret"), m.end("secret")) for pattern in _PASSWORDS
                    for m in pattern.finditer(spec) if m["secret"]), reverse=True)
    if not spans:
        return text
    hidden, secrets = spec, set()
    for start, end in spans:
        secret = spec[start:end]
        hidden = hidden[:start] + "***" + hidden[end:]
        secrets |= {secret, secret.strip("'"), urllib.parse.unquote(secret)}
    text = text.replace(spec, hidden)
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= MIN_PASSWORD_LENGTH:
            text = text.replace(secret, "***")
    return text


# ------------------------------------------------------------------------------ keys


def _djb2_base36(text: str) -> str:
    """A 32-bit string hash in base 36, the one claude-agent-sdk uses for long keys (so one
    path gives one key across both SDKs)."""
    value = 0
    for char in text:
        value = (value * 31 + ord(char)) & 0xFFFFFFFF
    if value >= 0x80000000:
        value -= 0x100000000
    value = abs(value)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        value, rest = divmod(value, 36)
        out = digits[rest] + out
        if not value:
            return out


def project_key_for_directory(directory: str | Path | None = None) -> str:
    """The default ``project_key``: the absolute path of ``directory`` (default: the current
    one) with every non-alphanumeric character made ``-``; keys over 200 characters are cut
    and given ``-<hash>`` of the whole path, so they stay stable and distinct."""
    full = os.path.abspath(os.fspath(directory) if directory is not None else os.getcwd())
    key = _NOT_ALNUM.sub("-", full)
    if len(key) <= MAX_PROJECT_KEY_LENGTH:
        return key
    return f"{key[:MAX_PROJECT_KEY_LENGTH]}-{_djb2_base36(full)}"


# --------------------------------------------------------------------------- summary


def fold_session_summary(prev: SessionSummaryEntry | None, key: SessionKey,
                         entries: Sequence[Mapping[str, Any]]) -> SessionSummaryEntry:
    """``prev`` (None for the first append) with ``entries`` folded in: a pure function whose
    every field is set once or last-wins, so a store never re-reads earlier entries. ``data``
    holds ``cwd``, ``created_at`` (the first record's timestamp), ``first_prompt`` (the first
    user text, cut to 200 characters), ``title``, ``tags`` and ``message_count``. ``mtime`` is
    kept from ``prev`` (0 at first): the store stamps it with its commit time. Do not call it
    for keys with a subpath."""
    data: dict[str, Any] = dict(prev["data"]) if prev is not None else {}
    data.setdefault("message_count", 0)
    for entry in entries:
        kind = entry.get("type")
        if "created_at" not in data and isinstance(entry.get("timestamp"), str):
            data["created_at"] = entry["timestamp"]
        if "cwd" not in data and isinstance(entry.get("cwd"), str):
            data["cwd"] = entry["cwd"]
        if kind in ("user", "assistant", "tool_result", "context"):
            data["message_count"] += 1
        if kind == "user" and "first_prompt" not in data:
            text = _user_text(entry.get("message"))
            if text:
                data["first_prompt"] = text[:FIRST_PROMPT_LIMIT]
        elif kind == "title" and isinstance(entry.get("title"), str):
            data["title"] = entry["title"]
        elif kind == "tag" and isinstance(entry.get("tags"), list):
            data["tags"] = [t for t in entry["tags"] if isinstance(t, str)]
        elif kind == "header" and isinstance(entry.get("forkedFrom"), Mapping):
            data["forked_from"] = entry["forkedFrom"].get("sessionId")
    return {"session_id": prev["session_id"] if prev is not None else key["session_id"],
            "mtime": prev["mtime"] if prev is not None else 0, "data": data}


def _user_text(message: Any) -> str:
    if not isinstance(message, Mapping):
        return ""
    parts = message.get("content")
    if isinstance(parts, str):
        return " ".join(parts.split())
    if not isinstance(parts, list):
        return ""
    texts = [p.get("text") for p in parts if isinstance(p, Mapping) and p.get("type") == "text"]
    return " ".join(" ".join(t for t in texts if isinstance(t, str)).split())


# ------------------------------------------------------------------------- in memory


class InMemorySessionStore:
    """Every method of the protocol over dictionaries: for tests and examples (nothing
    survives the process). Entries are deep-copied in and out."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str, str], list[SessionStoreEntry]] = {}
        self._uuids: dict[tuple[str, str, str], set[str]] = {}
        self._mtimes: dict[tuple[str, str, str], int] = {}
        self._summaries: dict[tuple[str, str], SessionSummaryEntry] = {}
        self._clock: int | None = None  # the last mtime given: one clock for every key

    @staticmethod
    def _slot(key: SessionKey) -> tuple[str, str, str]:
        check_key(key)
        return key["project_key"], key["session_id"], key.get("subpath", "")

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        slot = self._slot(key)
        check_entries(entries)
        if not entries:
            return
        stored = self._entries.setdefault(slot, [])
        seen = self._uuids.setdefault(slot, set())
        fresh = []
        for entry in entries:
            uuid = entry.get("uuid")
            if isinstance(uuid, str):
                if uuid in seen:
                    continue
                seen.add(uuid)
            fresh.append(cast(SessionStoreEntry, copy.deepcopy(dict(entry))))
        stored.extend(fresh)
        mtime = self._clock = self._mtimes[slot] = store_clock_ms(self._clock)
        if not slot[2]:
            summary = fold_session_summary(self._summaries.get(slot[:2]), key, fresh)
            summary["mtime"] = mtime
            self._summaries[slot[:2]] = summary

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        stored = self._entries.get(self._slot(key))
        return copy.deepcopy(stored) if stored is not None else None

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        return [{"session_id": sid, "mtime": mtime}
                for (project, sid, sub), mtime in self._mtimes.items()
                if project == project_key and not sub]

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        return [copy.deepcopy(s) for (project, _), s in self._summaries.items()
                if project == project_key]

    async def delete(self, key: SessionKey) -> None:
        project, sid, sub = self._slot(key)
        doomed = [s for s in self._entries if s[:2] == (project, sid) and (not sub or
                                                                          s[2] == sub)]
        for slot in doomed:
            del self._entries[slot]
            self._uuids.pop(slot, None)
            self._mtimes.pop(slot, None)
        if not sub:
            self._summaries.pop((project, sid), None)

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        check_key(key, subpath_allowed=False)
        return sorted(s[2] for s in self._entries
                      if s[:2] == (key["project_key"], key["session_id"]) and s[2])
