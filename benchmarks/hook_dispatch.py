"""Claude and ZCode hook dispatch: what loaded hook configurations cost per tool call.

1. Non-matching handlers. A session of N turns (default 200) with an instant model, each turn
   one ``read`` of a small file, no transcript, runs without Claude hooks and with 20 Claude
   hook configurations loaded (20 ClaudeHooks plugins with PreToolUse, PostToolUse,
   PostToolUseFailure and PermissionRequest handlers whose matchers, names and regular
   expressions, do not match ``Read``, plus a SessionStart handler for ``clear`` only). For
   information it also runs with 20 plain zpi plugins implementing the same kernel hooks that
   return None at once (the kernel's hook facade). Target: with / without <= 1.2.
2. A matching handler inside a real run. A session of M turns (default 200) of one ``read``
   each, persisted into a temporary agent dir (so the hook gets a real ``transcript_path``),
   with one Claude plugin whose PreToolUse handler is the command ``true`` matching ``Read``,
   and the same session without it. The hook's cost per call is the difference of their
   per-turn times. The baseline, in the same event loop, spawns ``true`` M times the way a
   host must (``anyio.open_process``, pipes, its own session, stdin closed, awaited).
   Target: hook / spawn <= 1.5. For information, the run with the hook is also compared
   whole with the same run where a plain zpi plugin spawns ``true`` itself before each call
   (no subtraction, so steadier under load, but the shared per-turn cost dilutes the ratio).

The matching part is the difference of two runs, so the load of a shared machine moves it
more than any other row: it also prints, for information, the same comparison in CPU time
(``time.process_time`` of this process, all its threads: what the host itself spends around
the spawn, which other load changes less than wall time), and its rounds default to 21.

All variants of a part alternate, ``--rounds`` times, in one process. Both parts run for each
dialect (``--dialect claude``, ``zcode`` or ``both``, the default) with the same targets: ZCode's
configurations are the same handlers read by ZCode's dialect (its matcher rules, camelCase
input, output cap), and its matching handler is a ``process`` handler (argv ``true``, no shell).

    python benchmarks/hook_dispatch.py [--turns 200] [--calls 200] [--rounds 21] [--quick]
                                       [--dialect both]
"""

from __future__ import annotations

import asyncio
import subprocess
import tempfile
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

from _measure import ainterleave, arguments, compare, emit

NON_MATCHING_TARGET = 1.2
MATCHING_TARGET = 1.5
PLUGINS = 20

#: one configuration per plugin; none of its matchers matches Read
NON_MATCHING: dict[str, Any] = {"hooks": {
    "SessionStart": [{"matcher": "clear", "hooks": [{"type": "command", "command": "true"}]}],
    "PreToolUse": [
        {"matcher": "Bash|Write", "hooks": [{"type": "command", "command": "true"}]},
        {"matcher": "^Web.*", "hooks": [{"type": "command", "command": "true"}]},
    ],
    "PermissionRequest": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}],
    "PostToolUse": [{"matcher": "Edit.*", "hooks": [{"type": "command", "command": "true"}]}],
    "PostToolUseFailure": [{"matcher": "mcp__.*",
                            "hooks": [{"type": "command", "command": "true"}]}],
}}


def dialect_of(kind: str) -> Any:
    if kind == "zcode":
        from zpi_compat_zcode.dialect import ZCODE

        return ZCODE
    from zpi_compat_claude.dialect import CLAUDE

    return CLAUDE


def claude_hooks(index: int, config: dict[str, Any], root: Path, kind: str = "claude") -> Any:
    """One hooks plugin of ``kind``'s dialect (``claude`` or ``zcode``) over ``config``."""
    from zpi_compat_claude.hooks import ClaudeHooks, parse_hooks

    dialect = dialect_of(kind)
    parsed, problems = parse_hooks(config, f"bench-{index}", dialect)
    if problems:
        raise SystemExit(f"benchmark configuration is wrong: {problems}")
    folder = root / f"plugin-{index}"
    folder.mkdir(exist_ok=True)
    return ClaudeHooks(name=f"{kind}:bench-{index}", root=folder, hooks=parsed,
                       data_dir=root / "data" / str(index), env={}, substitute=lambda s: s,
                       dialect=dialect)


class NoOp:
    """A plain zpi plugin implementing the hooks a ClaudeHooks object implements here."""

    @staticmethod
    def make() -> Any:
        from zpi_host.contract.hookspecs import hookimpl

        class _NoOp:
            @hookimpl
            def zpi_session_start(self, session: Any, source: str) -> None:
                return None

            @hookimpl
            def zpi_before_tool(self, session: Any, call: Any, tool: Any) -> None:
                return None

            @hookimpl
            def zpi_permission_request(self, session: Any, call: Any, tool: Any,
                                       reason: str) -> None:
                return None

            @hookimpl
            def zpi_after_tool(self, session: Any, call: Any, result: Any) -> None:
                return None

            @hookimpl
            def zpi_tool_failed(self, session: Any, call: Any, result: Any) -> None:
                return None

        return _NoOp()


