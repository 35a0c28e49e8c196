"""``http`` and ``prompt`` hook handlers in real sessions: the event's JSON POSTed to a real
loopback server and the answer read as a command's; a model (through the session's provider)
judging an event with ``{"ok": ..., "reason": ...}``; a project's http hook waiting for trust."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from helpers.claude_hooks import make_hooks

from zpi_host.contract.plugins import PluginConfig, PluginHost
from zpi_host.providers.messages import ContextMessage, ToolResultMessage
from zpi_host.session.assembly import create_session
from zpi_host.testing import FunctionModel, ScriptedModel

pytestmark = pytest.mark.anyio


class HookServer:
    """Answers POST /<path> with the route's (status, body); records (path, headers, JSON)."""

    def __init__(self) -> None:
        self.routes: dict[str, tuple[int, str]] = {}
        self.posts: list[tuple[str, dict[str, str], Any]] = []
        self.base_url = ""


@pytest.fixture
def hook_server() -> Iterator[HookServer]:
    state = HookServer()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"null")
            state.posts.append((self.path, dict(self.headers.items()), body))
            status, text = state.routes.get(self.path, (404, ""))
            data = text.encode()
            self.send_response(status)
            if status in (301, 302):
                self.send_header("Location", state.base_url + "/empty")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def host() -> PluginHost:
    return PluginHost(PluginConfig(autoload=False)).load()


def bash(command: str) -> dict:
    return {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}


def results(session) -> list[ToolResultMessage]:
    return [m for m in session.messages if isinstance(m, ToolResultMessage)]


async def run(session, prompt: str = "go", events: list | None = None):
    if events is not None:
        session.subscribe(events.append)
    try:
        return await session.run(prompt)
    finally:
        await session.dispose()


async def test_an_http_hook_gets_the_event_and_its_answer_decides(
        zpi_env, zpi_plugins, hook_server, tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("HOOK_TOKEN", "t0k3n")
    monkeypatch.setenv("NOT_LISTED", "leak")
    deny = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": "policy server says no"}}
    hook_server.routes.update({"/deny": (200, json.dumps(deny)), "/empty": (200, ""),
                               "/broken": (500, "oops"), "/text": (200, "fine thanks"),
                               "/moved": (302, "")})
    url = hook_server.base_url
    config = {"hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [
            {"type": "http", "url": f"{url}/empty",
             "headers": {"Authorization": "Bearer $HOOK_TOKEN", "X-Other": "[${NOT_LISTED}]"},
             "allowedEnvVars": ["HOOK_TOKEN"]},
            {"type": "http", "url": f"{url}/broken"},
            {"type": "http", "url": f"{url}/text"},
            {"type": "http", "url": f"{url}/moved"},
        ]},
        {"matcher": "Bash", "hooks": [{"type": "http", "url": f"{url}/deny"}]},
    ]}}
    hooks, problems = make_hooks(config, tmp_path, name="policy")
    assert problems == []
    zpi_plugins.register(hooks, "claude:policy")
    events: list = []
    session = await create_session(model="t:m", provider=ScriptedModel([bash("echo hi"),
                                                                        "done"]),
                                   cwd=work, host=host())
    await run(session, events=events)
    (denied,) = results(session)
    assert denied.is_error and "policy server says no" in denied.content[0].text
    paths = sorted(p for p, _, _ in hook_server.posts)
    assert paths == ["/broken", "/deny", "/empty", "/moved", "/text"]  # redirect not followed
    _, headers, payload = next(p for p in hook_server.posts if p[0] == "/empty")
    assert headers["Authorization"] == "Bearer t0k3n" and headers["X-Other"] == "[]"
    assert headers["Content-Type"] == "application/json"
    assert payload["hook_event_name"] == "PreToolUse" and payload["tool_name"] == "Bash"
    assert payload["tool_input"]["command"] == "echo hi"
    assert payload["session_id"] == session.session_id
    messages = "\n".join(d.message for d in hooks.diagnostics)
    assert "answered HTTP 500" in messages
    assert "with a body that is not a JSON object" in messages
    assert "answered HTTP 302" in messages


