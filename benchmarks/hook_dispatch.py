"""Claude and ZCode hook dispatch: what loaded hook configurations cost per tool call.

1. Non-matching handlers. A session of N turns (default 200) with an instant model, each turn
   one ``read`` of a small file, runs without Claude hooks and with 20 Claude hook
   configurations loaded (20 ClaudeHooks plugins with PreToolUse, PostToolUse,
   PostToolUseFailure and PermissionRequest handlers whose matchers, names and regular
   expressions, do not match ``Read``, plus a SessionStart handler for ``clear`` only). For
   reference it also runs with 20 plain zpi plugins that implement the same kernel hooks and
   return None at once: what the kernel's hook facade costs per plugin, whatever the plugin
   does. The variants run alternately several times in the same process; the medians are
   compared (the best rounds are shown too). Target: with / without <= 1.2 (a handler that
   does not match costs only the match).
2. Matching handlers. The per-call cost of a PreToolUse hook whose handler is the command
   ``true`` (matched, transcript brought up to date, event JSON on stdin, process run and
   awaited, output interpreted), next to spawning ``true`` directly the same way (pipes, own
   process group), in alternating batches; medians compared. Target: hook / spawn <= 1.5.

Both parts run for each dialect (``--dialect claude``, ``zcode`` or ``both``, the default) with
the same targets: ZCode's configurations are the same handlers read by ZCode's dialect (its
matcher rules, camelCase input, output cap), and its matching handler is a ``process`` handler
(argv ``true``, no shell).

    python benchmarks/hook_dispatch.py [--turns 200] [--rounds 9] [--calls 300]
                                       [--dialect both]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

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
        from zpi_host.hookspecs import hookimpl

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
    from zpi_host.plugins import PluginConfig, PluginHost

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
    """Seconds per turn of a session of ``turns`` read calls."""
    from zpi_host.assembly import create_session
    from zpi_host.testing import FunctionModel

    read_call = {"tool_calls": [{"name": "read", "arguments": {"path": "small.txt"}}]}
    count = [0]

    def model(request: Any) -> Any:
        count[0] += 1
        return read_call if count[0] < turns else {"text": "done"}

    session = await create_session(model="function:bench", provider=FunctionModel(model),
                                   cwd=root, host=make_host(root, plugins, kind), tools=["read"],
                                   persist=False)
    started = time.perf_counter()
    result = await session.run("read small.txt again and again")
    elapsed = time.perf_counter() - started
    await session.dispose()
    if result.is_error or result.num_turns != turns:
        raise SystemExit(f"run failed: {result.stop_reason} {result.error}")
    return elapsed / turns


async def spawn_true(calls: int) -> float:
    """Seconds per spawn of ``true`` the way the hook runner spawns (pipes, own group)."""
    import anyio

    started = time.perf_counter()
    for _ in range(calls):
        process = await anyio.open_process(["true"], stdin=subprocess.PIPE,
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                           start_new_session=True)
        assert process.stdin is not None
        await process.stdin.aclose()
        await process.wait()
        await process.aclose()
    return (time.perf_counter() - started) / calls


class TrueHook:
    """A session whose one plugin has a PreToolUse handler ``true`` matching Read (for ZCode a
    ``process`` handler: argv ``["true"]``, no shell)."""

    def __init__(self, root: Path, kind: str = "claude") -> None:
        self.root = root
        self.kind = kind

    async def __aenter__(self) -> TrueHook:
        from zpi_host.assembly import create_session
        from zpi_host.plugins import PluginConfig, PluginHost
        from zpi_host.testing import ScriptedModel
        from zpi_host.tools import ToolCall

        self.host = PluginHost(PluginConfig(autoload=False)).load()
        handler = ({"type": "process", "command": "true", "args": []} if self.kind == "zcode"
                   else {"type": "command", "command": "true"})
        config = {"PreToolUse": [{"matcher": "Read", "hooks": [handler]}]}
        self.hooks = claude_hooks(999, config, self.root, self.kind)
        self.host.register_plugin(self.hooks, f"{self.kind}:bench-true", source=self.kind)
        self.session = await create_session(model="t:m", provider=ScriptedModel(["ok"]),
                                            cwd=self.root, host=self.host, tools=["read"],
                                            persist=False)
        await self.session.run("hello")  # a short history to render
        self.call = ToolCall("call-1", "read", {"path": "small.txt"})
        self.tool = self.session.tools["read"]
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.session.dispose()

    async def per_call(self, calls: int) -> float:
        """Seconds per ``zpi_before_tool`` call (match, transcript, JSON, run, interpret)."""
        started = time.perf_counter()
        for _ in range(calls):
            decision = await self.host.hooks.before_tool(self.session.view, self.call,
                                                         self.tool)
            if decision.behavior is not None:
                raise SystemExit(f"unexpected decision {decision}")
        elapsed = time.perf_counter() - started
        if self.hooks.diagnostics:
            raise SystemExit(f"the hook failed: {self.hooks.diagnostics[0]}")
        return elapsed / calls


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


async def measure(kind: str, root: Path, turns: int, rounds: int, calls: int) -> bool:
    """Both parts for one dialect; True when both targets are met."""
    label = {"claude": "Claude", "zcode": "ZCode"}[kind]
    await per_turn(20, root, 0)  # warm imports and caches
    await per_turn(20, root, PLUGINS, kind)
    bare: list[float] = []
    loaded: list[float] = []
    noop: list[float] = []
    for _ in range(rounds):
        bare.append(await per_turn(turns, root, 0))
        loaded.append(await per_turn(turns, root, PLUGINS, kind))
        noop.append(await per_turn(turns, root, PLUGINS, "noop"))
    spawn: list[float] = []
    hook: list[float] = []
    async with TrueHook(root, kind) as true_hook:
        await spawn_true(5)
        await true_hook.per_call(5)
        batch = 10
        for _ in range(max(1, calls // batch)):  # alternate small batches: noise hits both
            spawn.append(await spawn_true(batch))
            hook.append(await true_hook.per_call(batch))
    med, best = statistics.median, min
    without, with_hooks, kernel = med(bare), med(loaded), med(noop)
    ratio = with_hooks / without
    print(f"[{label}] 1. non-matching handlers: {turns} turns of one read, {rounds} alternating "
          "rounds, median (best in brackets)")
    print(f"   without {label} hooks:                {without * 1e6:8.1f} µs per tool call "
          f"({best(bare) * 1e6:.1f})")
    print(f"   with {PLUGINS} {label} hook configurations:  {with_hooks * 1e6:8.1f} µs "
          f"({best(loaded) * 1e6:.1f}); {(with_hooks - without) * 1e6 / PLUGINS:+.2f} µs each")
    print(f"   with {PLUGINS} no-op zpi plugins:           {kernel * 1e6:8.1f} µs "
          f"({best(noop) * 1e6:.1f}); {(kernel - without) * 1e6 / PLUGINS:+.2f} µs each "
          "(the kernel's hook facade)")
    print(f"   with / without: {ratio:.3f} (target <= {NON_MATCHING_TARGET}) -> "
          f"{verdict(ratio <= NON_MATCHING_TARGET)}; best rounds: "
          f"{best(loaded) / best(bare):.3f}")
    print(f"   (for information: no-op plugins / without {kernel / without:.3f}; {label} hooks / "
          f"no-op plugins {with_hooks / kernel:.3f})")
    direct, dispatched = med(spawn), med(hook)
    ratio2 = dispatched / direct
    what = "process handler" if kind == "zcode" else "handler"
    print(f"[{label}] 2. matching {what} `true`: {calls} calls each in alternating batches of "
          "10, median (best in brackets)")
    print(f"   spawning `true` directly:       {direct * 1e3:8.3f} ms per call "
          f"({best(spawn) * 1e3:.3f})")
    print(f"   PreToolUse hook running `true`: {dispatched * 1e3:8.3f} ms per call "
          f"({best(hook) * 1e3:.3f})")
    print(f"   hook / spawn: {ratio2:.3f} (target <= {MATCHING_TARGET}) -> "
          f"{verdict(ratio2 <= MATCHING_TARGET)}; best batches: {best(hook) / best(spawn):.3f}")
    return ratio <= NON_MATCHING_TARGET and ratio2 <= MATCHING_TARGET


async def amain(turns: int, rounds: int, calls: int, dialect: str = "both") -> int:
    kinds = ["claude", "zcode"] if dialect == "both" else [dialect]
    with tempfile.TemporaryDirectory(prefix="zpi-bench-hooks-") as tmp:
        root = Path(tmp).resolve()
        (root / "small.txt").write_text("".join(f"line {i}\n" for i in range(20)))
        for kind in kinds:
            await measure(kind, root, turns, rounds, calls)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--dialect", choices=("claude", "zcode", "both"), default="both")
    args = parser.parse_args()
    if args.turns < 2 or args.rounds < 1 or args.calls < 1:
        parser.error("--turns must be at least 2, --rounds and --calls at least 1")
    return asyncio.run(amain(args.turns, args.rounds, args.calls, args.dialect))


if __name__ == "__main__":
    raise SystemExit(main())
