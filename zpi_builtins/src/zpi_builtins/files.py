"""Service ``builtins:files``: the ai-zen SDK's file tools beside the kernel's four.

``inspect_file`` (a streamed outline of a file of any size), ``batch_edit`` (edits applied
where they match, the rest reported), ``download_file`` (through the web service's address
guard, size-limited, atomic), ``view_image`` (offered only when the session's model is
vision-capable in the catalog) and ``generate_image`` (offered only when
``plugins.builtins.files.image_model`` names a model). ``mkdir``, ``rm``, ``rename``, ``copy``,
``exist`` and ``sleep`` do what one ``bash`` command does in a coding session, so they are
registered only with ``plugins.builtins.files.shell_tools``. ai-zen's ``find_text`` is
``grep`` (``builtins:search``), and its ``ls`` is that service's ``ls``: no second name.

Every path argument is in ``PATH_ARGUMENTS``, so workspace checks and path rules
(``rm(build/**)``) apply as for ``read`` and ``write``. The tools' code is in
:mod:`.files_ops`, :mod:`.files_outline`, :mod:`.files_batch`, :mod:`.files_download` and
:mod:`.files_images`, imported at a tool's first call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from zpi_host import hookimpl
from zpi_host.permissions import PATH_ARGUMENTS, READ_TOOLS
from zpi_host.tools import SessionDefinition, Tool, ToolContext, ToolMetadata, ToolResult

from .settings import enabled, service_settings

__all__ = ["files_tools", "zpi_register_tools"]

SERVICE = "files"
SHELL_TOOLS = ("mkdir", "rm", "rename", "copy", "exist", "sleep")
MAIN_TOOLS = ("inspect_file", "batch_edit", "download_file", "view_image", "generate_image")
#: shown by ``zpi-host --list-plugins`` (what the plugin can provide; settings and the model
#: decide what a session gets)
contributes = {"tools": [*MAIN_TOOLS, *SHELL_TOOLS]}

PATH_ARGUMENTS.update({
    "mkdir": ("path",), "rm": ("path",), "exist": ("path",),
    "rename": ("source", "destination"), "copy": ("source", "destination"),
    "inspect_file": ("path",), "batch_edit": ("path",), "download_file": ("path",),
    "view_image": ("path",), "generate_image": ("path",),
})
READ_TOOLS.update({"inspect_file", "exist", "view_image"})

_READ_ONLY = ToolMetadata(read_only=True, concurrency_safe=True, side_effects=False)
_CHANGES = ToolMetadata(read_only=False, concurrency_safe=False, side_effects=True)
_WAITS = ToolMetadata(read_only=True, concurrency_safe=False, side_effects=False)


def _string(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _boolean(description: str) -> dict[str, Any]:
    return {"type": "boolean", "description": description}


def _object(required: list[str], **properties: Any) -> Mapping[str, Any]:
    return {"type": "object", "properties": properties, "required": required,
            "additionalProperties": False}


PATH = "absolute, or relative to the working directory"
SCHEMAS: Mapping[str, Mapping[str, Any]] = {
    "mkdir": _object(["path"], path=_string(f"The folder to make, with its parents ({PATH}).")),
    "rm": _object(["path"], path=_string(f"The file or folder to remove ({PATH})."),
                  recursive=_boolean("Remove a folder and everything in it (default false: "
                                     "only files and empty folders).")),
    "rename": _object(["source", "destination"], source=_string("What to move or rename."),
                      destination=_string("Its new path (must not exist unless overwrite)."),
                      overwrite=_boolean("Replace a file already at destination.")),
    "copy": _object(["source", "destination"], source=_string("The file or folder to copy."),
                    destination=_string("Where the copy goes (must not exist unless "
                                        "overwrite)."),
                    overwrite=_boolean("Replace a file already at destination.")),
    "exist": _object(["path"], path=_string(f"The path to look at ({PATH}).")),
    "sleep": _object(["seconds"], seconds={"type": "number", "minimum": 0,
                                           "description": "How long to wait, in seconds."},
                     reason=_string("Why (shown to the user).")),
    "inspect_file": _object(["path"], path=_string(f"The file to outline ({PATH})."),
                            max_items={"type": "integer", "minimum": 1, "maximum": 2000,
                                       "description": "Outline entries shown at most "
                                                      "(default 300)."}),
    "batch_edit": _object(
        ["path", "edits"], path=_string(f"The file to edit ({PATH})."),
        edits={"type": "array", "minItems": 1, "description": "Replacements, in order; "
               "each applies where its old_text matches, the others are reported.",
               "items": _object(["old_text", "new_text"],
                                old_text=_string("Exact text to replace."),
                                new_text=_string("Text to put in its place."),
                                replace_all=_boolean("Replace every occurrence instead of "
                                                     "requiring exactly one."))}),
    "download_file": _object(["url", "path"], url=_string("The http or https URL."),
                             path=_string(f"Where to save the file ({PATH})."),
                             overwrite=_boolean("Replace a file already at path.")),
    "view_image": _object(["path"], path=_string(f"A PNG, JPEG, GIF or WebP file ({PATH}).")),
    "generate_image": _object(["prompt", "path"], prompt=_string("What to draw."),
                              path=_string(f"Where to save the PNG ({PATH}); must not "
                                           "exist."),
                              size=_string("WIDTHxHEIGHT, e.g. 1024x1024 (the model's "
                                           "default when left out).")),
}

DESCRIPTIONS: Mapping[str, str] = {
    "mkdir": "Make a folder and any missing parents; an existing folder is not an error.",
    "rm": "Remove a file, a symlink (not what it points to) or, with recursive, a folder "
          "and everything in it.",
    "rename": "Move or rename a file or folder (on the same file system).",
    "copy": "Copy a file, or with a folder everything in it (symlinks copied as links).",
    "exist": "Whether a path exists, and what it is: file (with its size), folder, symlink.",
    "sleep": "Wait a number of seconds (for a server to start, a rate limit to pass).",
    "inspect_file": "Outline a file of any size without reading it whole: its line and byte "
                    "count, Markdown headings and the definitions (classes, functions, types) "
                    "with their line numbers. Use it before reading a large file, then read "
                    "the part you need with offset and limit.",
    "batch_edit": "Apply several exact text replacements to one file at once. Each edit "
                  "whose old_text matches (exactly once, or every time with replace_all) is "
                  "applied; the result lists only the edits that did not apply and why. "
                  "Nothing is written when none applies.",
    "download_file": "Download a URL to a file: public addresses only, size-limited, written "
                     "whole or not at all.",
    "view_image": "Look at an image file: it is given to you as an image.",
    "generate_image": "Draw an image from a description with the configured image model and "
                      "save it as a PNG file.",
}

METADATA: Mapping[str, ToolMetadata] = {
    "mkdir": _CHANGES, "rm": _CHANGES, "rename": _CHANGES, "copy": _CHANGES,
    "exist": _READ_ONLY, "sleep": _WAITS, "inspect_file": _READ_ONLY, "batch_edit": _CHANGES,
    "download_file": _CHANGES, "view_image": _READ_ONLY, "generate_image": _CHANGES,
}

#: where each tool's code is: module of this package, function name
_CODE = {
    "mkdir": ("files_ops", "make_folder"), "rm": ("files_ops", "remove"),
    "rename": ("files_ops", "rename"), "copy": ("files_ops", "copy"),
    "exist": ("files_ops", "exist"), "sleep": ("files_ops", "sleep"),
    "inspect_file": ("files_outline", "inspect_file"),
    "batch_edit": ("files_batch", "batch_edit"),
    "download_file": ("files_download", "download_file"),
    "view_image": ("files_images", "view_image"),
    "generate_image": ("files_images", "generate_image"),
}


#: the tools whose code awaits (network, time); the others are plain functions
_ASYNC = frozenset({"sleep", "download_file", "generate_image"})


def vision_model(settings: Mapping[str, Any], definition: SessionDefinition) -> bool:
    """``view_image``'s availability: the session's model sees images (catalog ``vision``)."""
    return definition.model is not None and definition.model.vision is True


def image_model_set(settings: Mapping[str, Any], definition: SessionDefinition) -> bool:
    """``generate_image``'s availability: ``plugins.builtins.files.image_model`` is set."""
    return bool(service_settings(settings, SERVICE)["image_model"])


