"""``zpi-host sessions ACTION --store STORE``: the session helpers over a session store only
(``zpi_host.sdk.store_sessions``), scoped to ``--project-key`` or else the working directory's
project key."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ..support.terminal_text import shown
from .exits import EXIT_FAILED, EXIT_OK, CliUsageError, print_error


def store_command(args: Any, cwd: Path) -> int:
    import anyio

    if getattr(args, "all", False):
        raise CliUsageError("--all cannot be used with --store: a store is listed one project "
                            "at a time")
    return anyio.run(_run, args, str(cwd))


async def _run(args: Any, directory: str) -> int:
    from ..stores.store_specs import open_store

    store = open_store(args.store)
    try:
        return await _ACTIONS[args.action](store, args, directory, args.project_key)
    finally:
        closing = getattr(store, "close", None)
        if closing is not None:
            result = closing()
            if hasattr(result, "__await__"):
                await result


def _info(info: Any) -> dict[str, Any]:
    return {"session_id": info.session_id, "title": info.custom_title, "tag": info.tag,
            "cwd": info.cwd, "first_prompt": info.first_prompt,
            "last_modified_ms": info.last_modified, "created_at_ms": info.created_at}


async def _list(store: Any, args: Any, directory: str, project_key: str | None) -> int:
    from ..sdk.store_sessions import list_sessions_from_store

    infos = await list_sessions_from_store(store, directory, project_key=project_key)
    if args.as_json:
        print(json.dumps([_info(i) for i in infos], indent=2))
    for info in [] if args.as_json else infos:
        print(shown(f"{info.session_id}  {info.last_modified}  {info.summary[:50]}",
                    sys.stdout))
    return EXIT_OK


async def _show(store: Any, args: Any, directory: str, project_key: str | None) -> int:
    from ..sdk.store_sessions import get_session_info_from_store, get_session_messages_from_store

    info = await get_session_info_from_store(store, args.session_id, directory,
                                             project_key=project_key)
    if info is None:
        print_error(f"no session {args.session_id!r} in the store")
        return EXIT_FAILED
    messages = await get_session_messages_from_store(store, args.session_id, directory,
                                                     args.limit, args.offset,
                                                     project_key=project_key)
    if args.as_json:
        print(json.dumps({**_info(info), "messages": [
            {"type": m.type, "uuid": m.uuid, "message": m.message} for m in messages]},
            indent=2))
        return EXIT_OK
    for key, value in _info(info).items():
        print(shown(f"{key}: {value}", sys.stdout))
    print()
    for m in messages:
        content = m.message.get("content")
        text = content if isinstance(content, str) else " ".join(
            str(b.get("text", f"<{b.get('type')}>")) for b in content or [])
        print(shown(f"[{m.type}] {text[:200]}", sys.stdout))
    return EXIT_OK


async def _rename(store: Any, args: Any, directory: str, project_key: str | None) -> int:
    from ..sdk.store_sessions import rename_session_via_store

    await rename_session_via_store(store, args.session_id, args.title, directory,
                                   project_key=project_key)
    return EXIT_OK


async def _tag(store: Any, args: Any, directory: str, project_key: str | None) -> int:
    from ..sdk.store_sessions import tag_session_via_store

    if len(args.tags) > 1:
        raise CliUsageError("a session in a store has one tag; give one (or none to clear)")
    await tag_session_via_store(store, args.session_id, args.tags[0] if args.tags else None,
                                directory, project_key=project_key)
    return EXIT_OK


async def _fork(store: Any, args: Any, directory: str, project_key: str | None) -> int:
    from ..sdk.store_sessions import fork_session_via_store

    result = await fork_session_via_store(store, args.session_id, directory, args.up_to,
                                          project_key=project_key)
    print(result.session_id)
    return EXIT_OK


async def _delete(store: Any, args: Any, directory: str, project_key: str | None) -> int:
    from ..sdk.store_sessions import delete_session_via_store

    await delete_session_via_store(store, args.session_id, directory, project_key=project_key)
    return EXIT_OK


_ACTIONS = {"list": _list, "show": _show, "rename": _rename, "tag": _tag, "fork": _fork,
            "delete": _delete}
