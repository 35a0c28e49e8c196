"""``.claude-plugin/plugin.json``: read, type-check and resolve a plugin's manifest.

The manifest is optional; without it the plugin is named after its folder and every component
sits in its default place. A known field of the wrong type fails the plugin (Claude Code refuses
such a plugin too); an unknown field is a warning, because newer Claude Code versions add fields
and a plugin written for them should still load here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from zpi_host.errors import ZpiError

from .dialect import CLAUDE, Dialect
from .records import field, record

MANIFEST_PATH = CLAUDE.manifest_path

#: A name taken from a folder (no manifest): what the host accepts as a namespace.
#: (Patterns used through ``re``'s functions are compiled on first use: most plugins have a
#: manifest and no options.)
_FOLDER_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}"
_OPTION_KEY = r"[A-Za-z_][A-Za-z0-9_]*"

OPTION_TYPES = ("string", "number", "boolean", "directory", "file")

#: Every field of the reference, with the JSON shapes it may take.
_STR, _LIST, _OBJ = "text", "list", "object"
KNOWN_FIELDS: Mapping[str, tuple[str, ...]] = {
    "$schema": (_STR,),
    "name": (_STR,),
    "version": (_STR,),
    "description": (_STR,),
    "author": (_OBJ,),
    "homepage": (_STR,),
    "repository": (_STR,),
    "license": (_STR,),
    "keywords": (_LIST,),
    "commands": (_STR, _LIST),
    "agents": (_STR, _LIST),
    "skills": (_STR, _LIST),
    "outputStyles": (_STR, _LIST),
    "hooks": (_STR, _OBJ, _LIST),
    "mcpServers": (_STR, _OBJ, _LIST),
    "lspServers": (_STR, _OBJ, _LIST),
    "userConfig": (_OBJ,),
    "dependencies": (_LIST,),
}


class ManifestError(ZpiError):
    """A manifest, or a path in it, that the plugin cannot load with; the message names the
    file and the field and says what to change."""


def _shape(value: Any) -> str:
    if isinstance(value, str):
        return _STR
    if isinstance(value, list):
        return _LIST
    if isinstance(value, dict):
        return _OBJ
    return {bool: "boolean", int: "number", float: "number", type(None): "null"}.get(
        type(value), type(value).__name__)


def _describe(shapes: Sequence[str]) -> str:
    words = {_STR: "a string", _LIST: "a list", _OBJ: "an object"}
    return " or ".join(words[s] for s in shapes)


@record
class UserOption:
    """One ``userConfig`` entry: a value the user supplies (here: in settings)."""

    key: str
    type: str = "string"
    title: str | None = None
    description: str | None = None
    required: bool = False
    default: Any = None
    sensitive: bool = False
    multiple: bool = False
    min: float | None = None
    max: float | None = None

    @property
    def env_name(self) -> str:
        """``CLAUDE_PLUGIN_OPTION_<KEY>``: the key upper-cased, other characters as ``_``."""
        return "CLAUDE_PLUGIN_OPTION_" + re.sub(r"[^A-Z0-9_]", "_", self.key.upper())

    def problem(self, value: Any) -> str | None:
        """Why ``value`` does not fit this option, or None."""
        if self.multiple:
            if not isinstance(value, list):
                return f"must be a list (the option takes several values), got {value!r}"
            for item in value:
                problem = self._single_problem(item)
                if problem:
                    return problem
            return None
        return self._single_problem(value)

    def _single_problem(self, value: Any) -> str | None:
        if self.type == "boolean":
            return None if isinstance(value, bool) else f"must be true or false, got {value!r}"
        if self.type == "number":
            if isinstance(value, bool) or not isinstance(value, int | float):
                return f"must be a number, got {value!r}"
            if self.min is not None and value < self.min:
                return f"must be at least {self.min:g}, got {value!r}"
            if self.max is not None and value > self.max:
                return f"must be at most {self.max:g}, got {value!r}"
            return None
        return None if isinstance(value, str) else f"must be a string, got {value!r}"


@record
class Manifest:
    """The parts of ``plugin.json`` the host uses, type-checked; ``raw`` keeps the rest."""

    name: str
    version: str | None = None
    description: str | None = None
    commands: tuple[str, ...] | None = None
    agents: tuple[str, ...] | None = None
    skills: tuple[str, ...] = ()
    output_styles: tuple[str, ...] = ()
    hooks: tuple[Any, ...] = ()
    mcp_servers: tuple[Any, ...] = ()
    lsp_servers: tuple[Any, ...] = ()
    user_config: tuple[UserOption, ...] = ()
    dependencies: tuple[str, ...] = ()
    path: Path | None = None
    raw: Mapping[str, Any] = field(factory=dict, eq=False, repr=False)


def read_json(path: Path, root: Path | None = None, limit: int | None = None) -> Any:
    """The JSON value in ``path``; ManifestError with line and column when it does not parse.
    The file is read as one a repository or plugin ships
    (:func:`zpi_host.fs.shipped.read_shipped`): a regular file of at most ``limit`` bytes
    (default ``CONFIG_LIMIT``, 1 MiB) and, with ``root``, not linked out of that folder;
    anything else is a ManifestError saying so (a FIFO never blocks, ``/dev/zero`` is never
    read)."""
    from zpi_host.fs.shipped import CONFIG_LIMIT, ShippedFileError, read_shipped

    try:
        # a byte order mark is allowed (what decoding as "utf-8-sig" does, without loading
        # that codec: the manifest is read at every start)
        data = read_shipped(path, limit=limit or CONFIG_LIMIT, root=root, what="JSON file")
        text = data.removeprefix(b"\xef\xbb\xbf").decode("utf-8")
    except ShippedFileError as exc:
        raise ManifestError(str(exc)) from None
    except OSError as exc:
        raise ManifestError(f"{path}: cannot read the file: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ManifestError(f"{path}: not UTF-8 text (invalid byte at offset {exc.start}); "
                            "save it as UTF-8") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ManifestError(f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: "
                            f"{exc.msg}; fix the file") from exc
    except (ValueError, RecursionError) as exc:  # a number too long, nesting too deep
        raise ManifestError(f"{path}: JSON this host cannot read ({exc}); fix the file") \
            from None


def folder_name_problem(name: str, dialect: Dialect = CLAUDE) -> str | None:
    """Why a folder (or installed-plugin) name cannot name a plugin, or None."""
    if re.fullmatch(_FOLDER_NAME, name):
        return None
    return (f"the plugin has no manifest name and its folder name {name!r} cannot be used as a "
            "namespace (letters, digits, '.', '_' and '-' only); rename the folder or add "
            f"{dialect.manifest_path} with a \"name\" ({dialect.plugin_name_rule})")


def manifest_file(root: Path, dialect: Dialect = CLAUDE) -> Path | None:
    """The first of the dialect's manifest locations that exists in ``root``."""
    for rel in dialect.manifest_paths:
        if (root / rel).exists():
            return root / rel
    return None


