"""Service ``builtins:title``: a short title for a session after its first exchange.

When a run of an untitled, saved session ends without error, one side request (setting
``plugins.builtins.title.model``, default the session's model) asks for a title, stored as the
session's ``title`` record (``sessions list`` shows it; ``sessions rename`` replaces it). The
request runs beside the session: a failure is logged and never touches the conversation, and
the runtime waits for it at session end. An in-memory session (never listed) gets no title.
A scripted model is asked only when its script holds
a turn with ``"purpose": "title"``.
"""

from __future__ import annotations

from typing import Any

from zpi_host import hookimpl

from .runtime import BuiltinPluginRuntime, runtime_for
from .settings import enabled, service_settings

__all__ = ["Titler", "clean_title", "zpi_run_end"]

#: shown by ``zpi-host --list-plugins``
contributes = {"side requests": ["session title"]}

PURPOSE = "title"
MAX_CHARS = 80
EXCERPT_CHARS = 2000
SYSTEM = ("You name conversations. Answer with a title of at most six words for the "
          "conversation below: no quotes, no punctuation at the end, nothing else.")


def clean_title(text: str) -> str | None:
    """The model's answer as a title: first line, control and format characters out (an
    escape sequence in a title would drive the terminal of whoever runs ``sessions list``:
    clear it, retitle it, set its clipboard), quotes and trailing dots off, at most
    ``MAX_CHARS`` characters; None when nothing is left."""
    line = next((part.strip() for part in text.strip().splitlines() if part.strip()), "")
    line = " ".join("".join(c if c.isprintable() else " " for c in line).split())
    line = line.strip("\"'`*# ").rstrip(".").strip()
    if line.lower().startswith("title:"):
        line = line[6:].strip()
    return line[:MAX_CHARS].rstrip() or None


def _text_of(message: Any) -> str:
    return "".join(getattr(block, "text", "") for block in message.content
                   if getattr(block, "type", "") == "text")


class Titler:
    """The title service of one session."""

    def __init__(self, runtime: BuiltinPluginRuntime) -> None:
        self.runtime = runtime
        self.model: str | None = service_settings(runtime.settings, "title")["model"]
        self.requested = False

    def after_run(self, session: Any) -> None:
        """Start the title request once, when the session has an exchange and no title."""
        ports = self.runtime.ports
        if self.requested or not ports.storage.persistent or ports.storage.title is not None:
            return
        if not ports.model.can_answer(PURPOSE, self.model):
            return  # asked before the excerpt: a model that never answers pays no walk a run
        prompt = self.excerpt(session.messages)
        if prompt is None:
            return
        self.requested = True
        self.runtime.spawn("title request", self.request(prompt))

    @staticmethod
    def excerpt(messages: Any) -> str | None:
        from zpi_host.providers.messages import AssistantMessage, UserMessage

        user = next((m for m in messages if isinstance(m, UserMessage)), None)
        answer = next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)
        if user is None or answer is None:
            return None
        return (f"User: {_text_of(user)[:EXCERPT_CHARS]}\n\n"
                f"Assistant: {_text_of(answer)[:EXCERPT_CHARS]}")

    async def request(self, prompt: str) -> None:
        ports = self.runtime.ports
        answer = await ports.model.complete(system=SYSTEM, prompt=prompt, purpose=PURPOSE,
                                            model=self.model, max_tokens=40)
        title = clean_title(answer)
        if title is not None and ports.storage.title is None:  # a rename meanwhile wins
            ports.storage.set_title(title)


@hookimpl
def zpi_run_end(session: Any, result: Any) -> None:
    if enabled(session.settings, "title") and not result.is_error:
        runtime_for(session).service("title", Titler).after_run(session)
