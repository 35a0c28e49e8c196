"""``zpi-host sessions list|show|rename|tag|fork|delete``: the session helpers from a terminal."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from ..support.terminal_text import shown
from .exits import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CliUsageError, print_error


def add_sessions_parser(commands: Any) -> None:
    sessions = commands.add_parser(
        "sessions", help="list, show, rename, tag, fork or delete saved sessions",
        description="Saved sessions live under <agent dir>/sessions/<project>/<id>.jsonl.")
    actions = sessions.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="sessions of this directory (--all: every one)")
    listing.add_argument("--all", action="store_true", help="sessions of every directory")
    listing.add_argument("--json", dest="as_json", action="store_true", help="JSON output")
    show = actions.add_parser("show", help="a session's details and messages")
    show.add_argument("session_id")
    show.add_argument("--limit", type=int, default=None, help="at most N messages")
    show.add_argument("--offset", type=int, default=0, help="skip the first N messages")
    show.add_argument("--json", dest="as_json", action="store_true", help="JSON output")
    rename = actions.add_parser("rename", help="set a session's title")
    rename.add_argument("session_id")
    rename.add_argument("title")
    tag = actions.add_parser("tag", help="set a session's tags")
    tag.add_argument("session_id")
    tag.add_argument("tags", nargs="*", help="the tags (none: remove all)")
    fork = actions.add_parser("fork", help="copy a session (up to a record) into a new one")
    fork.add_argument("session_id")
    fork.add_argument("--up-to", default=None, metavar="RECORD_UUID",
                      help="copy history up to and including this record (default: all)")
    rewind = actions.add_parser(
        "rewind", help="put back the files a tool changed since a user message",
        description="Files are restored as they were at MESSAGE_ID (a file created since is "
                    "deleted), from the checkpoints a session with file checkpoints keeps; "
                    "only paths inside the current directory and --add-dir are touched. "
                    "Without MESSAGE_ID: the user messages and how many files changed since.")
    rewind.add_argument("session_id")
    rewind.add_argument("message_id", nargs="?", default=None)
    rewind.add_argument("--add-dir", dest="add_dirs", action="append", default=[],
                        metavar="DIR", help="also restore files under DIR")
    rewind.add_argument("--json", dest="as_json", action="store_true", help="JSON output")
    delete = actions.add_parser("delete", help="delete a session's file")
    delete.add_argument("session_id")
    for action in (listing, show, rename, tag, fork, delete, rewind):
        action.add_argument("--store", metavar="STORE", default=None,
                            help="use only the session store STORE (sqlite:PATH or "
                                 "postgresql://...), not the local files")
        action.add_argument("--project-key", metavar="KEY", default=None,
                            help="with --store: the store's project scope (default: derived "
                                 "from the working directory)")


def sessions_command(args: Any) -> int:
    from ..errors import UsageError, ZpiError
    from ..session.assembly import resolve_agent_dir

    agent_dir = resolve_agent_dir(None, os.environ)
    cwd = Path(args.cwd or os.getcwd()).resolve()
    try:
        if args.store is not None and args.action == "rewind":
            raise CliUsageError("rewind restores files of a local session; resume the session "
                                "from the store once (its checkpoints come with it), then "
                                "rewind it without --store")
        if args.store is not None:
            from .store_sessions import store_command

            return store_command(args, cwd)
        if args.project_key is not None:
            raise CliUsageError("--project-key chooses a session store's scope; use it with "
                                "--store")
        if getattr(args, "session_id", None):
            args.session_id = full_session_id(args.session_id, agent_dir)
        return _ACTIONS[args.action](args, agent_dir, cwd)
    except UsageError as exc:
        print_error(exc)
        return EXIT_USAGE
    except ZpiError as exc:
        print_error(exc)
        return EXIT_FAILED


def full_session_id(given: str, agent_dir: Path) -> str:
    """The session id that starts with ``given`` (ids are long; a prefix is enough when only
    one session has it). An unknown prefix is returned as given, for the caller's error."""
    from ..transcript import list_sessions

    return match_session_id(given, [i.session_id for i in list_sessions(None,
                                                                        agent_dir=agent_dir)])


def match_session_id(given: str, ids: list[str]) -> str:
    """``given`` completed to the one id in ``ids`` it starts; as given when none."""
    if given in ids:
        return given
    matches = sorted(i for i in ids if i.startswith(given))
    if len(matches) > 1:
        raise CliUsageError(f"session id prefix {given!r} matches {len(matches)} sessions ("
                         f"{', '.join(matches[:5])}{', ...' if len(matches) > 5 else ''}); "
                         "give more characters")
    return matches[0] if matches else given