def read_manifest(root: Path, warnings: list[str], dialect: Dialect = CLAUDE
                  ) -> Manifest | None:
    """The manifest of the plugin in ``root`` (None when it has none). Unknown fields are
    appended to ``warnings``; anything else wrong raises ManifestError."""
    path = manifest_file(root, dialect)
    if path is None:
        return None
    data = read_json(path, root)
    if not isinstance(data, dict):
        raise ManifestError(f"{path}: the manifest must be a JSON object, got {_shape(data)}")
    known = {**KNOWN_FIELDS, **dialect.extra_fields}
    if dialect.author_text:
        known["author"] = (_OBJ, _STR)
    for key, value in data.items():
        shapes = known.get(key)
        if shapes is None:
            warnings.append(f"{path}: unknown field {key!r} (ignored; this host knows "
                            f"{', '.join(sorted(k for k in known if k != '$schema'))})")
        elif _shape(value) not in shapes:
            raise ManifestError(f"{path}: field {key!r} must be {_describe(shapes)}, got "
                                f"{_shape(value)} {json.dumps(value)[:60]}; fix the manifest")
    name = data.get("name")
    if name is None:
        raise ManifestError(f"{path}: the manifest has no \"name\"; add a name such as "
                            f"\"{_suggest(root.name)}\" (or delete the file to use the "
                            "folder name)")
    if not dialect.plugin_name.fullmatch(name):
        raise ManifestError(f"{path}: plugin name {name!r} must be {dialect.plugin_name_rule}, "
                            f"e.g. \"{_suggest(name)}\"")
    _check_items(path, data, "keywords", str)
    _check_author(path, data.get("author"))
    return Manifest(
        name=name,
        version=data.get("version"),
        description=data.get("description"),
        commands=_paths(path, data, "commands"),
        agents=_paths(path, data, "agents"),
        skills=_paths(path, data, "skills") or (),
        output_styles=_paths(path, data, "outputStyles") or (),
        hooks=_entries(path, data, "hooks"),
        mcp_servers=_entries(path, data, "mcpServers"),
        lsp_servers=_entries(path, data, "lspServers"),
        user_config=_user_config(path, data.get("userConfig")),
        dependencies=_dependencies(path, data.get("dependencies")),
        path=path,
        raw=data,
    )


def _suggest(name: str) -> str:
    kebab = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return kebab or "my-plugin"


def _check_items(path: Path, data: Mapping[str, Any], key: str, kind: type) -> None:
    for index, item in enumerate(data.get(key) or ()):
        if not isinstance(item, kind):
            raise ManifestError(f"{path}: {key}[{index}] must be a string, got "
                                f"{_shape(item)} {json.dumps(item)[:60]}")


