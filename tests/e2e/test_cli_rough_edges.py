"""Rough edges of the command line a new user hits: exit codes, stdin prompts, pipes, flags."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from zpi_host.testing import ModelServer

EXE = shutil.which("zpi-host") or str(Path(sys.executable).with_name("zpi-host"))


#: these tests count the requests of a run: no title side request after it (builtins:title)
NO_TITLE = "builtins:title"


def zpi(tmp_path: Path, *args: str, stdin: str | None = None, cwd: Path | None = None,
        **env_extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ZPI_", "OPENAI_", "ANTHROPIC_"))}
    env.update({"HOME": str(tmp_path / "home"), "ZPI_AGENT_DIR": str(tmp_path / "agent"),
                **env_extra})
    return subprocess.run([EXE, *args], input=stdin if stdin is not None else "",
                          capture_output=True, text=True, cwd=cwd or tmp_path, env=env,
                          timeout=60)


def script(tmp_path: Path, *turns: dict) -> str:
    path = tmp_path / "script.jsonl"
    path.write_text("".join(json.dumps(turn) + "\n" for turn in turns))
    return f"scripted:{path}"


def test_the_prompt_comes_from_stdin_with_a_dash_or_when_piped(tmp_path):
    model = script(tmp_path, {"text": "one"})
    for args in (["-"], []):
        out = zpi(tmp_path, "run", "--model", model, "--output-format", "stream-json", *args,
                  stdin="what is in\nthis file?\n")
        assert out.returncode == 0, out.stderr
        start = json.loads(out.stdout.splitlines()[0])
        assert start["type"] == "run_start" and start["prompt"] == "what is in\nthis file?\n"
    empty = zpi(tmp_path, "run", "--model", model, "-", stdin="  \n")
    assert empty.returncode == 2 and "the prompt read from stdin is empty" in empty.stderr


def test_a_missing_scripted_file_is_a_usage_error(tmp_path):
    out = zpi(tmp_path, "run", "--model", f"scripted:{tmp_path}/nope.jsonl", "hi")
    assert out.returncode == 2 and "does not exist" in out.stderr


def test_list_plugins_with_a_missing_cwd_fails(tmp_path):
    out = zpi(tmp_path, "--list-plugins", "--cwd", str(tmp_path / "nope"))
    assert out.returncode == 2 and "no such directory" in out.stderr


def test_a_bad_flag_after_a_command_prints_that_commands_usage(tmp_path):
    out = zpi(tmp_path, "run", "--bogus", "hi")
    assert out.returncode == 2
    assert out.stderr.startswith("usage: zpi-host run ")
    assert "zpi-host run: error: unrecognized arguments: --bogus" in out.stderr
    nested = zpi(tmp_path, "sessions", "list", "--bogus")
    assert nested.returncode == 2 and nested.stderr.startswith("usage: zpi-host sessions list ")


def test_piping_into_a_reader_that_leaves_prints_no_traceback(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZPI_")}
    env["ZPI_AGENT_DIR"] = str(tmp_path / "agent")
    # a reader that closes at once: the listing hits a closed pipe
    reader = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.close()"],
                              stdin=subprocess.PIPE)
    reader.wait(timeout=30)
    out = subprocess.run([EXE, "--list-plugins", "--json"], stdout=reader.stdin,
                         stderr=subprocess.PIPE, text=True, env=env, timeout=60)
    reader.stdin.close()
    assert "Traceback" not in out.stderr and "BrokenPipe" not in out.stderr
    assert out.returncode == 141


def test_a_top_level_plugin_dir_reaches_run(tmp_path):
    plugin = tmp_path / "plugin"
    (plugin / "commands").mkdir(parents=True)
    (plugin / "commands/hello.md").write_text("Say hello to $ARGUMENTS.\n")
    model = script(tmp_path, {"text": "ok"})
    out = zpi(tmp_path, "--plugin-dir", str(plugin), "run", "--model", model,
              "--output-format", "json", "/plugin:hello world")
    assert out.returncode == 0, out.stdout + out.stderr  # else: unknown command /plugin:hello
    assert json.loads(out.stdout)["result"] == "ok"


def test_base_url_on_this_machine_needs_no_key_and_sends_none(tmp_path):
    with ModelServer(["local answer"]) as server:
        server.fail_next(503, retry_after=0)
        out = zpi(tmp_path, "run", "--model", "openai:llama", "--base-url", server.base_url,
                  "hi")
        requests = list(server.requests)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "local answer\n"
    assert "zpi-host: server error (HTTP 503), retrying in 0 s, attempt 2 of 4" in out.stderr
    assert "authorization" not in {name.lower() for name in requests[0].headers}


def test_system_prompt_and_tool_flags_shape_the_request(tmp_path):
    with ModelServer(["fine", "fine"]) as server:
        out = zpi(tmp_path, "run", "--model", "openai:m", "--base-url", server.base_url,
                  "--system-prompt", "You are terse.", "--append-system-prompt", "Be kind.",
                  "--tools", "read,edit", "hi", ZPI_DISABLE_PLUGINS=NO_TITLE)
        out2 = zpi(tmp_path, "run", "--model", "openai:m", "--base-url", server.base_url,
                   "--disallowed-tools", "bash", "hi", ZPI_DISABLE_PLUGINS=NO_TITLE)
        first, second = (r.json for r in server.requests)
    assert out.returncode == 0 and out2.returncode == 0, out.stderr + out2.stderr
    system = first["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("You are terse.")
    assert "Be kind." in system["content"]
    assert sorted(t["function"]["name"] for t in first["tools"]) == ["edit", "read"]
    names = {t["function"]["name"] for t in second["tools"]}
    assert "bash" not in names and "read" in names
    bad = zpi(tmp_path, "run", "--model", "openai:m", "--base-url", "http://127.0.0.1:9",
              "--tools", "nope", "hi")
    assert bad.returncode == 2 and "unknown tool(s) nope" in bad.stderr


def test_a_denial_line_is_not_cut_before_its_fix(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("x")
    work = tmp_path / "work"
    work.mkdir()
    model = script(tmp_path, {"tool_calls": [{"name": "read", "arguments": {
        "path": str(outside / "f.txt")}}]}, {"text": "done"})
    out = zpi(tmp_path, "run", "--model", model, "go", cwd=work)
    assert out.returncode == 0, out.stderr
    (line,) = [x for x in out.stderr.splitlines() if x.startswith("  ✗ ")]
    assert f"add the directory with --add-dir {outside}" in line and not line.endswith("…")


def test_a_plugin_that_fails_to_load_is_reported_and_strict_fails_the_run(tmp_path):
    model = script(tmp_path, {"text": "hi"}, {"text": "hi"})
    missing = str(tmp_path / "no-such-plugin")
    text = zpi(tmp_path, "run", "--plugin-dir", missing, "--model", model, "go")
    assert text.returncode == 0 and text.stdout == "hi\n"
    assert "zpi-host: warning: plugin 'claude:no-such-plugin' failed to load:" in text.stderr
    stream = zpi(tmp_path, "run", "--plugin-dir", missing, "--model", model,
                 "--output-format", "stream-json", "go")
    warnings = [e for e in map(json.loads, stream.stdout.splitlines()) if e["type"] == "warning"]
    assert any("failed to load" in w["message"] for w in warnings)
    strict = zpi(tmp_path, "run", "--strict", "--plugin-dir", missing, "--model", model, "go")
    assert strict.returncode == 1 and strict.stdout == ""
    assert "zpi-host: error: plugin 'claude:no-such-plugin' failed to load" in strict.stderr


def test_prompt_previews_exactly_what_a_run_sends(tmp_path):
    (tmp_path / "AGENTS.md").write_text("Always answer in French.\n")
    flags = ["--model", "openai:m", "--append-system-prompt", "Be kind.", "--tools",
             "read,bash"]
    with ModelServer(["bien"]) as server:
        url = ["--base-url", server.base_url]
        preview = zpi(tmp_path, "prompt", "--json", *flags, *url, ZPI_DISABLE_PLUGINS=NO_TITLE)
        ran = zpi(tmp_path, "run", *flags, *url, "hi", ZPI_DISABLE_PLUGINS=NO_TITLE)
        (request,) = (r.json for r in server.requests)
    assert preview.returncode == 0 and ran.returncode == 0, preview.stderr + ran.stderr
    shown = json.loads(preview.stdout)
    assert shown["model"] == "openai:m"
    assert shown["system_prompt"] == request["messages"][0]["content"]
    assert "Be kind." in shown["system_prompt"]
    assert [t["name"] for t in shown["tools"]] == [t["function"]["name"]
                                                   for t in request["tools"]]
    text = zpi(tmp_path, "prompt", *flags, *url)
    assert text.returncode == 0 and "--- model: openai:m; 2 tool(s) ---" in text.stdout
    # the previews wrote no session file: only the run's is there
    assert len(list((tmp_path / "agent/sessions").rglob("*.jsonl"))) == 1


def test_dash_p_module_loads_a_plugin_for_one_command(tmp_path):
    (tmp_path / "house_rules.py").write_text(
        "from zpi_host import hookimpl\n\n"
        "@hookimpl\n"
        "def zpi_instructions(cwd, settings, resources):\n"
        "    return 'House rule: answer in haiku.'\n")
    flags = ["--model", script(tmp_path, {"text": "ok"})]
    shown = zpi(tmp_path, "-p", "house_rules", "prompt", *flags)
    assert shown.returncode == 0, shown.stderr
    assert "House rule: answer in haiku." in shown.stdout
    assert "House rule" not in zpi(tmp_path, "prompt", *flags).stdout  # for one command only
    listed = zpi(tmp_path, "--list-plugins", "-phouse_rules")
    assert listed.returncode == 0 and "house_rules" in listed.stdout
    ran = zpi(tmp_path, "run", "-p", "house_rules", *flags, "go")
    assert ran.returncode == 0 and ran.stdout == "ok\n", ran.stderr
    missing = zpi(tmp_path, "run", "-p", "no_such_module", *flags, "go")
    assert missing.returncode == 2 and "-p no_such_module: cannot import" in missing.stderr


def test_a_broken_project_settings_file_is_reported_with_cwd_from_elsewhere(tmp_path):
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    (project / ".zpi").mkdir(parents=True)
    elsewhere.mkdir()
    (project / ".zpi/settings.json").write_text("{broken")
    model = script(tmp_path, {"text": "ok"}, {"text": "ok"})
    expected = f"warning: {project / '.zpi/settings.json'}"
    for args in (["run", "--cwd", str(project)],
                 ["--cwd", str(project), "run", "--output-format", "json"],
                 ["prompt", "--cwd", str(project)]):
        out = zpi(tmp_path, *args, "--model", model, *(["go"] if "run" in args else []),
                  cwd=elsewhere)
        assert out.returncode == 0, out.stderr
        assert expected in out.stderr, args
