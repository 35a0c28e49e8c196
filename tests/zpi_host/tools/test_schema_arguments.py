"""A tool's arguments checked against its JSON schema: flat schemas by the quick check,
richer ones (enum, items, nested objects, $ref, anyOf) by jsonschema, with the argument named."""

from __future__ import annotations

import subprocess
import sys

import pytest

from zpi_host.tools.base import Tool, ToolArgumentError, ToolResult

SCHEMA = {
    "type": "object",
    "properties": {
        "mode": {"type": "string", "enum": ["fast", "slow"]},
        "paths": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "target": {"$ref": "#/$defs/target"},
        "limit": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]},
    },
    "required": ["mode", "paths"],
    "additionalProperties": False,
    "$defs": {"target": {"type": "object", "properties": {
        "host": {"type": "string", "format": "ipv4"}, "port": {"type": "integer"}},
        "required": ["host"], "additionalProperties": False}},
}


def _tool(schema=SCHEMA):
    return Tool("probe", "probe things", schema, lambda args, ctx: ToolResult.text("ok"))


@pytest.mark.parametrize(("args", "field", "problem"), [
    ({"mode": "medium", "paths": ["a"]}, "mode", r'must be one of \["fast", "slow"\]'),
    ({"mode": "fast", "paths": []}, "paths", "must have at least 1 items"),
    ({"mode": "fast", "paths": ["a", 2]}, "paths[1]", "expected string, got int"),
    ({"mode": "fast", "paths": ["a"], "target": {"port": 1}}, "target.host", "is required"),
    ({"mode": "fast", "paths": ["a"], "target": {"host": "1.2.3.4", "x": 1}}, "target.x",
     "is not allowed"),
    ({"mode": "fast", "paths": ["a"], "target": {"host": "999.1.1.1"}}, "target.host",
     "must be a valid ipv4"),
    ({"mode": "fast", "paths": ["a"], "limit": 0}, "limit",
     "does not match any of the allowed schemas"),
    ({"mode": "fast", "paths": ["a"], "speed": 1}, "speed",
     "is not a parameter \\(known: mode, paths, target, limit\\)"),
    ({"paths": ["a"]}, "mode", "is required"),
])
def test_rich_schemas_name_the_argument_and_what_was_expected(args, field, problem):
    with pytest.raises(ToolArgumentError, match=problem) as info:
        _tool().prepare_arguments(args)
    assert info.value.field == field


def test_what_fits_passes_and_null_is_left_to_the_tool():
    args = {"mode": "slow", "paths": ["a", "b"], "target": {"host": "10.0.0.1", "port": 80},
            "limit": None}
    assert _tool().prepare_arguments(args) == args
    assert _tool().prepare_arguments({"mode": "fast", "paths": ["a"], "limit": 5})["limit"] == 5


def test_several_problems_are_all_said():
    with pytest.raises(ToolArgumentError) as info:
        _tool().prepare_arguments({"mode": "x", "paths": [1]})
    assert info.value.field == "mode" and "also 'paths[0]' expected string" in str(info.value)


def test_a_tool_whose_schema_is_not_a_schema_gets_its_arguments_unchecked():
    broken = _tool({"type": "object", "properties": {"a": {"type": "any", "enum": 3}}})
    assert broken.prepare_arguments({"a": 1}) == {"a": 1}  # the tool checks them itself
    with pytest.raises(ToolArgumentError, match="expected a JSON object"):
        broken.prepare_arguments([1])


def test_flat_schemas_do_not_import_jsonschema(tmp_path):
    code = ("import sys\n"
            "from zpi_host.tools.base import Tool, ToolResult, ToolArgumentError\n"
            "t = Tool('t', 'd', {'type': 'object', 'properties': {'a': {'type': 'string'}, "
            "'b': {'type': 'array'}}, 'required': ['a'], 'additionalProperties': False}, "
            "lambda a, c: ToolResult.text('x'))\n"
            "t.prepare_arguments({'a': 'x', 'b': []})\n"
            "try:\n    t.prepare_arguments({'a': 1})\nexcept ToolArgumentError as e:\n"
            "    print(e.field)\n"
            "print('jsonschema' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, check=True)
    assert out.stdout.split() == ["a", "False"]
