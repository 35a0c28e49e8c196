"""PluginHost: discovery through real entry points, isolation, controls, strict mode, tracing."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from zpi_host.contract.plugins import PluginConfig, PluginHost
from zpi_host.errors import PluginLoadError

OK_PLUGIN = """
from zpi_host import hookimpl

@hookimpl
def zpi_register_commands(cwd, settings):
    return []

@hookimpl
def zpi_turn_start(session, turn):
    pass
"""


def only(*names: str) -> PluginConfig:
    return PluginConfig(load_only=names)


def test_kernel_plugins_have_stable_names(zpi_env):
    host = PluginHost(PluginConfig(autoload=False)).load()
    kernel = [r for r in host.records if r.source == "kernel"]
    assert [r.name for r in kernel] == ["zpi.tools", "zpi.models"]
    assert all(r.status == "ok" and r.distribution == "zpi-host" for r in kernel)
    assert host.implemented_hooks("zpi.tools") == ["zpi_register_tools"]


def test_entry_point_plugin_loads(zpi_env, zpi_dist):
    zpi_dist.install("acme-tools", {"acme_ok": OK_PLUGIN}, {"acme": "acme_ok"}, version="2.3")
    host = PluginHost(only("acme")).load()
    record = host.get("acme")
    assert (record.status, record.source, record.distribution, record.version) == (
        "ok", "entrypoint", "acme-tools", "2.3")
    assert host.implemented_hooks("acme") == ["zpi_register_commands", "zpi_turn_start"]


def test_import_error_is_isolated(zpi_env, zpi_dist):
    zpi_dist.install("broken", {"broken_mod": "import no_such_module_xyz\n"},
                     {"broken": "broken_mod"})
    zpi_dist.install("fine", {"fine_mod": OK_PLUGIN}, {"fine": "fine_mod"})
    host = PluginHost(only("broken", "fine")).load()
    assert host.get("broken").status == "failed"
    assert "No module named 'no_such_module_xyz'" in host.get("broken").error
    assert "broken_mod" in host.get("broken").error
    assert host.get("fine").status == "ok"


def test_unknown_hook_fails_with_suggestion(zpi_env, zpi_dist):
    source = "from zpi_host import hookimpl\n@hookimpl\ndef zpi_before_tools(call):\n    pass\n"
    zpi_dist.install("typo", {"typo_mod": source}, {"typo": "typo_mod"})
    host = PluginHost(only("typo")).load()
    record = host.get("typo")
    assert record.status == "failed"
    assert "zpi_before_tools is not a zpi hook (did you mean zpi_before_tool?)" in record.error
    assert not host.pm.is_registered(record.plugin) if record.plugin else True
    assert host.pm.get_plugin("typo") is None


def test_unknown_argument_fails_and_leaves_nothing_registered(zpi_env, zpi_dist):
    source = """
from zpi_host import hookimpl

@hookimpl
def zpi_turn_start(session, turn):
    pass

@hookimpl
def zpi_turn_end(session, turn, messages):
    pass
"""
    zpi_dist.install("badarg", {"badarg_mod": source}, {"badarg": "badarg_mod"})
    host = PluginHost(only("badarg")).load()
    record = host.get("badarg")
    assert record.status == "failed"
    assert "messages" in record.error and "zpi_turn_end" in record.error
    impls = host.hooks.implementations("zpi_turn_start")
    assert [i.plugin_name for i in impls] == []


def test_undecorated_hook_function_fails(zpi_env, zpi_dist):
    zpi_dist.install("plain", {"plain_mod": "def zpi_turn_start(turn):\n    pass\n"},
                     {"plain": "plain_mod"})
    host = PluginHost(only("plain")).load()
    assert host.get("plain").status == "failed"
    assert "not decorated with @zpi_host.hookimpl" in host.get("plain").error


def test_hook_wrapper_is_refused(zpi_env, zpi_plugins):
    from zpi_host import hookimpl

    class Wrapper:
        @hookimpl(wrapper=True)
        def zpi_turn_start(self, turn):
            return (yield)

    zpi_plugins.register(Wrapper(), "wrapping")
    host = PluginHost(PluginConfig(autoload=False)).load()
    assert host.get("wrapping").status == "failed"
    assert "wrapper" in host.get("wrapping").error


LOADER = """
from zpi_host import hookimpl

