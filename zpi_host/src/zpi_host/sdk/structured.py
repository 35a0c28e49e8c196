"""``output_format``: the final answer as JSON matching a schema, asked again when it does not.

The schema is shown to the model in the system prompt; the last answer of an input is parsed
(a surrounding Markdown code fence is allowed) and checked against the schema. An answer that
does not fit is sent back with the problems, up to ``MAX_RETRIES`` times; the result then
carries ``structured_output``, or the subtype ``error_max_structured_output_retries``.

Schemas are checked by a small validator for the common keywords (``SUPPORTED``); a schema
using anything else is refused when the options are checked, never half-validated.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ..errors import UsageError
from .unsupported import UnsupportedOptionError

__all__ = ["MAX_RETRIES", "SUPPORTED", "StructuredOutput", "validate"]

MAX_RETRIES = 3

#: the JSON-schema keywords this validator applies (annotations are accepted and ignored)
SUPPORTED = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "enum", "const",
    "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems",
})
ANNOTATIONS = frozenset({"title", "description", "$schema", "default", "examples"})

_TYPES: Mapping[str, type | tuple[type, ...]] = {
    "object": dict, "array": list, "string": str, "integer": int, "number": (int, float),
    "boolean": bool, "null": type(None),
}
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*)\n\s*```\s*$", re.S)


def check_schema(schema: Any, where: str = "schema") -> None:
    """Refuse what the validator cannot apply (UnsupportedOptionError naming the keyword)."""
    if not isinstance(schema, Mapping):
        raise UsageError(f"output_format {where} must be a JSON schema object, got "
                         f"{schema!r:.100}")
    for key, value in schema.items():
        if key in ANNOTATIONS:
            continue
        if key not in SUPPORTED:
            raise UnsupportedOptionError("output_format", f"the schema keyword {key!r} (at "
                                         f"{where}) is not supported; supported: "
                                         f"{', '.join(sorted(SUPPORTED))}")
        if key == "type":
            kinds = value if isinstance(value, list) else [value]
            unknown = [k for k in kinds if k not in _TYPES]
            if unknown:
                raise UsageError(f"output_format {where}.type: unknown type(s) {unknown}")
        elif key == "properties":
            if not isinstance(value, Mapping):
                raise UsageError(f"output_format {where}.properties must be an object")
            for name, sub in value.items():
                check_schema(sub, f"{where}.properties.{name}")
        elif key == "items" or (key == "additionalProperties" and not isinstance(value, bool)):
            check_schema(value, f"{where}.{key}")


def validate(value: Any, schema: Mapping[str, Any], where: str = "$") -> list[str]:
    """The problems of ``value`` against ``schema`` (``[]``: it fits)."""
    problems: list[str] = []
    kinds = schema.get("type")
    if kinds is not None:
        kinds = kinds if isinstance(kinds, list) else [kinds]
        if not any(_is(value, k) for k in kinds):
            return [f"{where} must be {' or '.join(kinds)}, got {_kind(value)}"]
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{where} must be one of {json.dumps(schema['enum'])}")
    if "const" in schema and value != schema["const"]:
        problems.append(f"{where} must be {json.dumps(schema['const'])}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append(f"{where} must be at least {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            problems.append(f"{where} must be at most {schema['maximum']}")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            problems.append(f"{where} must have at least {schema['minLength']} characters")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            problems.append(f"{where} must have at most {schema['maxLength']} characters")
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            problems.append(f"{where} must have at least {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            problems.append(f"{where} must have at most {schema['maxItems']} items")
        if isinstance(schema.get("items"), Mapping):
            for i, item in enumerate(value):
                problems += validate(item, schema["items"], f"{where}[{i}]")
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for name in schema.get("required", ()):
            if name not in value:
                problems.append(f"{where}.{name} is required")
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            if name in properties:
                problems += validate(item, properties[name], f"{where}.{name}")
            elif extra is False:
                problems.append(f"{where}.{name} is not allowed")
            elif isinstance(extra, Mapping):
                problems += validate(item, extra, f"{where}.{name}")
    return problems


def _is(value: Any, kind: str) -> bool:
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    if kind == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES[kind])


def _kind(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean",
            type(None): "null", int: "integer", float: "number"}.get(type(value), "value")


class StructuredOutput:
    """One ``output_format``: its prompt, and the check of an answer."""

    def __init__(self, output_format: Mapping[str, Any]) -> None:
        if not isinstance(output_format, Mapping) or output_format.get("type") != "json_schema":
            raise UnsupportedOptionError("output_format", "only {'type': 'json_schema', "
                                                          "'schema': {...}} is supported")
        schema = output_format.get("schema")
        check_schema(schema)
        assert isinstance(schema, Mapping)
        self.schema = schema

    def prompt(self) -> str:
        return ("When the task is done, your final answer must be only a JSON value (no other "
                "text) that matches this JSON schema:\n"
                + json.dumps(self.schema, indent=2, ensure_ascii=False))

    def parse(self, text: str) -> tuple[Any, list[str]]:
        """(the value, []) or (None, the problems)."""
        fenced = _FENCE.match(text)
        raw = fenced.group(1) if fenced else text
        try:
            value = json.loads(raw)
        except ValueError as exc:
            return None, [f"the answer is not JSON ({exc})"]
        problems = validate(value, self.schema)
        return (value, []) if not problems else (None, problems)

    @staticmethod
    def retry_prompt(problems: list[str]) -> str:
        return ("Your last answer does not match the required JSON schema: "
                + "; ".join(problems[:20])
                + ". Answer again with only the corrected JSON value.")
