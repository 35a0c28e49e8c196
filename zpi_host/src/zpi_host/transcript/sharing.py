"""One object for values a transcript repeats, while its lines are read.

Each line is parsed on its own, so every record would hold its own copy of the session id,
of its parent's uuid (the previous record's), of the call id and arguments its assistant
message already holds, of the tool's name and of every key of its arguments; in a resumed
100,000-record session these copies were a fifth of what the records kept. :class:`Sharing`
replaces a value in a parsed line by an identical one already held (same type, same value,
same key order), before the record is built: the records keep every fact, with fewer
objects. A field that is missing or of the wrong type is left as it is: the reader judges
the values exactly as before.
"""

from __future__ import annotations

from typing import Any

#: distinct short strings (names, keys, namespaces) remembered at most: beyond this, new ones
#: are kept as they are, so a file of many distinct values costs no more than before
WORDS_LIMIT = 4096
#: a string longer than this is not looked up as a word (texts, outputs, signatures)
WORD_LENGTH = 64

_Obj = dict[str, Any]


class Sharing:
    """What one reading of a file has seen, to share equal values across its records."""

    def __init__(self, session_id: str, header_uuid: str) -> None:
        self.session_id = session_id
        self.previous_uuid: Any = header_uuid
        self.timestamp: Any = None
        self.words: dict[str, str] = {}
        #: the tool calls of the last assistant message, by id (its content's JSON objects)
        self.calls: dict[Any, _Obj] = {}

    def share(self, obj: _Obj) -> None:
        """Replace the values of the parsed line ``obj`` that equal ones already held."""
        get = obj.get
        if get("sessionId") == self.session_id:
            obj["sessionId"] = self.session_id
        parent, previous = get("parentUuid"), self.previous_uuid
        if parent == previous and type(parent) is str:
            obj["parentUuid"] = previous
        timestamp = get("timestamp")
        if timestamp == self.timestamp and type(timestamp) is str:
            obj["timestamp"] = self.timestamp
        else:
            self.timestamp = timestamp
        self.previous_uuid = get("uuid")
        kind = get("type")
        if kind == "assistant":
            self.calls = {}
            message = get("message")
            if type(message) is dict:
                self._assistant(message)
        elif kind == "tool_use":
            self._tool_use(obj)
        elif kind == "tool_result":
            message = get("message")
            if type(message) is dict:
                self._tool_result(obj, message)
        elif kind == "custom":
            if "namespace" in obj:
                obj["namespace"] = self._word(obj["namespace"])
            self._keys_at(obj, "data")

    def _assistant(self, message: _Obj) -> None:
        word = self._word
        for key in ("stopReason", "provider", "model"):
            if key in message:
                message[key] = word(message[key])
        content = message.get("content")
        if type(content) is list:
            for block in content:
                if type(block) is dict and block.get("type") == "tool_call":
                    if "name" in block:
                        block["name"] = word(block["name"])
                    self._keys_at(block, "arguments")
                    call_id = block.get("id")
                    if type(call_id) is str:
                        self.calls[call_id] = block

    def _tool_use(self, obj: _Obj) -> None:
        """The journal record of a call repeats the call its assistant message holds."""
        call = self.calls.get(obj.get("callId"))
        if call is None:
            if "name" in obj:
                obj["name"] = self._word(obj["name"])
            self._keys_at(obj, "arguments")
            return
        _same(obj, "callId", call, "id")
        _same(obj, "name", call, "name")
        _same(obj, "arguments", call, "arguments")

    def _tool_result(self, obj: _Obj, message: _Obj) -> None:
        """A result repeats its call's id and tool name, and its record the message's id."""
        call = self.calls.get(message.get("callId"))
        if call is None:
            if "toolName" in message:
                message["toolName"] = self._word(message["toolName"])
        else:
            _same(message, "callId", call, "id")
            _same(message, "toolName", call, "name")
        _same(obj, "callId", message, "callId")
        self._keys_at(message, "details")

    def _word(self, value: Any) -> Any:
        """``value``, or the identical short string already seen (a call's id among them)."""
        if type(value) is not str or len(value) > WORD_LENGTH:
            return value
        found = self.words.get(value)
        if found is not None:
            return found
        call = self.calls.get(value)
        if call is not None:
            return call["id"]  # a plugin's record naming a call by its id
        if len(self.words) < WORDS_LIMIT:
            self.words[value] = value
        return value

    def _keys_at(self, obj: _Obj, key: str) -> None:
        """The JSON object at ``key`` with its keys and short string values shared."""
        value = obj.get(key)
        if type(value) is dict and value:
            words, word = self.words, self._word
            obj[key] = {words.get(name) or word(name):
                        item if type(item) is not str else words.get(item) or word(item)
                        for name, item in value.items()}


def _same(obj: _Obj, key: str, source: _Obj, source_key: str) -> None:
    """``obj[key]`` becomes ``source[source_key]`` when the two are identical JSON values."""
    if key in obj and source_key in source:
        value, found = obj[key], source[source_key]
        if value == found and (type(value) is str is type(found) or _identical(value, found)):
            obj[key] = found


def _identical(a: Any, b: Any) -> bool:
    """The same JSON value: same types throughout (``1`` is not ``true`` nor ``1.0``), same
    key order, ``-0.0`` not ``0.0``."""
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is dict:
        return (len(a) == len(b) and list(a) == list(b)
                and all(_identical(value, b[key]) for key, value in a.items()))
    if kind is list:
        return len(a) == len(b) and all(map(_identical, a, b))
    if kind is float:
        return a == b and repr(a) == repr(b)
    return bool(a == b)
