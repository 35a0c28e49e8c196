"""``mkdir``, ``rm``, ``rename``, ``copy``, ``exist`` and ``sleep`` of ``builtins:files``.

Each path is the one the permission check judged (``ToolContext.target``: symlinks of the
existing part resolved once), so a rule or the workspace check sees what is changed. A
symlink named by the call is the link itself: ``rm`` removes the link, ``copy`` copies it as
a link, nothing follows it out of the workspace. A file is kept by the session's file
checkpoints (``ctx.before_change``) before ``rm``, ``rename`` or ``copy`` changes it.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from zpi_host.tools import ToolContext, ToolFailure, ToolResult


def _where(ctx: ToolContext, raw: str) -> tuple[Path, str]:
    """The path a call names as judged (not following a final symlink) and how to show it."""
    from zpi_host.fs import nofollow

    if not raw.strip():
        raise ToolFailure("the path must not be empty")
    written = ctx.resolve_path(raw)
    try:
        judged = ctx.target(raw).real
    except nofollow.UnusablePathError as exc:
        raise ToolFailure(str(exc), {"path": raw}) from None
    # the judged path has the final symlink resolved; the call names the link itself
    real = judged.parent / written.name if os.path.islink(written) else judged
    try:
        shown = str(written.relative_to(ctx.cwd))
    except ValueError:
        shown = str(written)
    return real, shown


def _kind(real: Path) -> tuple[str, os.stat_result | None]:
    try:
        st = os.lstat(real)
    except FileNotFoundError:
        return "missing", None
    except NotADirectoryError:
        return "missing", None
    if stat.S_ISLNK(st.st_mode):
        return "symlink", st
    if stat.S_ISDIR(st.st_mode):
        return "folder", st
    if stat.S_ISREG(st.st_mode):
        return "file", st
    return "other", st


def _keep(ctx: ToolContext, real: Path) -> None:
    """The session's file checkpoint of a regular file about to change."""
    if ctx.before_change is not None and _kind(real)[0] == "file":
        ctx.before_change(real)


def _failure(what: str, shown: str, exc: OSError) -> ToolFailure:
    return ToolFailure(f"cannot {what} {shown}: {exc.strerror or exc}", {"path": shown})


def _not_root(ctx: ToolContext, real: Path, shown: str, what: str) -> None:
    cwd = Path(os.path.realpath(ctx.cwd))
    if real == cwd or real in cwd.parents or real == Path(real.anchor):
        raise ToolFailure(f"refused to {what} {shown}: it is the working directory or holds "
                          "it", {"path": shown})


def make_folder(args: Mapping[str, Any], ctx: ToolContext, config: Any) -> ToolResult:
    real, shown = _where(ctx, args["path"])
    kind, _ = _kind(real)
    if kind == "folder":
        return ToolResult.text(f"{shown} already exists (a folder)",
                               details={"path": str(real), "created": False})
    if kind != "missing":
        raise ToolFailure(f"cannot make the folder {shown}: a {kind} is in the way",
                          {"path": str(real)})
    try:
        os.makedirs(real, exist_ok=True)
    except OSError as exc:
        raise _failure("make the folder", shown, exc) from None
    return ToolResult.text(f"Made the folder {shown}",
                           details={"path": str(real), "created": True})


def remove(args: Mapping[str, Any], ctx: ToolContext, config: Any) -> ToolResult:
    real, shown = _where(ctx, args["path"])
    kind, _ = _kind(real)
    if kind == "missing":
        raise ToolFailure(f"{shown} does not exist; nothing was removed", {"path": str(real)})
    _not_root(ctx, real, shown, "remove")
    try:
        if kind == "folder":
            if args.get("recursive") is True:
                shutil.rmtree(real)  # never follows symlinks (fd-based where it can be)
            else:
                try:
                    os.rmdir(real)
                except OSError as exc:
                    if exc.errno in (39, 66):  # ENOTEMPTY on Linux, on macOS
                        raise ToolFailure(f"{shown} is a folder that is not empty; set "
                                          "recursive to remove it with everything in it",
                                          {"path": str(real)}) from None
                    raise
        else:
            _keep(ctx, real)
            os.unlink(real)
    except OSError as exc:
        raise _failure("remove", shown, exc) from None
    return ToolResult.text(f"Removed {shown} (a {kind})",
                           details={"path": str(real), "kind": kind})