class Child:
    @hookimpl
    def zpi_turn_start(self, turn):
        pass

@hookimpl
def zpi_load_plugins(host):
    host.register_plugin(Child(), "claude:first", source="claude",
                         contributes={"skills": ["first:review"]})
    host.register_plugin(Child(), "claude:second", source="claude")
    if FAIL:
        raise RuntimeError("folder scan exploded")
"""


@pytest.mark.parametrize("fail", [False, True])
def test_load_plugins_registers_children_and_cleans_up_on_failure(zpi_env, zpi_dist, fail):
    zpi_dist.install("loader", {"loader_mod": f"FAIL = {fail}\n" + LOADER},
                     {"loader": "loader_mod"})
    zpi_dist.install("bystander", {"bystander_mod": OK_PLUGIN}, {"bystander": "bystander_mod"})
    host = PluginHost(only("loader", "bystander")).load()
    turn_start = [i.plugin_name for i in host.hooks.implementations("zpi_turn_start")]
    if not fail:
        first = host.get("claude:first")
        assert (first.status, first.source, first.registered_by) == ("ok", "claude", "loader")
        assert first.contributes == {"skills": ["first:review"]}
        assert {"claude:first", "claude:second", "bystander"} <= set(turn_start)
    else:
        assert host.get("loader").status == "failed"
        assert "folder scan exploded" in host.get("loader").error
        assert host.get("claude:first") is None and host.get("claude:second") is None
        assert turn_start == ["bystander"]


def test_children_of_children_get_their_own_load_call(zpi_env, zpi_plugins):
    from zpi_host import hookimpl

    class Grandchild:
        @hookimpl
        def zpi_turn_end(self):
            pass

    class Child:
        @hookimpl
        def zpi_load_plugins(self, host):
            host.register_plugin(Grandchild(), "grandchild")

    class Parent:
        @hookimpl
        def zpi_load_plugins(self, host):
            host.register_plugin(Child(), "child")

    zpi_plugins.register(Parent(), "parent")
    host = PluginHost(PluginConfig(autoload=False)).load()
    assert host.get("grandchild").registered_by == "child"
    host.unregister("parent")
    assert host.get("child") is None and host.get("grandchild") is None


def test_blocked_plugins_are_not_imported(zpi_env, zpi_dist):
    zpi_dist.install("blockme", {"blockme_mod": "raise SystemExit('imported!')\n"},
                     {"blockme": "blockme_mod"})
    host = PluginHost(PluginConfig(load_only=["blockme"], disabled=["blockme"])).load()
    assert host.get("blockme").status == "blocked"
    assert "blockme_mod" not in sys.modules
    by_dist = PluginHost(PluginConfig(load_only=["blockme"], disabled=["blockme"])).load()
    assert by_dist.get("blockme").status == "blocked"


def test_disable_by_env_and_by_distribution_name(zpi_env, zpi_dist):
    zpi_dist.install("acme-dist", {"acme_mod": OK_PLUGIN}, {"acme": "acme_mod"})
    config = PluginConfig.from_env({"ZPI_DISABLE_PLUGINS": "other, acme-dist"})
    host = PluginHost(config).load()
    assert host.get("acme").status == "blocked"


def test_kernel_plugin_can_be_blocked(zpi_env):
    host = PluginHost(PluginConfig(autoload=False, disabled=["zpi.tools"])).load()
    assert host.get("zpi.tools").status == "blocked"
    assert host.implemented_hooks("zpi.tools") == []


def test_load_only_by_entry_point_or_distribution(zpi_env, zpi_dist):
    zpi_dist.install("one-dist", {"one_mod": OK_PLUGIN}, {"one": "one_mod"})
    zpi_dist.install("two-dist", {"two_mod": OK_PLUGIN}, {"two": "two_mod"})
    host = PluginHost(PluginConfig.from_env({"ZPI_LOAD_PLUGINS": "one,two-dist"})).load()
    assert host.get("one").status == "ok" and host.get("two").status == "ok"
    assert host.get("builtins:ask").status == "blocked"
    assert host.get("builtins:ask").error == "not listed in ZPI_LOAD_PLUGINS"


def test_load_only_set_but_empty_means_none(zpi_env, zpi_dist):
    zpi_dist.install("one-dist", {"one_mod": OK_PLUGIN}, {"one": "one_mod"})
    host = PluginHost(PluginConfig.from_env({"ZPI_LOAD_PLUGINS": ""})).load()
    entry = [r for r in host.records if r.source == "entrypoint"]
    assert entry and all(r.status == "blocked" for r in entry)
    assert "one_mod" not in sys.modules


def test_autoload_off_skips_entry_points(zpi_env, zpi_dist):
    zpi_dist.install("one-dist", {"one_mod": OK_PLUGIN}, {"one": "one_mod"})
    host = PluginHost(PluginConfig.from_env({"ZPI_DISABLE_PLUGIN_AUTOLOAD": "1"})).load()
    assert [r.source for r in host.records] == ["kernel", "kernel"]


def test_strict_mode_raises(zpi_env, zpi_dist):
    zpi_dist.install("broken", {"broken_mod": "1/0\n"}, {"broken": "broken_mod"})
    config = PluginConfig.from_env({"ZPI_STRICT_PLUGINS": "1", "ZPI_LOAD_PLUGINS": "broken"})
    with pytest.raises(PluginLoadError, match="ZeroDivisionError"):
        PluginHost(config).load()


def test_duplicate_names_fail_the_later_plugin(zpi_env, zpi_plugins):
    from zpi_host import hookimpl

    class A:
        @hookimpl
        def zpi_load_plugins(self, host):
            host.register_plugin(object(), "same")
            host.register_plugin(object(), "same")

    zpi_plugins.register(A(), "a")
    host = PluginHost(PluginConfig(autoload=False)).load()
    assert host.get("same").status == "ok"  # the first keeps its name and record
    duplicate = host.get("same (duplicate 1)")
    assert duplicate.status == "failed" and "already registered" in duplicate.error
    assert host.get("a").status == "ok"


@pytest.mark.anyio
async def test_tracing_prints_each_call(zpi_env, zpi_plugins, capsys):
    from zpi_host import hookimpl

    class Tracer:
        @hookimpl
        def zpi_turn_start(self, turn):
            return None

        @hookimpl
        def zpi_session_start(self, source):
            return f"started via {source}"

    zpi_plugins.register(Tracer(), "tracer")
    host = PluginHost(PluginConfig(autoload=False, trace=True)).load()
    await host.hooks.turn_start(session=None, turn=1)
    contexts = await host.hooks.session_start(session=None, source="startup")
    assert [c.value for c in contexts] == ["started via startup"]
    err = capsys.readouterr().err
    assert "zpi trace: zpi_turn_start(session, turn) -> [tracer]" in err
    assert "zpi trace: zpi_turn_start <- tracer: no answer" in err
    assert "zpi_session_start <- tracer: answered 'started via startup'" in err


def test_installed_console_script_lists_plugins_as_json(zpi_env, tmp_path):
    exe = __import__("shutil").which("zpi-host") or str(
        __import__("pathlib").Path(sys.executable).with_name("zpi-host"))
    out = subprocess.run([exe, "--list-plugins", "--json"], capture_output=True, text=True,
                         check=True, cwd=tmp_path)
    rows = json.loads(out.stdout)
    names = {r["name"]: r for r in rows}
    builtins = {"builtins:ask", "builtins:notify", "builtins:title", "builtins:instructions"}
    assert {"zpi.tools", "zpi.models", "claude", "zcode", *builtins} <= set(names)
    assert names["zpi.tools"]["contributes"]["tools"] == ["bash", "edit", "read", "write"]
    assert names["builtins:ask"] == {
        "name": "builtins:ask", "distribution": "zpi-builtins", "version": "0.1.0",
        "source": "entrypoint", "hooks": ["zpi_register_tools"],
        "contributes": {"tools": ["ask_user"]}, "status": "ok", "error": None, "warnings": [],
    }
    assert names["builtins:title"]["contributes"] == {"side requests": ["session title"]}
    assert names["builtins:instructions"]["contributes"]["instructions"] == [
        "editing", "git", "reporting", "tools", "verification"]


def test_each_distribution_metadata_is_read_once(zpi_env, zpi_dist, monkeypatch):
    """Entry points of one distribution share its name and version, read from its METADATA
    once (``Distribution.name``/``.version`` parse the file again at every access)."""
    import importlib.metadata as metadata

    zpi_dist.install("three-dist", {"three_mod": OK_PLUGIN},
                     {"three-a": "three_mod", "three-b": "three_mod", "three-c": "three_mod"},
                     version="3.1")
    reads: list[str] = []
    original = metadata.PathDistribution.read_text

    def read_text(self, filename):
        if filename in ("METADATA", "PKG-INFO"):
            reads.append(str(self._path))
        return original(self, filename)

    monkeypatch.setattr(metadata.PathDistribution, "read_text", read_text)
    host = PluginHost(PluginConfig.from_env({"ZPI_LOAD_PLUGINS": "three-dist"})).load()
    three = [r for r in host.records if r.name.startswith("three-")]
    assert [(r.name, r.distribution, r.version) for r in three] == [
        ("three-a", "three-dist", "3.1"), ("three-b", "three-dist", "3.1"),
        ("three-c", "three-dist", "3.1")]
    assert len(reads) == len(set(reads)), reads  # no distribution read twice


@pytest.mark.parametrize("impostor", ["aaa-impostor", "zzz-impostor"])
def test_a_plugin_blocked_by_its_distribution_does_not_hold_its_name(zpi_env, zpi_dist,
                                                                     impostor):
    """Two distributions with an entry point of one name: blocking one by its distribution
    leaves the name to the other, whether the blocked one comes first or last."""
    zpi_dist.install("real-dist", {"real_mod": OK_PLUGIN}, {"same": "real_mod"})
    zpi_dist.install(impostor, {"impostor_mod": OK_PLUGIN}, {"same": "impostor_mod"})
    host = PluginHost(PluginConfig(load_only=["same"], disabled=[impostor])).load()
    record = host.get("same")
    assert (record.status, record.distribution) == ("ok", "real-dist")
    assert host.implemented_hooks("same") == ["zpi_register_commands", "zpi_turn_start"]
    (aside,) = [r for r in host.records if r.distribution == impostor]
    assert aside.status == "blocked" and aside.name == "same (duplicate 1)"
    both = PluginHost(PluginConfig(load_only=["same"], disabled=["same"])).load()
    assert [r.status for r in both.records
            if r.distribution in ("real-dist", impostor)] == ["blocked"] * 2


def test_later_claimants_keep_the_first_loaded_plugins_names():
    from zpi_host.contract.plugin_names import later_claimants

    claims = [("late", "read"), ("late", "extra"), ("kernel", "read"), ("solo", "x"),
              ("twice", "y"), ("twice", "y"), ("after", "extra")]
    failed = later_claimants(claims, ["kernel", "solo", "twice", "late", "after"], "tool")
    assert set(failed) == {"late", "twice"}
    assert "'read' is already registered by plugin 'kernel'" in failed["late"]
    assert "registers the tool 'y' twice" in failed["twice"]


def test_the_plugin_table_fits_a_narrow_width_and_cuts_long_names() -> None:
    from zpi_host.contract.diagnostics import format_table

    rows = [{"name": "claude:" + "n" * 60, "distribution": "zpi-compat-claude",
             "version": "0.1.0", "source": "claude folder", "hooks": ["zpi_before_tool"] * 9,
             "contributes": {"commands": ["c" * 70]}, "status": "failed",
             "error": "it broke", "warnings": []}]
    narrow = format_table(rows, 60).split("\n")
    assert all(len(line) <= 60 for line in narrow if not line.startswith("    failed:"))
    assert narrow[1].startswith("claude:nnn") and "…" in narrow[1]
    assert narrow[2].startswith("    hooks: before_tool, before_tool")
    assert "    failed: it broke" in narrow
    assert format_table(rows) == format_table(rows, 10_000)  # wide enough: the same table
