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
    ({"type": "json_schema", "schema": {"oneOf": []}}, UsageError, r"\$\.oneOf.*non-empty"),
    ({"type": "json_schema", "schema": {"properties": {"a": {"minLength": "x"}}}},
     UsageError, "properties.a.minLength"),
    ({"type": "text"}, UnsupportedOptionError, "json_schema"),
    ({"type": "json_schema", "schema": {"type": "thing"}}, UsageError, "not a valid JSON schema"),
    ({"type": "json_schema", "schema": [1]}, UsageError, "must be an object"),
])
def test_schemas_that_are_not_json_schemas_are_refused(output_format, error, match):
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


def test_what_pydantic_produces_is_checked_ref_anyof_enum_nested():
    pytest.importorskip("pydantic")
    import pydantic

    class Point(pydantic.BaseModel):
        x: int

    class Place(pydantic.BaseModel):
        name: str
        kind: str = pydantic.Field(pattern="^(city|village)$")
        where: Point
        near: list[Point] = []
        mayor: str | None = None

    schema = Place.model_json_schema()
    assert "$defs" in schema and "anyOf" in str(schema)  # $ref into $defs, Optional as anyOf
    good = {"name": "Oslo", "kind": "city", "where": {"x": 1}, "near": [{"x": 2}],
            "mayor": None}
    assert validate(good, schema) == []
    bad = {"name": "Oslo", "kind": "town", "where": {}, "near": [{"x": "2"}], "mayor": 3}
    assert validate(bad, schema) == [
        "$.kind must match the pattern '^(city|village)$'",
        "$.mayor does not match any of the allowed schemas (closest: $.mayor must be string, "
        "got integer)",
        "$.near[0].x must be integer, got string",
        "$.where.x is required",
    ]


@pytest.mark.parametrize(("schema", "value", "problem"), [
    ({"oneOf": [{"type": "integer"}, {"minimum": 0}]}, 3,
     "$ must match exactly one of the allowed schemas, but matches several"),
    ({"allOf": [{"type": "string"}, {"minLength": 3}]}, "ab",
     "$ must have at least 3 characters"),
    ({"type": "string", "format": "ipv4"}, "300.1.1.1", "$ must be a valid ipv4 (format)"),
    ({"type": "string", "format": "email"}, "nobody", "$ must be a valid email (format)"),
    ({"$defs": {"n": {"type": "number"}}, "items": {"$ref": "#/$defs/n"}}, [1, "x"],
     "$[1] must be number, got string"),
])
def test_combinators_formats_and_refs(schema, value, problem):
    assert validate(value, schema) == [problem]


async def test_a_pydantic_schema_as_output_format(scripted):
    pydantic = pytest.importorskip("pydantic")

    class Answer(pydantic.BaseModel):
        city: str
        population: int | None = None

    scripted.turns('{"city": "Oslo", "population": "many"}', '{"city": "Oslo"}')
    result = (await collect(query("where", scripted.options(output_format={
        "type": "json_schema", "schema": Answer.model_json_schema()}))))[-1]
    assert result.structured_output == {"city": "Oslo"} and result.num_turns == 2
    retry = scripted.requests()[1].messages[-1].text_content
    assert "$.population does not match any of the allowed schemas" in retry