def _destination(ctx: ToolContext, args: Mapping[str, Any]) -> tuple[Path, str, Path, str]:
    source, source_shown = _where(ctx, args["source"])
    if _kind(source)[0] == "missing":
        raise ToolFailure(f"{source_shown} does not exist", {"path": str(source)})
    target, target_shown = _where(ctx, args["destination"])
    kind, _ = _kind(target)
    if kind != "missing" and (kind != "file" or args.get("overwrite") is not True):
        more = "; set overwrite to replace it" if kind == "file" else ""
        raise ToolFailure(f"{target_shown} already exists (a {kind}){more}",
                          {"path": str(target)})
    if not target.parent.is_dir():
        raise ToolFailure(f"the folder of {target_shown} does not exist; make it first",
                          {"path": str(target)})
    return source, source_shown, target, target_shown


def rename(args: Mapping[str, Any], ctx: ToolContext, config: Any) -> ToolResult:
    source, source_shown, target, target_shown = _destination(ctx, args)
    _not_root(ctx, source, source_shown, "move")
    _keep(ctx, source)
    _keep(ctx, target)
    try:
        os.replace(source, target) if args.get("overwrite") is True else _rename_new(source,
                                                                                    target)
    except OSError as exc:
        if exc.errno == 18:  # EXDEV
            raise ToolFailure(f"cannot move {source_shown} to {target_shown}: they are on "
                              "different file systems; copy it, then remove the original",
                              {"path": str(source)}) from None
        raise _failure("move", source_shown, exc) from None
    return ToolResult.text(f"Moved {source_shown} to {target_shown}",
                           details={"source": str(source), "destination": str(target)})


def _rename_new(source: Path, target: Path) -> None:
    """Rename without replacing anything that appeared at ``target`` meanwhile: a hard link
    made first fails if the name is taken (files), else a plain rename after a last look."""
    if not source.is_symlink() and source.is_file():
        os.link(source, target, follow_symlinks=False)
        os.unlink(source)
        return
    if os.path.lexists(target):
        raise FileExistsError(17, "File exists", str(target))
    os.rename(source, target)


def copy(args: Mapping[str, Any], ctx: ToolContext, config: Any) -> ToolResult:
    source, source_shown, target, target_shown = _destination(ctx, args)
    kind, _ = _kind(source)
    _keep(ctx, target)
    try:
        if kind == "folder":
            shutil.copytree(source, target, symlinks=True)
        elif kind == "symlink":
            os.symlink(os.readlink(source), target)
        elif kind == "file":
            _copy_file(source, target, args.get("overwrite") is True)
        else:
            raise ToolFailure(f"{source_shown} is not a file, a folder or a symlink; "
                              "copy refuses it", {"path": str(source)})
    except OSError as exc:
        raise _failure("copy", source_shown, exc) from None
    return ToolResult.text(f"Copied {source_shown} to {target_shown}",
                           details={"source": str(source), "destination": str(target),
                                    "kind": kind})


def _copy_file(source: Path, target: Path, overwrite: bool) -> None:
    """The copy written to a temporary file beside ``target``, then put in place at once."""
    import tempfile

    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".zpi-copy",
                                dir=target.parent)
    try:
        with open(source, "rb") as src, os.fdopen(fd, "wb") as out:
            shutil.copyfileobj(src, out, 1024 * 1024)
            out.flush()
            os.fsync(out.fileno())
        shutil.copymode(source, temp)
        if overwrite:
            os.replace(temp, target)
        else:
            os.link(temp, target)  # fails if something took the name meanwhile
            os.unlink(temp)
    except BaseException:
        with _quiet():
            os.unlink(temp)
        raise


def _quiet() -> Any:
    import contextlib

    return contextlib.suppress(OSError)


def exist(args: Mapping[str, Any], ctx: ToolContext, config: Any) -> ToolResult:
    real, shown = _where(ctx, args["path"])
    kind, st = _kind(real)
    details: dict[str, Any] = {"path": str(real), "exists": kind != "missing", "kind": kind}
    if kind == "missing":
        return ToolResult.text(f"{shown} does not exist", details=details)
    if kind == "file" and st is not None:
        details["size"] = st.st_size
        return ToolResult.text(f"{shown} exists: a file of {st.st_size} bytes", details=details)
    if kind == "symlink":
        details["target"] = os.readlink(real)
        return ToolResult.text(f"{shown} exists: a symlink to {details['target']}",
                               details=details)
    return ToolResult.text(f"{shown} exists: a {kind}", details=details)


async def sleep(args: Mapping[str, Any], ctx: ToolContext, config: Any) -> ToolResult:
    import anyio

    seconds = args["seconds"]
    longest = float(config["max_sleep_seconds"])
    if not isinstance(seconds, int | float) or seconds < 0:
        raise ToolFailure("seconds must be a number >= 0")
    if seconds > longest:
        raise ToolFailure(f"sleep asks for {seconds:g} s; the most is {longest:g} s (setting "
                          "plugins.builtins.files.max_sleep_seconds)")
    await anyio.sleep(seconds)
    return ToolResult.text(f"Slept {seconds:g} s", details={"seconds": seconds})
