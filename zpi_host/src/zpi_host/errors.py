"""Typed errors: one class per failure kind, each message saying what, where and what to do."""

from __future__ import annotations

__all__ = ["DOCS_URL", "AssemblyError", "ConnectionFailure", "ContextOverflowError",
           "HookAnswerError", "HookError", "PluginHostSealedError", "PluginLoadError",
           "RunStopped", "UsageError",
           "ZpiError", "docs_url"]

#: where the documentation is published: messages point there, never at a repository path
DOCS_URL = "https://zpi-host.readthedocs.io/en/latest/"


def docs_url(page: str, anchor: str | None = None) -> str:
    """The published address of the documentation page ``page`` (``"hooks"``), and of its
    section ``anchor`` (``"secrets"``) when given."""
    return f"{DOCS_URL}{page}.html" + (f"#{anchor}" if anchor else "")


class ZpiError(Exception):
    """Base of every error the host raises on purpose."""


class UsageError(ZpiError):
    """Bad options or arguments from the caller (the CLI exits 2)."""


class ConnectionFailure(ZpiError):
    """A service the host needs (a model provider) could not be reached.

    Defined here, below every layer, so that a layer's own connection error (the providers'
    ``ProviderConnectionError``) can be one, and the SDK's ``CLIConnectionError`` names this
    class: ``except CLIConnectionError`` catches a provider that cannot be reached.
    """


class PluginLoadError(ZpiError):
    """A plugin could not be loaded; raised only in strict mode, otherwise recorded."""

    def __init__(self, plugin: str, reason: str) -> None:
        super().__init__(
            f"plugin {plugin!r} failed to load: {reason} (an error in strict mode, which "
            "--strict or ZPI_STRICT_PLUGINS=1 turns on: without it the host goes on without "
            f"the plugin; or block it with -p no:{plugin})"
        )
        self.plugin = plugin
        self.reason = reason


class PluginHostSealedError(UsageError):
    """A registration asked of a plugin host after a session it serves has started."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(
            f"cannot register or remove the plugin {name!r}: this plugin host is sealed "
            f"({reason}); a session's plugins are fixed when it starts. Register the plugin "
            f"before the session's first run (plugins= of create_session, an entry point, or "
            f"zpi_load_plugins), or create a new session for it")
        self.plugin = name
        self.reason = reason


class HookError(ZpiError):
    """A hook implementation raised; names the plugin and hook so the user knows whom to ask."""

    def __init__(self, plugin: str, hook: str, cause: BaseException) -> None:
        super().__init__(f"plugin {plugin!r} failed in {hook}: {type(cause).__name__}: {cause}")
        self.plugin = plugin
        self.hook = hook
        self.cause = cause


class HookAnswerError(ZpiError):
    """A hook implementation returned something the contract does not allow."""

    def __init__(self, plugin: str, hook: str, problem: str) -> None:
        super().__init__(
            f"plugin {plugin!r} gave an invalid answer to {hook}: {problem} "
            f"(see {docs_url('hooks')} for what this hook may return)"
        )
        self.plugin = plugin
        self.hook = hook
        self.problem = problem


class ContextOverflowError(ZpiError):
    """The conversation no longer fits the model's context window.

    Raised by a provider that reports a context-length error, or by a ``zpi_before_request``
    implementation (a context guard); the loop answers it by compacting and retrying once.
    ``provider`` and ``status`` say which model service refused the request (None when the
    error came from a guard rather than from a service).
    """

    def __init__(
        self,
        message: str = "the conversation no longer fits the model's context window",
        *,
        provider: str | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.status = status


class RunStopped(ZpiError):
    """A hook asked to end the run now (Claude Code's ``continue: false``).

    Raise it from any lifecycle hook implementation: it passes through every error policy, the
    loop closes the calls in flight as interrupted and the run ends with stop reason
    ``hook_stopped`` and this message; the session can run again afterwards.
    """


class AssemblyError(ZpiError):
    """A session could not be assembled from the plugins' contributions."""
