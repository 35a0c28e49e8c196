"""``output_format``: the final answer as JSON matching a schema, asked again when it does not.

The schema is shown to the model in the system prompt; the last answer of an input is parsed
(a surrounding Markdown code fence is allowed) and checked against the schema. An answer that
does not fit is sent back with the problems, up to ``MAX_RETRIES`` times; the result then
carries ``structured_output``, or the subtype ``error_max_structured_output_retries``.

Schemas are checked by ``jsonschema`` (:mod:`zpi_host.support.json_schema`): everything
Pydantic's ``model_json_schema()`` produces works (``$ref``/``$defs``, ``anyOf``, ``oneOf``,
``allOf``, ``format``); a schema its draft does not accept is refused when the options are
checked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ..errors import UsageError
from .unsupported import UnsupportedOptionError

__all__ = ["MAX_RETRIES", "StructuredOutput", "check_schema", "validate"]

MAX_RETRIES = 3

_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*)\n\s*```\s*$", re.S)


def check_schema(schema: Any) -> None:
    """Refuse what is not a JSON schema (UsageError saying where and why)."""
    from ..support.json_schema import check_schema as problem_of

    problem = problem_of(schema)
    if problem is not None:
        raise UsageError(f"output_format schema is not a valid JSON schema: {problem}")


def validate(value: Any, schema: Mapping[str, Any]) -> list[str]:
    """The problems of ``value`` against ``schema`` (``[]``: it fits), each naming its place
    (``$.tags[1] must be string, got integer``)."""
    from ..support.json_schema import problems

    return [p.text("$") for p in problems(value, schema)]


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
