"""Every public name of claude-agent-sdk exists in ``zpi_host.sdk`` (its ``__all__``) and in
``zpi_host.sdk.types`` (the public names of ``claude_agent_sdk.types``), of the same kind and
with the same fields, so that a program changes only its import line.

The names are pinned from the real wheel in ``claude_agent_sdk_names.json`` (its version is in
the file). To refresh it from a newer release::

    pip download --no-deps claude-agent-sdk -d /tmp/cas
    mkdir /tmp/cas/x && unzip -q /tmp/cas/claude_agent_sdk-*.whl -d /tmp/cas/x
    python tests/zpi_host/sdk/test_sdk_names.py /tmp/cas/x

(run with a Python that has ``mcp`` and ``jsonschema``, which the SDK imports), then add what
the new names need and their rows in docs/sdk.md.

Kinds compared: ``record`` (a dataclass there; an attrs or dataclass class here: same field
names in the same order, a field with a default there has one here too; fields this host adds
come after and are listed in ``EXTRA_FIELDS``), ``TypedDict`` (same keys, same required keys),
``Literal`` (same values), ``Union`` (same member names), ``Callable``, ``Protocol`` (the same
methods), ``exception`` (a subclass of the same bases), ``function`` / ``async function``
(the same parameter names first, in order; extra ones only with defaults), ``class``,
``constant``.
"""

from __future__ import annotations

import ast
import collections.abc
import dataclasses
import importlib
import inspect
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any, get_args, get_origin, is_typeddict

import pytest

PINNED = Path(__file__).with_name("claude_agent_sdk_names.json")

#: fields this host's records add to claude-agent-sdk's (after them), by name
EXTRA_FIELDS: dict[str, set[str]] = {
    # persist_session: an option of earlier claude-agent-sdk releases this host keeps
    "ClaudeAgentOptions": {"persist_session", "provider", "agent_dir", "agent", "project_key",
                           "ask_user", "host_session"},
}


def _fields(obj: type) -> list[tuple[str, bool]] | None:
    """(name, required) of each field of a dataclass or attrs class, else None."""
    if dataclasses.is_dataclass(obj):
        return [(f.name, f.default is dataclasses.MISSING
                 and f.default_factory is dataclasses.MISSING) for f in dataclasses.fields(obj)]
    if hasattr(obj, "__attrs_attrs__"):
        import attrs

        return [(f.name, f.default is attrs.NOTHING) for f in attrs.fields(obj)]
    return None


def describe(obj: Any) -> list[Any]:
    """``[kind, detail]`` of one public name (see the module docstring)."""
    if isinstance(obj, type):
        if is_typeddict(obj):
            return ["TypedDict", {"keys": sorted(typing.get_type_hints(obj)),
                                  "required": sorted(obj.__required_keys__)}]
        fields = _fields(obj)
        if fields is not None:
            return ["record", [list(f) for f in fields]]
        if getattr(obj, "_is_protocol", False):
            return ["Protocol", sorted(n for n, v in vars(obj).items()
                                       if not n.startswith("_") and callable(v))]
        if issubclass(obj, BaseException):
            return ["exception", [c.__name__ for c in obj.__mro__[1:-1]
                                  if c.__module__.startswith("claude_agent_sdk")]]
        return ["class", None]
    if inspect.isfunction(obj):
        params = [p.name for p in inspect.signature(obj).parameters.values()]
        return ["async function" if inspect.iscoroutinefunction(obj)
                or inspect.isasyncgenfunction(obj) else "function", params]
    origin = get_origin(obj)
    if origin is typing.Literal:
        return ["Literal", sorted(map(str, get_args(obj)))]
    if origin in (typing.Union, types.UnionType):
        args = get_args(obj)
        if all(get_origin(a) is typing.Literal for a in args):
            return ["Literal", sorted(str(v) for a in args for v in get_args(a))]
        return ["Union", sorted(getattr(a, "__name__", str(a)) for a in args)]
    if origin is collections.abc.Callable:
        return ["Callable", None]
    if origin is dict:
        return ["alias", "dict"]
    if isinstance(obj, frozenset):
        return ["constant", sorted(obj)]
    return ["constant", None]