def make_host(root: Path, plugins: int, kind: str = "claude") -> Any:
    from zpi_host.contract.plugins import PluginConfig, PluginHost

    host = PluginHost(PluginConfig(autoload=False)).load()
    hooks = kind in ("claude", "zcode")
    for i in range(plugins):
        plugin = claude_hooks(i, NON_MATCHING, root, kind) if hooks else NoOp.make()
        record = host.register_plugin(plugin, f"{kind}:bench-{i}",
                                      source=kind if hooks else "local")
        if record.status != "ok":
            raise SystemExit(f"plugin failed: {record.error}")
    if hooks:
        expected = ["zpi_after_tool", "zpi_before_tool", "zpi_permission_request",
                    "zpi_session_start", "zpi_tool_failed"]
        assert not plugins or host.implemented_hooks(f"{kind}:bench-0") == expected
    return host


async def per_turn(turns: int, root: Path, plugins: int, kind: str = "claude") -> float:
    """Seconds per turn of an unpersisted session of ``turns`` reads with ``plugins`` loaded."""
    return await run_turns(turns, root, make_host(root, plugins, kind), None)


#: per-call CPU seconds of the last timed part (:func:`spawn_true`, :func:`run_turns`)
_last_cpu: list[float] = [0.0]


async def with_cpu(part: Awaitable[float], sink: list[float]) -> float:
    """Await ``part`` (a timed part returning wall seconds per call); its CPU seconds per call
    go to ``sink``."""
    wall = await part
    sink.append(_last_cpu[0])
    return wall


async def spawn_true(calls: int) -> float:
    """Seconds per spawn of ``true`` the way the hook runner spawns (pipes, own group)."""
    import anyio

    cpu = time.process_time()
    started = time.perf_counter()
    for _ in range(calls):
        process = await anyio.open_process(["true"], stdin=subprocess.PIPE,
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                           start_new_session=True)
        assert process.stdin is not None
        await process.stdin.aclose()
        await process.wait()
        await process.aclose()
    elapsed = time.perf_counter() - started
    _last_cpu[0] = (time.process_time() - cpu) / calls
    return elapsed / calls


class SpawnsTrue:
    """A plain zpi plugin that, before each tool call, spawns ``true`` itself the way
    :func:`spawn_true` does: the least a host can do to run a command per call."""

    @staticmethod
    def make() -> Any:
        from zpi_host.contract.hookspecs import hookimpl

        class _SpawnsTrue:
            @hookimpl
            async def zpi_before_tool(self, session: Any, call: Any, tool: Any) -> None:
                await spawn_true(1)
                return None

        return _SpawnsTrue()


async def matching_turn(turns: int, root: Path, agent: Path, kind: str,
                        dialect: str = "claude") -> float:
    """Seconds per turn of a persisted session of ``turns`` reads: without hooks
    (``kind="none"``), with one hooks plugin of ``dialect`` whose PreToolUse handler ``true``
    matches Read (``"hook"``; for ZCode a ``process`` handler, argv ``["true"]``, no shell), or
    with a plain plugin spawning ``true`` itself before each call (``"spawn"``)."""
    from zpi_host.contract.plugins import PluginConfig, PluginHost

    host = PluginHost(PluginConfig(autoload=False)).load()
    hooks = None
    if kind == "spawn":
        host.register_plugin(SpawnsTrue.make(), "bench-spawns-true")
    if kind == "hook":
        handler = ({"type": "process", "command": "true", "args": []} if dialect == "zcode"
                   else {"type": "command", "command": "true"})
        config = {"PreToolUse": [{"matcher": "Read", "hooks": [handler]}]}
        hooks = claude_hooks(999, config, root, dialect)
        host.register_plugin(hooks, f"{dialect}:bench-true", source=dialect)
    seconds = await run_turns(turns, root, host, agent)
    if hooks is not None and hooks.diagnostics:
        raise SystemExit(f"the hook failed: {hooks.diagnostics[0]}")
    return seconds


async def run_turns(turns: int, root: Path, host: Any, agent: Path | None) -> float:
    """Seconds per turn of a session of ``turns`` reads of small.txt; persisted into ``agent``
    (a temporary agent dir) when given, so hooks get a real transcript."""
    from zpi_host.session.assembly import create_session
    from zpi_host.testing import FunctionModel

    read_call = {"tool_calls": [{"name": "read", "arguments": {"path": "small.txt"}}]}
    count = [0]

    def model(request: Any) -> Any:
        count[0] += 1
        return read_call if count[0] < turns else {"text": "done"}

    session = await create_session(model="function:bench", provider=FunctionModel(model),
                                   cwd=root, host=host, tools=["read"],
                                   persist=agent is not None, agent_dir=agent)
    cpu = time.process_time()
    started = time.perf_counter()
    result = await session.run("read small.txt again and again")
    elapsed = time.perf_counter() - started
    _last_cpu[0] = (time.process_time() - cpu) / turns
    await session.dispose()
    if result.is_error or result.num_turns != turns:
        raise SystemExit(f"run failed: {result.stop_reason} {result.error}")
    return elapsed / turns


