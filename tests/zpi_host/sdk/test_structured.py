"""output_format: JSON-schema structured output, with retries."""

from __future__ import annotations

import pytest

from zpi_host.errors import UsageError
from zpi_host.sdk import ResultMessage, UnsupportedOptionError, query
from zpi_host.sdk.structured import validate

from .conftest import collect

pytestmark = pytest.mark.anyio

SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string", "minLength": 1},
    "count": {"type": "integer", "minimum": 0},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
}, "required": ["name", "count"], "additionalProperties": False}
FORMAT = {"type": "json_schema", "schema": SCHEMA}
USAGE = {"input_tokens": 100, "output_tokens": 10}


async def test_a_valid_answer_is_the_structured_output(backend):
    backend.turns({"text": '```json\n{"name": "zpi", "count": 3, "tags": ["a"]}\n```',
                   "usage": USAGE})
    result = (await collect(query("describe", backend.options(output_format=FORMAT))))[-1]
    assert isinstance(result, ResultMessage)
    assert result.subtype == "success"
    assert result.structured_output == {"name": "zpi", "count": 3, "tags": ["a"]}
    request = backend.requests()[0]
    system = request.system_prompt if backend.kind == "scripted" else str(request)
    assert "minLength" in system  # the schema was shown to the model


async def test_an_invalid_answer_is_asked_again_and_usage_counts_every_request(backend):
    backend.turns({"text": "Sure! Here it is.", "usage": USAGE},
                  {"text": '{"name": "", "count": -1, "extra": true}', "usage": USAGE},
                  {"text": '{"name": "x", "count": 1}', "usage": USAGE})
    result = (await collect(query("describe", backend.options(output_format=FORMAT))))[-1]
    assert (result.subtype, result.structured_output) == ("success", {"name": "x", "count": 1})
    assert result.num_turns == 3
    assert result.usage["input_tokens"] == 300
    if backend.kind == "scripted":
        retry = backend.requests()[2].messages[-1].text_content
        assert "$.name must have at least 1 characters" in retry
        assert "$.count must be at least 0" in retry and "$.extra is not allowed" in retry


async def test_retries_run_out(scripted):
    scripted.turns(*["not json"] * 4)
    result = (await collect(query("describe", scripted.options(output_format=FORMAT))))[-1]
    assert (result.subtype, result.is_error) == ("error_max_structured_output_retries", True)
    assert result.structured_output is None and result.num_turns == 4
    assert "not JSON" in result.errors[0]


@pytest.mark.parametrize(("output_format", "error", "match"), [
    ({"type": "json_schema", "schema": {"oneOf": []}}, UnsupportedOptionError, "'oneOf'"),
    ({"type": "json_schema", "schema": {"properties": {"a": {"$ref": "#"}}}},
     UnsupportedOptionError, "properties.a"),
    ({"type": "text"}, UnsupportedOptionError, "json_schema"),
    ({"type": "json_schema", "schema": {"type": "thing"}}, UsageError, "unknown type"),
])
def test_schemas_the_validator_cannot_apply_are_refused(output_format, error, match):
    from zpi_host.sdk import AgentOptions

    with pytest.raises(error, match=match):
        AgentOptions(output_format=output_format).session_kwargs()


def test_validate():
    assert validate({"name": "a", "count": 2}, SCHEMA) == []
    assert validate({"name": "a", "count": True}, SCHEMA) == ["$.count must be integer, "
                                                              "got boolean"]
    assert validate({"count": 1.0, "name": "a", "tags": ["a", 1, "c", "d"]}, SCHEMA) == [
        "$.tags must have at most 3 items", "$.tags[1] must be string, got integer"]
    assert validate(3, {"enum": [1, 2]}) == ["$ must be one of [1, 2]"]
    assert validate(None, {"type": ["string", "null"]}) == []
