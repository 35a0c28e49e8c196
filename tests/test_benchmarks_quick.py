"""Every benchmark still runs: each in its quick mode, as its own process.

The figures of a quick run mean nothing and are not looked at; what is checked is that the
benchmark finishes, verifies its own results (a wrong tool result or a lost byte exits
non-zero) and prints its rows for ``run_all.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
ROW_PREFIX = "BENCH-ROW "
SKIP_PREFIX = "BENCH-SKIP "
#: the peer benchmarks: each needs its peer (Claude Code's binary, pi's npm package), which
#: --quick never downloads
PEERS = ("peer_claude_code", "peer_pi")
ROW_FIELDS = {"measure", "zpi", "baseline", "unit", "ratio", "op", "target", "low", "high",
              "rounds", "note"}

#: each benchmark and (the start of) the measures it must print
EXPECTED = {
    "cold_start": ["cold_start: --list-plugins --json", "cold_start: one-turn scripted",
                   "cold_start: `zpi-host --version`", "cold_start: `zpi-host --help`"],
    "loop_overhead": ["loop none:", "loop transcript:"],
    "provider_turns": ["provider_turns openai:", "provider_turns anthropic:"],
    "parallel_tools": ["parallel_tools: 8 async", "parallel_tools: 8 sync",
                       "parallel_tools: 8 kernel read", "parallel_tools: host cost per extra async",
                       "parallel_tools: host cost per extra sync"],
    "bash_output": ["bash_output:"],
    "sse_parse": ["sse_parse openai", "sse_parse anthropic"],
    "transcript_load": ["transcript_load: run --resume", "transcript_load: create_session",
                        "transcript_load: run --resume shaped like Claude Code's, peak RSS"],
    "long_session": ["long_session: RSS growth", "long_session: turns",
                     "long_session openai: RSS growth", "long_session anthropic: turns",
                     "long_session openai: CPU time",
                     "long_session openai compacting at gpt-4o's window: turns",
                     "long_session anthropic compacting at claude-sonnet-4-5's window: peak RSS"],
    "hook_dispatch": ["hook_dispatch: 20 non-matching", "hook_dispatch: matching"],
    "sdk_query": ["sdk_query:"],
    "session_store": ["session_store:"],
    "builtins_overhead": ["builtins_overhead: zpi-host run", "builtins_overhead: one session"],
    "grep_tree": ["grep_tree content", "grep_tree files_with_matches", "grep_tree count"],
    "prompt_caching": ["prompt_caching: cache-read share"],
    "mcp_servers": ["mcp_servers: 3 stdio calls", "mcp_servers: 3 servers of"],
    "concurrent_sessions": ["concurrent_sessions: 5 x 2-turn sessions at once vs one",
                            "concurrent_sessions: RSS per idle session"],
    "native_storage": ["native_storage: append one record, SQLite",
                       "native_storage: resume a 1,000-record session, SQLite"],
}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ZPI_AGENT_DIR"}
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300, check=False)


def rows(output: str) -> list[dict[str, object]]:
    return [json.loads(line[len(ROW_PREFIX):]) for line in output.splitlines()
            if line.startswith(ROW_PREFIX)]


def test_every_benchmark_file_is_covered() -> None:
    scripts = {p.stem for p in BENCHMARKS.glob("*.py") if not p.stem.startswith("_")}
    assert scripts - {"run_all", *PEERS} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_benchmark_runs_in_quick_mode(name: str) -> None:
    done = run(str(BENCHMARKS / f"{name}.py"), "--quick")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    printed = rows(done.stdout)
    for row in printed:
        assert set(row) == ROW_FIELDS
        assert row["rounds"] >= 1  # type: ignore[operator]
    measures = [str(row["measure"]) for row in printed]
    for start in EXPECTED[name]:
        assert any(m.startswith(start) for m in measures), (start, measures)
    assert "measure" in done.stdout and "baseline" in done.stdout  # its own table


def test_run_all_prints_one_table_of_the_rows() -> None:
    done = run(str(BENCHMARKS / "run_all.py"), "--quick", "bash_output", "hook_dispatch")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    table = done.stdout.split("=" * 100, 1)[1]
    for start in EXPECTED["bash_output"] + EXPECTED["hook_dispatch"]:
        assert start in table
    assert "targets met" in table


def test_run_all_refuses_an_unknown_benchmark() -> None:
    done = run(str(BENCHMARKS / "run_all.py"), "--quick", "no_such_benchmark")
    assert done.returncode == 2
    assert "unknown benchmark(s) no_such_benchmark" in done.stderr


@pytest.mark.parametrize("peer", sorted(PEERS))
def test_peer_quick_skips_with_a_reason_when_the_peer_is_not_cached(tmp_path: Path,
                                                                      peer: str) -> None:
    done = run(str(BENCHMARKS / f"{peer}.py"), "--quick", "--cache", str(tmp_path / "empty"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert rows(done.stdout) == []
    skips = [line for line in done.stdout.splitlines() if line.startswith(SKIP_PREFIX)]
    assert len(skips) == 1 and "--quick never downloads" in skips[0], done.stdout
    assert skips[0].startswith(f"{SKIP_PREFIX}{peer}: ")
    assert not (tmp_path / "empty").exists()  # nothing fetched


def test_run_all_reports_a_skipped_benchmark_without_failing(tmp_path: Path) -> None:
    env_home = {"HOME": str(tmp_path)}  # an empty default cache: the peers skip
    done = subprocess.run([sys.executable, str(BENCHMARKS / "run_all.py"), "--quick", *PEERS],
                          cwd=ROOT, env={**os.environ, **env_home}, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    table = done.stdout.split("=" * 100, 1)[1]
    for peer in PEERS:
        assert f"SKIPPED: {peer}:" in table


def test_measured_process_reports_the_commands_own_peak_not_the_benchmarks() -> None:
    """A child of a large process: ``wait4`` alone reports the parent's peak (vfork keeps the
    parent's high-water mark across exec); through the launcher the child's own is reported."""
    program = (
        "import os, subprocess, sys\n"
        f"sys.path.insert(0, {str(BENCHMARKS)!r})\n"
        "from _measure import MeasuredProcess\n"
        "ballast = bytearray(400 << 20)\n"
        "for at in range(0, len(ballast), 4096): ballast[at] = 1\n"
        "child = [sys.executable, '-c', 'x = bytearray(40 << 20)\\n"
        "for at in range(0, len(x), 4096): x[at] = 1\\nraise SystemExit(3)']\n"
        "plain = subprocess.Popen(child)\n"
        "_, _, usage = os.wait4(plain.pid, 0)\n"
        "finished = MeasuredProcess(child).wait()\n"
        "print(usage.ru_maxrss * 1024, finished.peak_rss, finished.returncode, finished.seconds,\n"
        "      finished.cpu_seconds)\n")
    done = run("-c", program)
    assert done.returncode == 0, done.stderr
    naive, peak, code, seconds, cpu = done.stdout.split()
    assert int(naive) > 400 << 20  # what the benchmarks used to report
    assert 40 << 20 < int(peak) < 200 << 20
    assert int(code) == 3 and float(seconds) > 0
    assert 0 < float(cpu) <= float(seconds)  # one thread: its CPU time within its wall time


def test_the_product_environment_is_keyed_by_the_sources_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new state of any distribution's sources makes a new environment; what a build or a
    run leaves beside them (bytecode, build folders, egg-info) does not."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import _install

    for name in _install.DISTRIBUTIONS:
        (tmp_path / name / "src" / name).mkdir(parents=True)
        (tmp_path / name / "pyproject.toml").write_text(f"[project]\nname = '{name}'\n")
        (tmp_path / name / "src" / name / "__init__.py").write_text("")
    first = _install.sources_digest(tmp_path)
    module = tmp_path / "zpi_builtins" / "src" / "zpi_builtins" / "__init__.py"
    for leftover in ("__pycache__/x.cpython-311.pyc", "build/lib/x.py",
                     "src/zpi_builtins.egg-info/PKG-INFO"):
        (tmp_path / "zpi_builtins" / leftover).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "zpi_builtins" / leftover).write_text("left over")
    assert _install.sources_digest(tmp_path) == first
    module.write_text("VALUE = 1\n")
    second = _install.sources_digest(tmp_path)
    assert second != first
    module.rename(module.with_name("other.py"))  # same bytes, another file
    assert _install.sources_digest(tmp_path) not in (first, second)


def test_a_benchmark_given_an_environment_without_zpi_host_says_so(tmp_path: Path) -> None:
    done = run(str(BENCHMARKS / "cold_start.py"), "--zpi-env", str(tmp_path))
    assert done.returncode == 1
    assert f"no zpi-host to measure: --zpi-env {tmp_path}: no zpi-host in {tmp_path}" \
        in done.stderr
    assert "--zpi-env current measures this environment's" in done.stderr


def test_a_benchmark_runs_the_zpi_host_of_the_environment_it_is_given(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--zpi-env DIR`` takes a virtual environment or its ``bin`` (``--quick``: always the
    current one); a failed install step says which command failed and how."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import argparse

    import _install

    (tmp_path / "venv" / "bin").mkdir(parents=True)
    (tmp_path / "venv" / "bin" / "zpi-host").write_text("")
    for given in (tmp_path / "venv", tmp_path / "venv" / "bin"):
        args = argparse.Namespace(quick=False, zpi_env=str(given))
        assert _install.zpi_bin(args) == tmp_path / "venv" / "bin"
    assert _install.zpi_bin(argparse.Namespace(quick=True, zpi_env=str(tmp_path))) \
        == _install.current_bin()
    with pytest.raises(_install.InstallError, match=r"failed \(3\): broken index"):
        _install._run([sys.executable, "-c",
                       "import sys; sys.stderr.write('noise\\nbroken index\\n'); sys.exit(3)"])


def test_an_install_that_fails_leaves_no_environment_and_keeps_the_older_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import _install

    older = tmp_path / "zpi-0000000000000000"
    older.mkdir()
    (older / "pyvenv.cfg").write_text("")
    (older / _install.COMPLETE).write_text("")
    steps: list[list[str]] = []

    def fail_at_pip(command: list[str]) -> None:
        steps.append(command)
        if "venv" in command:
            subprocess.run([sys.executable, "-m", "venv", "--without-pip", command[-1]],
                           check=True)
            return
        raise _install.InstallError("pip install ... failed (1): no index")

    monkeypatch.setattr(_install, "_run", fail_at_pip)
    with pytest.raises(_install.InstallError, match="no index"):
        _install.product_bin(tmp_path)
    assert len(steps) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [older.name]