async def measure(dialect: str, root: Path, agent: Path, turns: int, rounds: int,
                  calls: int) -> list[Any]:
    """Both parts for one dialect, as table rows."""
    label = {"claude": "Claude", "zcode": "ZCode"}[dialect]
    non_matching = await ainterleave({
        "without": lambda: per_turn(turns, root, 0),
        "hooks": lambda: per_turn(turns, root, PLUGINS, dialect),
        "noop": lambda: per_turn(turns, root, PLUGINS, "noop"),
    }, rounds)
    # 2. one matching hook in a real (persisted) run; the spawn baseline in the same loop
    cpu: dict[str, list[float]] = {"without": [], "hook": [], "spawn": []}
    matching = await ainterleave({
        "without": lambda: with_cpu(matching_turn(calls, root, agent, "none"), cpu["without"]),
        "hook": lambda: with_cpu(matching_turn(calls, root, agent, "hook", dialect),
                                 cpu["hook"]),
        "spawn": lambda: with_cpu(spawn_true(calls), cpu["spawn"]),
        "spawn_run": lambda: matching_turn(calls, root, agent, "spawn"),
    }, rounds)
    cpu = {name: taken[-rounds:] for name, taken in cpu.items()}  # without the warm-up
    hook_cost = [h - w for h, w in zip(matching["hook"], matching["without"], strict=True)]
    hook_cpu = [h - w for h, w in zip(cpu["hook"], cpu["without"], strict=True)]
    handler = "process handler" if dialect == "zcode" else "command hook"
    return [
        compare(f"hook_dispatch: {PLUGINS} non-matching {label} hook configs, per turn",
                non_matching["hooks"], non_matching["without"], unit="µs", scale=1e6,
                target=NON_MATCHING_TARGET,
                note=f"baseline = the same {turns}-turn read session without hooks"),
        compare(f"hook_dispatch: {PLUGINS} no-op zpi plugins, per turn (kernel facade; "
                f"{label} round)",
                non_matching["noop"], non_matching["without"], unit="µs", scale=1e6, op=""),
        compare(f"hook_dispatch: matching {label} PreToolUse {handler} `true`, in a real run",
                hook_cost, matching["spawn"], target=MATCHING_TARGET,
                note=f"zpi = per-turn time of a persisted {calls}-turn read session with the "
                "hook minus without it; baseline = anyio.open_process(['true']) with pipes, "
                "own session, awaited, in the same loop"),
        compare(f"hook_dispatch (CPU time): matching {label} PreToolUse {handler} `true`, "
                "in a real run", hook_cpu, cpu["spawn"], op="",
                note="for information: the same rounds in CPU time of this process (the "
                "spawning parent; `true` itself is not counted on either side)"),
        compare(f"hook_dispatch: run with the matching {label} hook vs run with a plugin "
                "spawning `true`, per turn", matching["hook"], matching["spawn_run"],
                unit="ms", op="", note="both whole runs (no subtraction: steadier, but the "
                "shared turn cost dilutes the ratio)"),
    ]


async def amain(turns: int, rounds: int, calls: int, dialects: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="zpi-bench-hooks-") as tmp:
        root, agent = Path(tmp, "project").resolve(), Path(tmp, "agent").resolve()
        root.mkdir()
        (root / "small.txt").write_text("".join(f"line {i}\n" for i in range(20)))
        rows: list[Any] = []
        for dialect in dialects:
            rows += await measure(dialect, root, agent, turns, rounds, calls)
    emit(rows, "hook_dispatch")
    return 0


def main() -> int:
    args = arguments("hook_dispatch", __doc__, rounds=21,
                     quick={"turns": 10, "rounds": 1, "calls": 5},
                     options=[("--turns", {"type": int, "default": 200}),
                              ("--calls", {"type": int, "default": 200, "help": "turns of the "
                               "matching-hook session (= hook calls, = spawns)"}),
                              ("--dialect", {"choices": ("claude", "zcode", "both"),
                                             "default": "both"})],
                     minimum={"turns": 2, "calls": 2})
    dialects = ["claude", "zcode"] if args.dialect == "both" else [args.dialect]
    return asyncio.run(amain(args.turns, args.rounds, args.calls, dialects))


if __name__ == "__main__":
    raise SystemExit(main())
