"""A disk cache for the methods attrs and dataclasses generate: ``__pycache__`` for them.

attrs writes the source of each class's ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``
... and compiles it when the class is built, at import. The CLI builds over a hundred such
classes per start, and compiling their source was a fifth of a one-turn ``zpi-host run``.
The compiled code depends on nothing but its source text, its file name and the Python
version (the globals are supplied when it runs), so, like a ``.pyc``, it can be kept: this
module keeps each generated script's code object in one marshal file in the ``__pycache__``
folder of ``zpi_host`` (or under ``sys.pycache_prefix``): the ``.pyc`` slot of
:mod:`zpi_host.support.codecache_slot`, which ``pip uninstall`` removes. Entries are keyed by attrs'
file name for the script and checked against the full source text before use. Each entry
carries the day a process last used it; one no process used for a month leaves the file at
the next save.

:func:`install` (called by the CLI) routes attrs' compile step through the cache, and the
standard library's ``dataclasses`` too (anyio builds about twenty dataclasses when a run
starts; their 65 methods are keyed by their full source). It does nothing when attrs'
internal compile helper is not the one expected (another attrs version), nor for
``dataclasses`` when its ``_create_fn`` is not (another Python): then classes are compiled as
usual. Like Python's own bytecode cache the file is written only
when ``sys.dont_write_bytecode`` is false, read either way, and never an error: a file that is
missing, unreadable, for another Python or attrs version, or damaged is ignored and replaced.
"""

from __future__ import annotations
import __future__

import atexit
import contextlib
import marshal
import os
import sys
import time
from collections.abc import Callable
from importlib.machinery import ModuleSpec, PathFinder
from importlib.util import MAGIC_NUMBER, cache_from_source
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

__all__ = ["GeneratedCodeCache", "cache_path", "compile_generated", "install"]

#: entries kept at most (one per generated attrs class script or dataclass method: a run uses
#: about 190, a listing about 60); a process that used more (a test run building thousands of
#: classes) saves none
MAX_ENTRIES = 400
#: days an entry no process used is kept: entries of code since changed (an upgrade, an
#: edited checkout) or of a one-off process leave the file instead of weighing on every start
MAX_IDLE_DAYS = 30
#: the parameters of ``attr._make._compile_and_eval`` this cache stands in for
EXPECTED_PARAMETERS = ("script", "globs", "locs", "filename")

#: stands for the per-process hash seed in cached scripts (attrs' ``__hash__`` starts its
#: tuple with ``hash("<attrs generated hash module.Class>")``)
SEED_STAND_IN = 7_363_584_206_116_729_443

_installed: GeneratedCodeCache | None = None

#: the ``__future__`` flags a compile inherits from the code that calls it
_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag


def _with_constant(code: CodeType, old: int, new: int) -> CodeType:
    """``code`` with the integer constant ``old`` replaced by ``new``, also in the code of the
    functions it defines."""
    if old == new:
        return code
    consts = tuple(new if type(c) is int and c == old
                   else _with_constant(c, old, new) if type(c) is CodeType else c
                   for c in code.co_consts)
    return code.replace(co_consts=consts)