def info_dict(info: Any) -> dict[str, Any]:
    return {"session_id": info.session_id, "title": info.title, "tags": list(info.tags),
            "cwd": str(info.cwd), "path": str(info.path), "created_at": info.created_at,
            "modified_at": info.modified_at, "message_count": info.message_count,
            "first_prompt": info.first_prompt}


def _list(args: Any, agent_dir: Path, cwd: Path) -> int:
    from ..transcript import list_sessions

    infos = list_sessions(None if args.all else cwd, agent_dir=agent_dir)
    if args.as_json:
        print(json.dumps([info_dict(i) for i in infos], indent=2))
        return EXIT_OK
    if not infos:
        where = "any directory" if args.all else str(cwd)
        print(f"no saved sessions for {where}", file=sys.stderr)
        return EXIT_OK
    for info in infos:
        print(shown(session_line(info), sys.stdout))
    return EXIT_OK


def session_line(info: Any) -> str:
    """One saved session on one line: id, last change, size, title or first prompt, tags."""
    label = info.title or _brief(info.first_prompt or "", 50) or "(empty)"
    tags = f"  [{', '.join(info.tags)}]" if info.tags else ""
    return (f"{info.session_id}  {info.modified_at}  {info.message_count:>4} msgs  "
            f"{label}{tags}")


def _show(args: Any, agent_dir: Path, cwd: Path) -> int:
    from ..transcript import get_session_info, get_session_messages

    info = get_session_info(args.session_id, agent_dir=agent_dir)
    if info is None:
        print_error(f"no session {args.session_id!r} under {agent_dir}")
        return EXIT_FAILED
    messages = get_session_messages(args.session_id, limit=args.limit, offset=args.offset,
                                    agent_dir=agent_dir)
    if args.as_json:
        from ..transcript import message_to_json

        print(json.dumps({**info_dict(info),
                          "messages": [message_to_json(m) for m in messages]}, indent=2))
        return EXIT_OK
    for key, value in info_dict(info).items():
        if value not in (None, "", []):
            print(shown(f"{key}: {', '.join(value) if isinstance(value, list) else value}",
                        sys.stdout))
    print()
    for message in messages:
        print(shown(f"[{message.role}] {_brief(_text_of(message), 200)}", sys.stdout))
    return EXIT_OK


def _rename(args: Any, agent_dir: Path, cwd: Path) -> int:
    from ..transcript import rename_session

    rename_session(args.session_id, args.title, agent_dir=agent_dir)
    return EXIT_OK


def _tag(args: Any, agent_dir: Path, cwd: Path) -> int:
    from ..transcript import tag_session

    tag_session(args.session_id, list(args.tags), agent_dir=agent_dir)
    return EXIT_OK


def _fork(args: Any, agent_dir: Path, cwd: Path) -> int:
    from ..transcript import fork_session

    print(fork_session(args.session_id, up_to=args.up_to, agent_dir=agent_dir))
    return EXIT_OK


def _delete(args: Any, agent_dir: Path, cwd: Path) -> int:
    from ..transcript import delete_session, get_session_info

    info = get_session_info(args.session_id, agent_dir=agent_dir)
    delete_session(args.session_id, agent_dir=agent_dir)
    if info is None:
        print(f"no session {args.session_id} under {agent_dir}: nothing deleted",
              file=sys.stderr)
    else:
        print(f"deleted session {args.session_id} ({info.path})")
    return EXIT_OK


def _rewind(args: Any, agent_dir: Path, cwd: Path) -> int:
    from ..agent.file_checkpoints import read_rewind_points, rewind_session

    if args.message_id is None:
        points = read_rewind_points(args.session_id, agent_dir=agent_dir)
        if args.as_json:
            print(json.dumps([{"message_id": p.message_id, "prompt": p.prompt,
                               "files": p.files} for p in points], indent=2))
            return EXIT_OK
        for point in points:
            print(shown(f"{point.message_id}  {point.files:>3} file(s)  "
                        f"{_brief(point.prompt, 60)}", sys.stdout))
        return EXIT_OK
    report = rewind_session(args.session_id, args.message_id, cwd=cwd, agent_dir=agent_dir,
                            add_dirs=args.add_dirs)
    if args.as_json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(shown(report.describe(), sys.stdout))
    return EXIT_FAILED if report.not_restored else EXIT_OK


_ACTIONS = {"list": _list, "show": _show, "rename": _rename, "tag": _tag, "fork": _fork,
            "delete": _delete, "rewind": _rewind}


def _text_of(message: Any) -> str:
    if message.role == "context":
        return f"({message.source}) {message.text}"
    if message.role == "assistant":
        calls = ", ".join(f"{c.name}()" for c in message.tool_calls)
        return message.text + (f" -> {calls}" if calls else "")
    return "\n".join(getattr(c, "text", f"<{c.type}>") for c in message.content)


def _brief(text: str, limit: int) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"
