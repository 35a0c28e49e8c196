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


def _fields_and_jsonschema(tmp_path, make_tool, good, bad):
    """In a fresh interpreter: ``make_tool`` (source of an expression) takes ``good``
    arguments and refuses ``bad``; what is printed is the refused field and whether
    ``jsonschema`` got imported."""
    code = ("import sys\n"
            "from zpi_host.tools.base import Tool, ToolResult, ToolArgumentError\n"
            "from zpi_host.tools.read import read_tool\n"
            f"t = {make_tool}\n"
            f"t.prepare_arguments({good!r})\n"
            f"try:\n    t.prepare_arguments({bad!r})\nexcept ToolArgumentError as e:\n"
            "    print(e.field)\n"
            "print('jsonschema' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_flat_schemas_do_not_import_jsonschema(tmp_path):
    tool = ("Tool('t', 'd', {'type': 'object', 'properties': {'a': {'type': 'string'}, "
            "'b': {'type': 'array'}}, 'required': ['a'], 'additionalProperties': False}, "
            "lambda a, c: ToolResult.text('x'))")
    assert _fields_and_jsonschema(tmp_path, tool, {"a": "x", "b": []}, {"a": 1}) == [
        "a", "False"]


BOUNDED = {"type": "object", "properties": {
    "offset": {"type": "integer", "minimum": 1}, "ratio": {"type": "number",
                                                            "exclusiveMinimum": 0,
                                                            "maximum": 1.5},
    "cap": {"type": "integer", "exclusiveMaximum": 10}}}


@pytest.mark.parametrize(("args", "field", "problem"), [
    ({"offset": 0}, "offset", "must be at least 1"),
    ({"ratio": 0}, "ratio", "must be more than 0"),
    ({"ratio": 1.6}, "ratio", "must be at most 1.5"),
    ({"cap": 10}, "cap", "must be less than 10"),
])
def test_numeric_bounds_are_checked_quickly_and_worded_as_the_full_check(args, field, problem):
    """A number's bounds keep a schema on the quick path; its answer is the full check's."""
    quick = _tool(BOUNDED)
    # the same schema made richer (an enum elsewhere) goes through jsonschema
    full = _tool({**BOUNDED, "properties": {**BOUNDED["properties"],
                                            "mode": {"type": "string", "enum": ["a"]}}})
    for tool in (quick, full):
        with pytest.raises(ToolArgumentError) as caught:
            tool.prepare_arguments(args)
        assert problem in str(caught.value) and caught.value.field == field
    assert quick.prepare_arguments({"offset": 1, "ratio": 1.5, "cap": 9, "other": None}) == {
        "offset": 1, "ratio": 1.5, "cap": 9, "other": None}


def test_the_read_tools_schema_stays_off_jsonschema(tmp_path):
    assert _fields_and_jsonschema(tmp_path, "read_tool()",
                                  {"path": "a.txt", "offset": 2, "limit": 5},
                                  {"path": "a.txt", "offset": 0}) == ["offset", "False"]
