"""SHA-256 of small inputs (paths, signatures, fingerprints) without loading OpenSSL.

``import hashlib`` loads the OpenSSL binding (``_hashlib`` and libcrypto), which cost a few
milliseconds of every ``zpi-host --list-plugins`` that only hashed a folder path. CPython also
ships its own SHA-256 (``_sha2`` from 3.12, ``_sha256`` before; what ``hashlib`` itself falls
back to without OpenSSL): the same digests, loaded in a fraction of that time. Use
:func:`sha256` for short text; keep ``hashlib`` for file contents, where OpenSSL's faster
compression pays for its loading.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any

__all__ = ["sha256"]

_constructor: Callable[..., Any] | None = None


def _find_constructor() -> Callable[..., Any]:
    for name in ("_sha2", "_sha256"):
        try:
            return import_module(name).sha256  # type: ignore[no-any-return]
        except (ImportError, AttributeError):
            continue
    import hashlib  # a Python built without its own SHA-256: the OpenSSL one

    return hashlib.sha256


def sha256(data: bytes = b"") -> Any:
    """A SHA-256 hash object (``update``, ``digest``, ``hexdigest``) fed with ``data``;
    the same digests as ``hashlib.sha256``."""
    global _constructor
    if _constructor is None:
        _constructor = _find_constructor()
    return _constructor(data)
