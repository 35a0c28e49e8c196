"""Undoing a fetched body's ``Content-Encoding`` (gzip, deflate, stacked) in bounded pieces.

httpx inflates each network chunk whole, before the caller sees a byte: a few hundred bytes
sent as ``Content-Encoding: gzip, gzip`` become hundreds of megabytes in one call, long
before ``max_bytes`` can be checked (a decompression bomb). Here every layer gives out at most
:data:`PIECE` bytes at a time and the next piece is made only when the caller asks for it, so
a fetch that stops at its limit holds that limit plus a few pieces, whatever the ratio.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator

from zpi_host.errors import ZpiError

__all__ = ["ACCEPTED", "PIECE", "BodyDecodeError", "BodyDecoder"]

#: the most one layer inflates at a time
PIECE = 64 * 1024
#: the encodings asked for (``Accept-Encoding``) and undone
ACCEPTED = "gzip, deflate"
_GZIP = ("gzip", "x-gzip")


class BodyDecodeError(ZpiError):
    """A body in an encoding that is not undone, or whose compressed data is corrupt."""


class _Inflater:
    """One gzip or deflate layer. ``deflate`` is the zlib format; a raw deflate stream (which
    some servers send instead) is accepted when the zlib header is missing."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._raw_fallback = name == "deflate"
        self._zlib = zlib.decompressobj(zlib.MAX_WBITS | 16 if name in _GZIP else zlib.MAX_WBITS)

    def feed(self, data: bytes) -> Iterator[bytes]:
        """What ``data`` inflates to, in pieces of at most :data:`PIECE` bytes."""
        while True:
            try:
                out = self._zlib.decompress(data, PIECE)
            except zlib.error as exc:
                if self._raw_fallback:
                    self._raw_fallback = False
                    self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
                    continue
                raise BodyDecodeError(f"its {self.name} data is corrupt ({exc})") from None
            self._raw_fallback = False
            if out:
                yield out
            data = self._zlib.unconsumed_tail
            if not data and len(out) < PIECE:  # input used up and no output pending
                return


def _through(layer: _Inflater, pieces: Iterable[bytes]) -> Iterator[bytes]:
    for piece in pieces:
        yield from layer.feed(piece)


class BodyDecoder:
    """The layers a ``Content-Encoding`` header names, undone last-applied first."""

    def __init__(self, content_encoding: str) -> None:
        names = [n.strip().lower() for n in content_encoding.split(",") if n.strip()]
        self.layers: list[_Inflater] = []
        for name in reversed(names):
            if name == "identity":
                continue
            if name not in (*_GZIP, "deflate"):
                raise BodyDecodeError(
                    f"it is encoded as {name!r} (Content-Encoding: {content_encoding}), which "
                    f"web_fetch cannot decode; it asks servers for {ACCEPTED} only")
            self.layers.append(_Inflater(name))

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        """The decoded bytes of one raw chunk, made piece by piece as they are asked for."""
        pieces: Iterable[bytes] = (chunk,)
        for layer in self.layers:
            pieces = _through(layer, pieces)
        return iter(pieces)