async def test_an_unreachable_http_hook_does_not_block(zpi_env, zpi_plugins, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    config = {"hooks": {"PreToolUse": [{"hooks": [
        {"type": "http", "url": "http://127.0.0.1:9/hook", "timeout": 5}]}]}}
    hooks, _ = make_hooks(config, tmp_path, name="down")
    zpi_plugins.register(hooks, "claude:down")
    session = await create_session(model="t:m", provider=ScriptedModel([bash("echo ran"),
                                                                        "done"]),
                                   cwd=work, host=host())
    await run(session)
    (ran,) = results(session)
    assert not ran.is_error and ran.content[0].text.strip() == "ran"
    assert any("POST http://127.0.0.1:9/hook failed" in d.message for d in hooks.diagnostics)


def judge(verdicts: list[str], turns: list[Any]):
    """A model answering hook requests (purpose ``hook``) from ``verdicts`` and the loop's
    requests from ``turns``; it keeps the hook prompts it was sent."""
    asked: list[str] = []

    def answer(request):
        if request.purpose == "hook":
            asked.append(request.messages[-1].text_content)
            return verdicts.pop(0)
        return turns.pop(0)

    return FunctionModel(answer, side=("hook",)), asked


async def test_a_stop_prompt_hook_continues_the_run_with_its_reason(zpi_env, zpi_plugins,
                                                                     tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    config = {"hooks": {"Stop": [{"hooks": [
        {"type": "prompt", "prompt": "Did the agent run the tests? Event: $ARGUMENTS"}]}]}}
    hooks, _ = make_hooks(config, tmp_path, name="judge")
    zpi_plugins.register(hooks, "claude:judge")
    model, asked = judge(['```json\n{"ok": false, "reason": "run the tests first"}\n```',
                          '{"ok": true}'], ["I am done", "tests pass, done"])
    session = await create_session(model="t:m", provider=model, cwd=work, host=host())
    result = await run(session)
    assert result.result == "tests pass, done"
    continued = [m for m in session.messages if isinstance(m, ContextMessage)][-1]
    assert continued.text == "Stop hook feedback: run the tests first"
    assert len(asked) == 2 and asked[0].startswith("Did the agent run the tests? Event: {")
    event = json.loads(asked[0].split("Event: ", 1)[1])
    assert event["hook_event_name"] == "Stop" and event["last_assistant_message"] == "I am done"
    assert json.loads(asked[1].split("Event: ", 1)[1])["stop_hook_active"] is True


async def test_a_pre_tool_prompt_hook_denies_and_a_bad_answer_does_not(zpi_env, zpi_plugins,
                                                                       tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    config = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "prompt", "prompt": "Is this command safe?"}]}]}}
    hooks, _ = make_hooks(config, tmp_path, name="guard")
    zpi_plugins.register(hooks, "claude:guard")
    model, asked = judge(['{"ok": false, "reason": "rm is not allowed"}', "sure, why not"],
                         [bash("rm -rf build"), bash("echo second"), "done"])
    session = await create_session(model="t:m", provider=model, cwd=work, host=host())
    await run(session)
    first, second = results(session)
    assert first.is_error and "rm is not allowed" in first.content[0].text
    assert not second.is_error and second.content[0].text.strip() == "second"
    assert asked[0].startswith("Is this command safe?\n\nThe event:\n{")
    assert any("did not answer" in d.message for d in hooks.diagnostics)


async def test_a_projects_http_hook_waits_for_trust(zpi_env, hook_server, tmp_path):
    work = tmp_path / "work"
    (work / ".claude").mkdir(parents=True)
    hook_server.routes["/seen"] = (200, "")
    (work / ".claude/settings.json").write_text(json.dumps({"hooks": {"UserPromptSubmit": [
        {"hooks": [{"type": "http", "url": f"{hook_server.base_url}/seen"}]}]}}))
    (zpi_env.agent_dir / "settings.json").write_text(json.dumps(
        {"compat": {"claude": {"settings_sources": ["project"]}}}))
    for trusted, expected in ((False, 0), (True, 1)):
        session = await create_session(model="t:m", provider=ScriptedModel(["ok"]), cwd=work,
                                       trust_project=trusted)
        await run(session)
        assert len(hook_server.posts) == expected, trusted


def test_the_hook_environment_fills_only_allowed_header_variables():
    from zpi_compat_claude.hooks.remote import fill_header

    env = {"A": "1", "B": "2"}
    assert fill_header("$A-${A}-$B-${B}-$C-$", env, ("A",)) == "1-1----$"


def test_prompt_text_and_verdicts():
    from zpi_compat_claude.hooks.remote import prompt_text, verdict_answer

    assert prompt_text("x $ARGUMENTS y", {"a": 1}) == 'x {"a": 1} y'
    assert verdict_answer("Stop", '{"ok": true}').stdout == ""
    blocked = json.loads(verdict_answer("UserPromptSubmit", 'Sure: {"ok": false}').stdout)
    assert blocked == {"decision": "block", "reason": "the hook's model said no"}
    assert verdict_answer("Stop", '{"ok": "yes"}').error is not None
