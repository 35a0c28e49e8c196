"""Generated call ids of the scripted and function models: past every id the history holds,
scanning each message once."""

from __future__ import annotations

from zpi_host.providers.messages import AssistantMessage, ToolCallContent, UserMessage
from zpi_host.providers.script import CallNumbering


def assistant(*ids: str) -> AssistantMessage:
    return AssistantMessage(tuple(ToolCallContent(i, "read") for i in ids))


def test_the_prefix_moves_past_recorded_ids_and_follows_a_growing_history():
    numbering = CallNumbering("fn")
    history: list = [UserMessage.text("go")]
    assert numbering.prefix(1, history) == "fn_1"
    history.append(assistant("fn_7_0", "fn_7_1", "other_99_0"))
    assert numbering.prefix(2, history) == "fn_8"  # a resumed history held turn 7
    history.append(assistant("fn_8_0"))
    assert numbering.prefix(3, history) == "fn_9"
    assert numbering.prefix(20, history) == "fn_20"  # the turn number when it is higher


def test_a_replaced_history_is_scanned_again():
    numbering = CallNumbering("call")
    long = [assistant("call_1_0"), assistant("call_5_0"), assistant("call_6_0")]
    assert numbering.prefix(2, long) == "call_7"
    compacted = [assistant("call_2_0")]  # shorter: a compaction replaced it
    assert numbering.prefix(3, compacted) == "call_3"
    same_length = [assistant("call_1_0"), assistant("call_1_1")]
    numbering = CallNumbering("call")
    assert numbering.prefix(1, [assistant("call_4_0"), assistant("call_4_1")]) == "call_5"
    assert numbering.prefix(2, same_length) == "call_2"  # other messages, same length