class GeneratedCodeCache:
    """Compiled code of generated scripts, loaded from and saved to ``path``; compiled with
    ``flags`` (the ``__future__`` flags of the module that would compile them). A file written
    by another Python (its bytecode magic number) or with other flags is ignored."""

    def __init__(self, path: Path, flags: int = 0) -> None:
        self.path = path
        self.flags = flags
        #: name -> (script, code, the day it was last used: days since the epoch)
        self.entries: dict[str, tuple[str, CodeType, int]] = {}
        self.used: set[str] = set()
        self.added = 0
        self.hits = 0
        self.today = int(time.time() // 86400)
        #: a used entry was last marked on an earlier day: saving refreshes the marks
        self.stale_marks = False
        self._load()

    def _load(self) -> None:
        try:
            data = self.path.read_bytes()
        except OSError:
            return
        try:
            header, flags, entries = marshal.loads(data)
        except (EOFError, ValueError, TypeError):
            return
        if header == MAGIC_NUMBER and flags == self.flags and isinstance(entries, dict):
            self.entries = {name: entry for name, entry in entries.items()
                            if type(entry) is tuple and len(entry) == 3
                            and type(entry[2]) is int}

    def compile(self, script: str, filename: str, *, name: str | None = None,
                flags: int | None = None, mode: str = "exec") -> CodeType:
        """The code of ``script`` (as ``compile(script, filename, mode)``), from the cache
        when it holds that exact script under that name (``name``, by default ``filename``),
        compiled with ``flags`` (by default the cache's). The one part of attrs' scripts that
        differs from process to process, the class's hash seed (a ``hash()`` of a string,
        randomised per process), is kept out of the key and put back into the code."""
        name = filename if name is None else name
        # attrs' seed: hash("<attrs generated hash M.C>"); the script's file name says
        # "methods" (one script per class) or "__hash__" (attr._make's own classes)
        seed = hash(filename.replace(" methods ", " hash ", 1).replace(" __hash__ ", " hash ", 1))
        key = script.replace(str(seed), str(SEED_STAND_IN))
        if key.count(str(SEED_STAND_IN)) != 1 or str(SEED_STAND_IN) in script:
            key, seed = script, SEED_STAND_IN  # no seed (or an unusual script): as it is
        entry = self.entries.get(name)
        if (type(entry) is tuple and len(entry) == 3 and entry[0] == key
                and type(entry[1]) is CodeType):
            self.hits += 1
            self.used.add(name)
            if entry[2] != self.today:
                self.stale_marks = True
            return _with_constant(entry[1], SEED_STAND_IN, seed)
        code = compile(key, filename, mode, self.flags if flags is None else flags, True)
        self.entries[name] = (key, code, self.today)
        self.used.add(name)
        self.added += 1
        return _with_constant(code, SEED_STAND_IN, seed)

    def save(self) -> None:
        """Write the cache if something was added, or at most once a day to mark what was
        used (atomically; any OSError is ignored): the entries this process used, then those
        of the file it did not use (other commands') that some process used in the last
        :data:`MAX_IDLE_DAYS`, up to :data:`MAX_ENTRIES`, so the file stays small enough to
        load at every start."""
        if not (self.added or self.stale_marks) or sys.dont_write_bytecode \
                or len(self.used) > MAX_ENTRIES:
            return
        kept = {name: (*self.entries[name][:2], self.today) for name in self.used}
        for name, entry in self.entries.items():
            if len(kept) >= MAX_ENTRIES:
                break
            if self.today - entry[2] <= MAX_IDLE_DAYS:
                kept.setdefault(name, entry)
        temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_bytes(marshal.dumps((MAGIC_NUMBER, self.flags, kept)))
            os.replace(temporary, self.path)
            self.added, self.stale_marks = 0, False
            if self.path.name == cache_path().name:
                self.path.with_name(EARLIER_NAME).unlink(missing_ok=True)
        except OSError:
            with contextlib.suppress(OSError):
                temporary.unlink(missing_ok=True)


def cache_path() -> Path:
    """Where the cache lives: the bytecode slot of :mod:`zpi_host.support.codecache_slot`, so that
    ``pip uninstall`` removes it (see that module)."""
    return Path(cache_from_source(str(Path(__file__).with_name("codecache_slot.py"))))


#: the cache file of releases before the slot module (uninstalls left it behind): a save at
#: :func:`cache_path` removes it
EARLIER_NAME = f"attrs-generated.{sys.implementation.cache_tag}.marshal"


class _RouteAfterLoad:
    """A one-time import hook: the module ``name`` is loaded as usual, then ``route`` is called
    with it before anything else uses it (for ``attr._make``: before the rest of the ``attr``
    package runs, so the classes attrs builds for itself, its validators, go through the cache
    too)."""

    def __init__(self, name: str, route: Callable[[ModuleType], None],
                 seed: dict[str, Any] | None = None) -> None:
        self.name = name
        self.route = route
        self.seed = seed or {}

    def find_spec(self, name: str, path: Any, target: Any = None) -> ModuleSpec | None:
        if name != self.name:
            return None
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(self)  # type: ignore[arg-type]
        spec = PathFinder.find_spec(name, path, target)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _ThenRoute(spec.loader, self.route, self.seed)  # type: ignore[assignment]
        return spec


class _ThenRoute:
    """A loader that runs the module with ``loader`` (with the names of ``seed`` in its
    namespace while it runs, removed after unless the module set them itself), then calls
    ``route`` with it; anything else (``get_source``, ...) is ``loader``'s."""

    def __init__(self, loader: Any, route: Callable[[ModuleType], None],
                 seed: dict[str, Any] | None = None) -> None:
        self._loader = loader
        self._route = route
        self._seed = seed or {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)  # type: ignore[no-any-return]

    def exec_module(self, module: ModuleType) -> None:
        namespace = vars(module)
        namespace.update(self._seed)
        try:
            self._loader.exec_module(module)
        finally:
            for name, value in self._seed.items():
                if namespace.get(name) is value:
                    del namespace[name]
        with contextlib.suppress(Exception):  # never break attrs' import: routed after it
            self._route(module)


class _EarlyCompile:
    """``attr._make`` compiles the methods of its own classes (``Attribute``, ``Factory``, ...)
    while it is imported, before its compile helper can be routed: during that import the
    name ``compile`` in its namespace is this object, which behaves as the built-in (the
    caller's ``__future__`` flags included) and takes the code of those scripts from a cache
    opened with those flags on first use (:func:`_route` then keeps it)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.cache: GeneratedCodeCache | None = None

    def __call__(self, source: Any, filename: Any, mode: str, flags: int = 0,
                 dont_inherit: bool = False, optimize: int = -1) -> Any:
        inherited = 0 if dont_inherit else sys._getframe(1).f_code.co_flags & _FUTURE_FLAGS
        flags |= inherited
        if type(source) is str and type(filename) is str and mode == "exec" \
                and optimize == -1 and not flags & ~_FUTURE_FLAGS:
            if self.cache is None:
                self.cache = GeneratedCodeCache(self.path or cache_path(), flags)
            if self.cache.flags == flags:
                return self.cache.compile(source, filename)
        return compile(source, filename, mode, flags, True, optimize)


def _route(make: ModuleType, path: Path | None,
           early: GeneratedCodeCache | None = None) -> GeneratedCodeCache | None:
    """Route attrs' compile step (``make`` is ``attr._make``) through a cache saved at exit
    (``early``, the one its import used, when it has the same flags); None when its compile
    helper is not the expected one."""
    original = getattr(make, "_compile_and_eval", None)
    code = getattr(original, "__code__", None)
    if code is None or code.co_varnames[:code.co_argcount] != EXPECTED_PARAMETERS:
        return None
    # attrs compiles with the __future__ imports of its own module: so does the cache
    flags = (__future__.annotations.compiler_flag
             if getattr(make, "annotations", None) is __future__.annotations else 0)
    cache = early if early is not None and early.flags == flags else GeneratedCodeCache(
        path or cache_path(), flags)

    def compile_and_eval(script: str, globs: dict[str, Any] | None,
                         locs: Any = None, filename: str = "") -> None:
        eval(cache.compile(script, filename), globs, locs)  # attrs' own script, as attrs does

    make._compile_and_eval = compile_and_eval  # type: ignore[attr-defined]
    atexit.register(cache.save)
    return cache


def install(path: Path | None = None) -> GeneratedCodeCache | None:
    """Compile attrs' generated methods through a :class:`GeneratedCodeCache` saved at exit.
    Returns the cache, or None when attrs' compile helper is not the expected one. Calling it
    again returns the cache already installed. Called before attrs is imported, it is in
    place before the ``attr`` package builds its own classes."""
    global _installed
    if _installed is not None:
        return _installed
    routed: list[GeneratedCodeCache | None] = []
    hook = None
    if "attr._make" not in sys.modules:
        early = _EarlyCompile(path)
        hook = _RouteAfterLoad("attr._make",
                               lambda make: routed.append(_route(make, path, early.cache)),
                               seed={"compile": early})
        sys.meta_path.insert(0, hook)  # type: ignore[arg-type]
    try:
        from attr import _make
    finally:
        if hook is not None:
            with contextlib.suppress(ValueError):
                sys.meta_path.remove(hook)  # type: ignore[arg-type]
    _installed = routed[0] if routed else _route(_make, path)
    if _installed is not None:
        _route_dataclasses_when_loaded(_installed)
    return _installed


def compile_generated(script: str, filename: str, flags: int = 0) -> CodeType:
    """``compile(script, filename, "exec", flags, True)`` for code a module of this project
    generates at run time: from the installed cache when there is one (keyed by the name, the
    flags and the full text), else compiled."""
    if _installed is None:
        return compile(script, filename, "exec", flags, True)
    return _installed.compile(script, filename, name=f"{filename} {flags} {script}", flags=flags)


def _route_dataclasses_when_loaded(cache: GeneratedCodeCache) -> None:
    """Route ``dataclasses``' compile step through ``cache`` now, or once it is imported (the
    listing never imports it: it is not imported for it)."""
    loaded = sys.modules.get("dataclasses")
    if loaded is not None:
        _route_dataclasses(loaded, cache)
        return
    sys.meta_path.insert(0, _RouteAfterLoad(  # type: ignore[arg-type]
        "dataclasses", lambda module: _route_dataclasses(module, cache)))


def _route_dataclasses(module: ModuleType, cache: GeneratedCodeCache) -> None:
    """``dataclasses`` compiles the source of each method it generates (``exec`` of a string
    in ``_create_fn``; a run builds about twenty dataclasses of anyio's, 65 methods, and
    compiling them cost more than any other step of the run's start after imports): the name
    ``exec`` in that module is pointed at a stand-in from :func:`_runner`. Nothing is routed when
    ``_create_fn`` is not the expected one (another Python)."""
    create = getattr(module, "_create_fn", None)
    code = getattr(create, "__code__", None)
    if code is None or "exec" not in code.co_names or "exec" in vars(module):
        return
    module.exec = _runner(cache, exec, "exec", "dataclasses")  # type: ignore[attr-defined]


def _runner(cache: GeneratedCodeCache, run: Callable[..., Any], mode: str,
            label: str) -> Callable[..., Any]:
    """A stand-in for ``exec`` or ``eval`` (``run``, compiling in ``mode``) that takes the code
    of a source string from ``cache`` (keyed by ``label``, the flags and the full text), then
    runs it exactly as ``run`` would: the caller's globals and locals when none are given, the
    caller's ``__future__`` flags."""

    def run_generated(source: Any, globs: Any = None, locs: Any = None, /) -> Any:
        caller = sys._getframe(1)
        if globs is None:
            globs = caller.f_globals
            if locs is None:
                locs = caller.f_locals
        if type(source) is str:
            flags = caller.f_code.co_flags & _FUTURE_FLAGS
            source = cache.compile(source, "<string>", name=f"<{label} {flags}> {source}",
                                   flags=flags, mode=mode)
        return run(source, globs, locs)  # the generated source, as the library runs it

    return run_generated
