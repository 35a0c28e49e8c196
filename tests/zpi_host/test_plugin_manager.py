"""The plugin manager's quicker reading of module plugins finds exactly the hook
implementations pluggy's own reading finds."""

from __future__ import annotations

import importlib
import sys
import types

import pluggy
import pytest

from zpi_host import hookimpl
from zpi_host.contract.hookspecs import PROJECT_NAME
from zpi_host.contract.plugins import _PluginManager

PLUGIN_MODULES = [
    "zpi_host.tools.plugin", "zpi_host.providers.plugin", "zpi_builtins.memory",
    "zpi_builtins.search", "zpi_builtins.tasks", "zpi_builtins.handoff", "zpi_builtins.web",
    "zpi_builtins.instructions", "zpi_builtins.title", "zpi_compat_claude.plugin",
    "zpi_compat_zcode.plugin", "zpi_host.contract.decisions", "zpi_host.agent.events",
]


def crafted() -> types.ModuleType:
    """A module with every kind of value pluggy looks at: marked and unmarked functions, one
    marked under another name, marked static and class methods, a marked class, a callable
    object, a bound method, a lazily answered name and a marker that is not a dict."""
    module = types.ModuleType("crafted_plugin")

    @hookimpl
    def zpi_instructions(cwd, settings, resources):  # type: ignore[no-untyped-def]
        return None

    @hookimpl(specname="zpi_instructions", tryfirst=True)
    def other_name(cwd, settings, resources):  # type: ignore[no-untyped-def]
        return None

    def zpi_unmarked(cwd):  # type: ignore[no-untyped-def]
        return None

    class Holder:
        @hookimpl
        def zpi_session_end(self, session, reason):  # type: ignore[no-untyped-def]
            return None

    @hookimpl
    class MarkedClass:
        pass

    def bad_marker():  # type: ignore[no-untyped-def]
        return None

    bad_marker.zpi_impl = "not a dict"  # type: ignore[attr-defined]
    module.__dict__.update({
        "zpi_instructions": zpi_instructions, "other_name": other_name,
        "zpi_unmarked": zpi_unmarked, "Holder": Holder, "MarkedClass": MarkedClass,
        "marked_static": staticmethod(zpi_instructions),
        "marked_class": classmethod(zpi_instructions),
        "bound": Holder().zpi_session_end, "callable_object": Holder(),
        "bad_marker": bad_marker, "number": 3, "module": sys,
        "__getattr__": lambda name: zpi_instructions,
        "__dir__": lambda: ["zpi_instructions", "lazy_name", "number"],
    })
    return module


@pytest.mark.parametrize("name", PLUGIN_MODULES)
def test_module_plugins_read_as_pluggy_reads_them(name: str) -> None:
    module = importlib.import_module(name)
    ours, theirs = _PluginManager(PROJECT_NAME), pluggy.PluginManager(PROJECT_NAME)
    for attribute in dir(module):
        assert ours.parse_hookimpl_opts(module, attribute) == theirs.parse_hookimpl_opts(
            module, attribute), attribute


def test_every_kind_of_value_reads_as_pluggy_reads_it() -> None:
    module = crafted()
    ours, theirs = _PluginManager(PROJECT_NAME), pluggy.PluginManager(PROJECT_NAME)
    found = {}
    for attribute in [*vars(module), "lazy_name", "__getattr__", "missing"]:
        mine = ours.parse_hookimpl_opts(module, attribute)
        assert mine == theirs.parse_hookimpl_opts(module, attribute), attribute
        found[attribute] = mine is not None
    assert {name for name, hooked in found.items() if hooked} >= {
        "zpi_instructions", "other_name", "bound"}
    assert not found["zpi_unmarked"] and not found["bad_marker"] and not found["number"]


def test_a_registered_module_plugin_gets_the_same_hook_callers() -> None:
    module = crafted()
    ours, theirs = _PluginManager(PROJECT_NAME), pluggy.PluginManager(PROJECT_NAME)
    from zpi_host.contract import hookspecs

    for manager in (ours, theirs):
        manager.add_hookspecs(hookspecs)
        manager.register(module, "crafted")
    assert sorted(h.name for h in ours.get_hookcallers(module) or ()) == sorted(
        h.name for h in theirs.get_hookcallers(module) or ())
    assert [i.function for i in ours.hook.zpi_instructions.get_hookimpls()] == [
        i.function for i in theirs.hook.zpi_instructions.get_hookimpls()]
