"""builtins:web in a whole ``zpi-host run`` process, against a loopback web server."""

from __future__ import annotations

import json

from tests.e2e.test_builtins import zpi
from tests.helpers.web_server import web_server


def test_web_fetch_and_web_search_in_one_run(tmp_path):
    agent = tmp_path / "agent"
    agent.mkdir()
    with web_server() as web:
        web.page("/notes", "<h1>Release notes</h1><p>Version <b>2.0</b></p>")
        web.search_results = [{"title": "Notes", "url": web.url("/notes"), "content": "v2"}]
        (agent / "settings.json").write_text(json.dumps({"plugins": {"builtins": {"web": {
            "allow_private_addresses": True, "searxng_url": web.base_url}}}}))
        script = tmp_path / "script.jsonl"
        turns = [{"tool_calls": [{"name": "web_search", "arguments": {"query": "notes"}}]},
                 {"tool_calls": [{"name": "web_fetch", "arguments": {"url": web.url("/notes")}},
                                 {"name": "web_fetch", "arguments": {
                                     "url": "http://169.254.169.254/"}}]},
                 {"text": "Version 2.0."}]
        script.write_text("".join(json.dumps(t) + "\n" for t in turns))
        out = zpi(tmp_path, "run", "--model", f"scripted:{script}", "--output-format",
                  "stream-json", "--deny", "web_fetch(domain:169.254.169.254)",
                  "which version?")
        paths = [p for p, _, _ in web.requests]
    assert out.returncode == 0, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines()]
    text = json.dumps(events)
    assert events[-1]["result"] == "Version 2.0."
    assert f"1. [Notes]({web.url('/notes')})" in text
    assert "# Release notes" in text and "**2.0**" in text
    assert "web_fetch(domain:169.254.169.254)" in text  # the deny rule's reason
    assert paths == ["/search", "/notes"]