AVAILABILITY: Mapping[str, Callable[[Mapping[str, Any], SessionDefinition], bool]] = {
    "view_image": vision_model, "generate_image": image_model_set,
}


def _tool(name: str, config: Mapping[str, Any]) -> Tool:
    module_name, function = _CODE[name]

    def code() -> Any:
        import importlib

        module = importlib.import_module(f"{__package__}.{module_name}")
        return getattr(module, function)

    def prepare(arguments: Mapping[str, Any]) -> Any:
        from zpi_host.tools.base import _check_object

        return _check_object(name, SCHEMAS[name], arguments)

    async def execute_async(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        return await code()(args, ctx, config)  # type: ignore[no-any-return]

    def execute(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        # a plain function: the loop runs a read-only one (inspect_file over a large file)
        # in a worker thread, off the event loop
        return code()(args, ctx, config)  # type: ignore[no-any-return]

    return Tool(name=name, description=DESCRIPTIONS[name], parameters=SCHEMAS[name],
                execute=execute_async if name in _ASYNC else execute,
                metadata=METADATA[name], prepare=prepare,
                is_available=AVAILABILITY.get(name))


def files_tools(settings: Mapping[str, Any]) -> list[Tool]:
    """The tools this service registers under ``settings`` (availability is decided later,
    when a session chooses its tools)."""
    config = service_settings(settings, SERVICE)
    web = service_settings(settings, "web")
    config = {**config, "web": web}
    names = [*MAIN_TOOLS, *(SHELL_TOOLS if config["shell_tools"] is True else ())]
    return [_tool(name, config) for name in names]


@hookimpl
def zpi_register_tools(cwd: Path, settings: Mapping[str, Any]) -> list[Tool] | None:
    if not enabled(settings, SERVICE):
        return None
    return files_tools(settings)