def _public_names_of_types(path: Path) -> list[str]:
    """The names ``types.py`` defines at its top level (classes, functions, assignments)."""
    names: list[str] = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return [n for n in names if not n.startswith("_")]


def refresh(unpacked: str) -> None:
    """Write the pinned file from the unpacked wheel at ``unpacked``."""
    sys.path.insert(0, unpacked)
    package = importlib.import_module("claude_agent_sdk")
    module = importlib.import_module("claude_agent_sdk.types")
    data = {
        "version": package.__version__,
        "all": {n: (["constant", None] if n == "__version__" else describe(getattr(package, n)))
                for n in package.__all__},
        "types": {n: describe(getattr(module, n))
                  for n in _public_names_of_types(Path(module.__file__))},
    }
    PINNED.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"{PINNED}: claude-agent-sdk {data['version']}, {len(data['all'])} names in "
          f"__all__, {len(data['types'])} in types")


# ----------------------------------------------------------------------------- comparing

def problems(name: str, pinned: list[Any], ours: Any, where: Any) -> list[str]:
    """What differs between the pinned description of ``name`` and this host's object."""
    kind, detail = pinned
    got_kind, got = describe(ours)
    if kind == "exception":
        if not (isinstance(ours, type) and issubclass(ours, BaseException)):
            return [f"{name}: an exception class there, {got_kind} here"]
        return [f"{name}: not a subclass of {base}" for base in detail
                if not issubclass(ours, getattr(where, base))]
    if kind in ("function", "async function") and got_kind in ("function", "async function"):
        out = [] if kind == got_kind else [f"{name}: {kind} there, {got_kind} here"]
        if got[:len(detail)] != detail:
            out.append(f"{name}: parameters {detail} there, {got} here")
        params = inspect.signature(ours).parameters
        out += [f"{name}: added parameter {p} has no default" for p in got[len(detail):]
                if params[p].default is inspect.Parameter.empty
                and params[p].kind not in (params[p].VAR_POSITIONAL, params[p].VAR_KEYWORD)]
        return out
    if kind != got_kind:
        return [f"{name}: {kind} there, {got_kind} here"]
    if kind == "record":
        theirs = [f for f, _ in detail]
        names = [f for f, _ in got]
        out = []
        if names[:len(theirs)] != theirs:
            out.append(f"{name}: fields {theirs} there, {names} here")
        extra = set(names[len(theirs):]) - EXTRA_FIELDS.get(name, set())
        if extra:
            out.append(f"{name}: fields {sorted(extra)} are not claude-agent-sdk's "
                       "(list them in EXTRA_FIELDS if they are this host's additions)")
        required = dict(map(tuple, got))
        out += [f"{name}.{f}: has a default there, required here" for f, req in detail
                if not req and required.get(f)]
        return out
    if kind == "Protocol":
        missing = sorted(set(detail) - set(got))
        return [f"{name}: methods {missing} missing"] if missing else []
    if detail != got and kind not in ("class", "Callable", "constant"):
        return [f"{name}: {detail} there, {got} here"]
    return []


def _pinned() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(PINNED.read_text(encoding="utf-8"))
    return data


def _check(module_name: str, section: str) -> list[str]:
    module = importlib.import_module(module_name)
    out = []
    for name, pinned in _pinned()[section].items():
        if not hasattr(module, name):
            out.append(f"{name}: missing from {module_name}")
            continue
        out += problems(name, pinned, getattr(module, name), module)
    return out


def test_the_pin_is_a_real_release() -> None:
    data = _pinned()
    assert data["version"].count(".") == 2
    assert len(data["all"]) > 150 and "ClaudeSDKError" in data["all"]


def test_every_name_of_claude_agent_sdk_exists_with_its_kind_and_fields() -> None:
    assert _check("zpi_host.sdk", "all") == []


def test_every_name_of_claude_agent_sdk_types_exists_in_zpi_host_sdk_types() -> None:
    assert _check("zpi_host.sdk.types", "types") == []


