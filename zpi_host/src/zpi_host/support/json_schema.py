"""JSON Schema through ``jsonschema``: a schema checked once, values checked against it, each
problem with where it is and what was expected.

One validator for everything that takes a schema from outside: the SDK's ``output_format``
(what Pydantic's ``model_json_schema()`` produces: ``$ref``/``$defs``, ``anyOf``, ``oneOf``,
``allOf``, ``format``) and tool arguments (``enum``, ``items``, nested objects). The draft is
the one the schema's ``$schema`` names, else 2020-12; ``format`` is checked for the formats
jsonschema knows (``email``, ``date``, ``ipv4``, ``uuid``, ...). ``jsonschema`` is imported at
the first check, never on the start-up path.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import attrs

from .attrs_methods import FrozenFieldsEq

__all__ = ["InvalidSchemaError", "SchemaProblem", "check_schema", "path_text", "problems"]

#: JSON's names for Python's values
_KINDS: Mapping[type, str] = {dict: "object", list: "array", str: "string", bool: "boolean",
                              type(None): "null", int: "integer", float: "number"}


@attrs.frozen(repr=False, eq=False, slots=False)
class SchemaProblem(FrozenFieldsEq):
    """One way a value does not fit: ``path`` to the place (keys and list indexes), what was
    expected (``message``, worded after the place), the keyword that failed, the value there."""

    path: tuple[str | int, ...]
    message: str
    keyword: str
    value: Any = None

    def text(self, root: str = "$") -> str:
        """``$.tags[1] must be string, got integer``."""
        return f"{path_text(self.path, root)} {self.message}"


def path_text(path: Sequence[str | int], root: str = "") -> str:
    """``("edits", 0, "old_text")`` -> ``edits[0].old_text`` (after ``root``, if given)."""
    out = root
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


class InvalidSchemaError(ValueError):
    """A schema its draft does not accept: values cannot be checked against it."""


def check_schema(schema: Any) -> str | None:
    """Why ``schema`` is not a JSON schema its draft accepts (None: it is)."""
    if not isinstance(schema, Mapping):
        return f"a JSON schema must be an object, got {_kind(schema)}"
    return _schema_problem(_key(schema))


@lru_cache(maxsize=256)
def _schema_problem(key: str) -> str | None:
    from jsonschema.exceptions import SchemaError

    try:
        _validator_class(key).check_schema(json.loads(key))
    except SchemaError as exc:
        return f"{path_text(list(exc.path), '$')}: {exc.message}"
    return None


def problems(value: Any, schema: Mapping[str, Any]) -> list[SchemaProblem]:
    """Every problem of ``value`` against ``schema``, in document order; ``[]``: it fits.
    Raises :class:`InvalidSchemaError` for a schema that is not one."""
    key = _key(schema)
    problem = _schema_problem(key)
    if problem is not None:
        raise InvalidSchemaError(problem)
    errors = _validator(key).iter_errors(value)
    out: list[SchemaProblem] = []
    for error in sorted(errors, key=lambda e: [str(p) for p in e.absolute_path]):
        out += _worded(error)
    return out


def _key(schema: Mapping[str, Any]) -> str:
    return json.dumps(schema, sort_keys=True, default=str)


@lru_cache(maxsize=256)
def _validator_class(key: str) -> Any:
    from jsonschema.validators import Draft202012Validator, validator_for

    return validator_for(json.loads(key), default=Draft202012Validator)


@lru_cache(maxsize=256)
def _validator(key: str) -> Any:
    cls = _validator_class(key)
    return cls(json.loads(key), format_checker=cls.FORMAT_CHECKER)


def _worded(error: Any) -> list[SchemaProblem]:
    """jsonschema's error in this host's words: the common keywords said plainly, the place
    of a missing or unexpected property named as that property."""
    path = tuple(error.absolute_path)
    keyword, expected, instance = error.validator, error.validator_value, error.instance
    if keyword == "required" and isinstance(instance, Mapping):
        return [SchemaProblem((*path, name), "is required", keyword)
                for name in expected if name not in instance]
    if keyword == "additionalProperties" and isinstance(instance, Mapping):
        schema = error.schema
        known = set(schema.get("properties", {}))
        patterns = schema.get("patternProperties", {})
        import re

        extra = [n for n in instance if n not in known
                 and not any(re.search(p, n) for p in patterns)]
        if extra:
            return [SchemaProblem((*path, name), "is not allowed", keyword, instance[name])
                    for name in extra]
    if keyword == "type":
        kinds = expected if isinstance(expected, list) else [expected]
        return [SchemaProblem(path, f"must be {' or '.join(kinds)}, got {_kind(instance)}",
                              keyword, instance)]
    if keyword == "enum":
        return [SchemaProblem(path, f"must be one of {json.dumps(expected)}", keyword,
                              instance)]
    if keyword == "const":
        return [SchemaProblem(path, f"must be {json.dumps(expected)}", keyword, instance)]
    if keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        words = {"minimum": "at least", "maximum": "at most",
                 "exclusiveMinimum": "more than", "exclusiveMaximum": "less than"}[keyword]
        return [SchemaProblem(path, f"must be {words} {expected}", keyword, instance)]
    if keyword in ("minLength", "maxLength", "minItems", "maxItems"):
        words = "at least" if keyword.startswith("min") else "at most"
        unit = "characters" if keyword.endswith("Length") else "items"
        return [SchemaProblem(path, f"must have {words} {expected} {unit}", keyword,
                              instance)]
    if keyword == "format":
        return [SchemaProblem(path, f"must be a valid {expected} (format)", keyword, instance)]
    if keyword == "pattern":
        return [SchemaProblem(path, f"must match the pattern {expected!r}", keyword, instance)]
    if keyword == "oneOf" and not error.context:
        return [SchemaProblem(path, "must match exactly one of the allowed schemas, but "
                              "matches several", keyword, instance)]
    if keyword in ("anyOf", "oneOf") and error.context:
        from jsonschema.exceptions import best_match

        best = best_match(error.context)
        inner = _worded(best)[0] if best is not None else None
        why = f" (closest: {path_text(inner.path, '$')} {inner.message})" if inner else ""
        return [SchemaProblem(path, f"does not match any of the allowed schemas{why}",
                              keyword, instance)]
    return [SchemaProblem(path, f"is not valid: {error.message}", keyword, instance)]


def _kind(value: Any) -> str:
    return _KINDS.get(type(value), type(value).__name__)
