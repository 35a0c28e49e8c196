"""Claude Code's async hooks: a handler whose first line of stdout is ``{"async": true,
"asyncTimeout": ms}``, or one configured with ``"async": true``, runs in the background: the
event does not wait for it, and what it prints when it ends reaches the model before its next
request (``additionalContext``) and the user (``systemMessage``), never as invalid JSON."""

from __future__ import annotations

import json
import sys

import anyio
import pytest
from helpers.claude_hooks import make_hooks
from helpers.contexts import contexts

from zpi_compat_claude.hooks.runner import async_answer, run_command
from zpi_host.contract.plugins import PluginConfig, PluginHost
from zpi_host.session.assembly import create_session
from zpi_host.testing import FunctionModel

pytestmark = pytest.mark.anyio
PY = sys.executable

#: answers async at once, then waits for ``release`` (made by the model's next call, so the
#: event cannot have waited for it) and answers for real
LATE_HOOK = """\
import json, os, sys, time
json.load(sys.stdin)
print(json.dumps({"async": True, "asyncTimeout": 20000}), flush=True)
while not os.path.exists("release"):
    time.sleep(0.02)
print(json.dumps({"systemMessage": "checked in the background",
                  "hookSpecificOutput": {"hookEventName": "PostToolUse",
                                         "additionalContext": "late context: all good"}}))
"""


def test_only_an_object_with_async_true_is_the_async_answer():
    assert async_answer(b'{"async": true, "asyncTimeout": 5000}') == {
        "async": True, "asyncTimeout": 5000}
    for line in (b'{"async": false}', b'{"decision": "block"}', b"async", b"", None,
                 b'{"async": true'):
        assert async_answer(line) is None


async def test_the_runner_hands_back_a_command_that_answered_async(tmp_path):
    script = ("import sys; print('{\"async\": true, \"asyncTimeout\": 20000}', flush=True); "
              "sys.stdin.read(); print('{\"systemMessage\": \"later\"}')")
    outcome = await run_command(f"{PY} -c {json.dumps(script)}", shell="bash", stdin=b"{}",
                                env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path, timeout_s=30,
                                detect_async=True)
    assert outcome.background is not None and outcome.background.timeout_s == 20.0
    final = await outcome.background.finish()
    assert final.exit_code == 0 and json.loads(final.stdout) == {"systemMessage": "later"}
    # without detection the same output is one (invalid) answer, as before
    plain = await run_command(f"{PY} -c {json.dumps(script)}", shell="bash", stdin=b"{}",
                              env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path, timeout_s=30)
    assert plain.background is None and plain.stdout.count("\n") == 2


async def test_a_handler_that_ends_at_once_after_answering_async_is_still_async(tmp_path):
    """Whether the runner sees the first line or the exit first (a quick handler, a busy
    machine), the async first line decides; the rest is the real answer."""
    script = ("print('{\"async\": true}', flush=True); "
              "print('{\"systemMessage\": \"at once\"}')")
    for _ in range(5):
        outcome = await run_command(f"{PY} -c {json.dumps(script)}", shell="bash", stdin=b"",
                                    env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path, timeout_s=30,
                                    detect_async=True)
        assert outcome.background is not None
        final = await outcome.background.finish()
        assert json.loads(final.stdout) == {"systemMessage": "at once"}


@pytest.mark.parametrize("configured", [False, True])
async def test_an_async_hook_does_not_hold_up_the_event_and_answers_later(
        zpi_env, zpi_plugins, tmp_path, configured):
    workspace = tmp_path / "work"
    workspace.mkdir()
    script = tmp_path / "late.py"
    script.write_text(LATE_HOOK if not configured else LATE_HOOK.replace(
        'print(json.dumps({"async": True, "asyncTimeout": 20000}), flush=True)\n', ""))
    handler = {"type": "command", "command": f"{PY} {script}", **(
        {"async": True} if configured else {})}
    hooks, problems = make_hooks({"PostToolUse": [{"matcher": "Bash", "hooks": [handler]}]},
                                 tmp_path)
    assert problems == []
    zpi_plugins.register(hooks, "claude:inline")
    requests = []

    async def answer(request):
        requests.append(request)
        if len(requests) == 1:
            return {"tool_calls": [{"name": "bash", "arguments": {"command": "echo one"}}]}
        if len(requests) == 2:  # the first call's hook is still waiting for this
            return {"tool_calls": [{"name": "bash", "arguments": {"command": "touch release"}}]}
        if len(requests) == 3:
            with anyio.fail_after(20):
                while hooks._background:  # both hooks end now that release exists
                    await anyio.sleep(0.02)
            return {"tool_calls": [{"name": "bash", "arguments": {"command": "echo three"}}]}
        return "done"

    events = []
    session = await create_session(model="t:m", provider=FunctionModel(answer), cwd=workspace,
                                   host=PluginHost(PluginConfig(autoload=False)).load(),
                                   permission_mode="bypass")
    session.subscribe(events.append)
    try:
        result = await session.run("go")
    finally:
        await session.dispose()
    assert result.result == "done" and not result.is_error
    # the first two calls' hooks answer once release exists (before the third request); the
    # third call's hook answers at once, and its answer reaches the last request or, when it
    # ends after that request was sent, no request at all (the run is over)
    assert contexts(session).count("late context: all good") in (2, 3)
    assert not any("invalid JSON" in w for w in session.warnings)
    told = [e for e in events if getattr(e, "type", "") == "system"]
    assert any("checked in the background" in e.message for e in told)
    assert not any(d.level != "message" for d in hooks.diagnostics), list(hooks.diagnostics)


async def test_a_background_handler_is_stopped_at_its_async_timeout(tmp_path):
    script = ("import time; print('{\"async\": true, \"asyncTimeout\": 300}', flush=True); "
              "time.sleep(600)")
    outcome = await run_command(f"{PY} -c {json.dumps(script)}", shell="bash", stdin=b"{}",
                                env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path, timeout_s=30,
                                detect_async=True)
    assert outcome.background is not None and outcome.background.timeout_s == 0.3
    final = await outcome.background.finish()
    assert final.timed_out and final.exit_code is None and final.stdout == ""