def test_the_sdk_all_lists_every_pinned_name() -> None:
    import zpi_host.sdk

    assert set(_pinned()["all"]) - set(zpi_host.sdk.__all__) == set()


def test_types_are_the_same_objects_as_the_package_names() -> None:
    """``from zpi_host.sdk.types import X`` and ``from zpi_host.sdk import X`` agree."""
    import zpi_host.sdk
    import zpi_host.sdk.types as sdk_types

    shared = set(_pinned()["all"]) & set(_pinned()["types"])
    assert shared and [n for n in shared
                       if getattr(zpi_host.sdk, n) is not getattr(sdk_types, n)] == []


def test_docs_list_every_name_with_a_status() -> None:
    """docs/sdk.md, "Every name of claude-agent-sdk": one row per pinned name, with one of
    the statuses the section explains."""
    text = (Path(__file__).resolve().parents[3] / "docs" / "sdk.md").read_text(encoding="utf-8")
    section = text.split("## Every name of claude-agent-sdk", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = cells[2]
    data = _pinned()
    assert set(rows) == set(data["all"]) | set(data["types"])
    statuses = {"same", "differs", "type only", "never sent", "never raised",
                "UnsupportedOptionError"}
    assert {n: st for n, st in rows.items() if st not in statuses} == {}


def _migration_section() -> str:
    text = (Path(__file__).resolve().parents[3] / "docs" / "sdk.md").read_text(encoding="utf-8")
    return text.split("## Migrating from claude-agent-sdk", 1)[1].split("\n## ", 1)[0]


def option_rows(section: str) -> set[str]:
    """The names a row of the migration table starts with: each backticked name of its first
    cell (``output_format={...}`` counts as ``output_format``)."""
    import re

    names: set[str] = set()
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0].startswith("`"):
            names |= set(re.findall(r"`([A-Za-z_]\w*)", cells[0]))
    return names


def test_the_migration_table_has_a_row_for_every_option() -> None:
    """docs/sdk.md, "Migrating from claude-agent-sdk": every field of the pinned release's
    ``ClaudeAgentOptions`` is named first in a row that says its status; the fields this
    host adds are named in the section too."""
    section = _migration_section()
    kind, fields = _pinned()["all"]["ClaudeAgentOptions"]
    assert kind == "record"
    assert [f for f, _ in fields if f not in option_rows(section)] == []
    assert [f for f in EXTRA_FIELDS["ClaudeAgentOptions"] if f"`{f}`" not in section] == []


def test_the_option_rows_check_finds_a_missing_option() -> None:
    table = ("| claude-agent-sdk | `zpi_host.sdk` | |\n|---|---|---|\n"
             "| `max_turns`, `output_format={...}` | same | ok |\n"
             "| text mentioning `stderr` | same | not first |\n")
    assert option_rows(table) == {"max_turns", "output_format"}


@pytest.mark.parametrize(("pinned", "ours", "expected"), [
    (["record", [["a", True], ["b", False]]], "record_ab_required", "has a default there"),
    (["record", [["a", True], ["b", False]]], "record_a", "fields"),
    (["TypedDict", {"keys": ["a"], "required": ["a"]}], "typed_dict_b", "there"),
    (["Literal", ["x", "y"]], "literal_x", "there"),
    (["function", ["a", "b"]], "function_a", "parameters"),
    (["TypedDict", {"keys": ["a"], "required": ["a"]}], "function_a", "TypedDict there"),
])
def test_the_comparison_finds_each_kind_of_difference(pinned: list[Any], ours: str,
                                                      expected: str) -> None:
    import attrs

    @attrs.define
    class RecordABRequired:
        a: int
        b: int

    @attrs.define
    class RecordA:
        a: int = 0

    class TypedDictB(typing.TypedDict):
        b: int

    def function_a(a: int) -> None: ...

    objects = {"record_ab_required": RecordABRequired, "record_a": RecordA,
               "typed_dict_b": TypedDictB, "literal_x": typing.Literal["x"],
               "function_a": function_a}
    found = problems("X", pinned, objects[ours], None)
    assert found and expected in found[0]


if __name__ == "__main__":
    refresh(sys.argv[1])