def _check_author(path: Path, author: Any) -> None:
    if author is None or isinstance(author, str):
        return
    for key in ("name", "email", "url"):
        if key in author and not isinstance(author[key], str):
            raise ManifestError(f"{path}: author.{key} must be a string, got "
                                f"{_shape(author[key])}")


def _paths(path: Path, data: Mapping[str, Any], key: str) -> tuple[str, ...] | None:
    value = data.get(key)
    if value is None:
        return None
    items = [value] if isinstance(value, str) else value
    for index, item in enumerate(items):
        if not isinstance(item, str):
            raise ManifestError(f"{path}: {key}[{index}] must be a path string such as "
                                f"\"./{key}/\", got {_shape(item)} {json.dumps(item)[:60]}")
    return tuple(items)


def _entries(path: Path, data: Mapping[str, Any], key: str) -> tuple[Any, ...]:
    """A path, an inline object, or a list of either."""
    value = data.get(key)
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    for index, item in enumerate(items):
        if not isinstance(item, str | dict):
            raise ManifestError(f"{path}: {key}[{index}] must be a path string or an object, "
                                f"got {_shape(item)}")
    return tuple(items)


def _dependencies(path: Path, value: Any) -> tuple[str, ...]:
    names = []
    for index, item in enumerate(value or ()):
        name = item.get("name") if isinstance(item, dict) else item
        if not isinstance(name, str):
            raise ManifestError(f"{path}: dependencies[{index}] must be a plugin name or an "
                                f"object with a \"name\", got {json.dumps(item)[:60]}")
        names.append(name.split("@", 1)[0])
    return tuple(names)


def _user_config(path: Path, value: Any) -> tuple[UserOption, ...]:
    options = []
    for key, spec in (value or {}).items():
        where = f"{path}: userConfig.{key}"
        if not re.fullmatch(_OPTION_KEY, key):
            raise ManifestError(f"{where}: option keys must be letters, digits and '_', not "
                                "starting with a digit (they become environment variables)")
        if not isinstance(spec, dict):
            raise ManifestError(f"{where} must be an object with at least a \"type\", got "
                                f"{_shape(spec)}")
        kind = spec.get("type", "string")
        if kind not in OPTION_TYPES:
            raise ManifestError(f"{where}.type must be one of {', '.join(OPTION_TYPES)}, got "
                                f"{json.dumps(kind)}")
        for name in ("title", "description"):
            if not isinstance(spec.get(name, ""), str):
                raise ManifestError(f"{where}.{name} must be a string")
        for name in ("required", "sensitive", "multiple"):
            if not isinstance(spec.get(name, False), bool):
                raise ManifestError(f"{where}.{name} must be true or false")
        for name in ("min", "max"):
            bound = spec.get(name)
            if bound is not None and (isinstance(bound, bool)
                                      or not isinstance(bound, int | float)):
                raise ManifestError(f"{where}.{name} must be a number")
        option = UserOption(
            key=key, type=kind, title=spec.get("title"), description=spec.get("description"),
            required=spec.get("required", False), default=spec.get("default"),
            sensitive=spec.get("sensitive", False), multiple=spec.get("multiple", False),
            min=spec.get("min"), max=spec.get("max"),
        )
        if option.default is not None:
            problem = option.problem(option.default)
            if problem:
                raise ManifestError(f"{where}.default {problem}")
        options.append(option)
    return tuple(options)


def resolve_component(root: Path, value: str, field: str, dialect: Dialect = CLAUDE,
                      manifest: Path | None = None) -> Path:
    """A manifest path (``./x``; ``x`` too where the dialect allows it) as an absolute path
    inside ``root``, symlinks resolved.

    Raises ManifestError when it does not start with ``./`` (where required), is absolute or
    leads outside the plugin (``./../x``, a symlink to elsewhere): plugins only read their own
    files.
    """
    where = f"{manifest or root / dialect.manifest_path}: {field} path {value!r}"
    if dialect.bare_paths and value.startswith(("/", "~")):
        raise ManifestError(f"{where} must be relative to the plugin folder (\"./{field}/\" or "
                            f"\"{field}/\"), not absolute")
    if not dialect.bare_paths and not value.startswith("./"):
        hint = ("" if value.startswith(("/", "~", "..")) else f"; write \"./{value}\"")
        raise ManifestError(f"{where} must start with './' (relative to the plugin folder)"
                            f"{hint}")
    real_root = root.resolve()
    target = (root / value).resolve()
    if target != real_root and not target.is_relative_to(real_root):
        raise ManifestError(f"{where} leads outside the plugin folder (it resolves to "
                            f"{target}); plugins may only use their own files: move the file "
                            "into the plugin")
    return target


def contained(root: Path, path: Path) -> Path | None:
    """``path`` resolved if it stays inside ``root`` (resolved), else None."""
    real_root = root.resolve()
    target = path.resolve()
    return target if target == real_root or target.is_relative_to(real_root) else None
