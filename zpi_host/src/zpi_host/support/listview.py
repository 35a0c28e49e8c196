"""ListView: a read-only, copy-free view of a list as long as it was when the view was made.

The history handed to providers and hooks, and a transcript's records, grow while views of them
are held; a view must neither copy (per-turn work would grow with the history) nor show what
was appended after it was made.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import islice
from typing import Any, TypeVar

T = TypeVar("T")


class ListView(Sequence[T]):
    __slots__ = ("_items", "_len")

    #: what the items are, for the IndexError message
    what = "item"

    def __init__(self, items: list[T]) -> None:
        self._items, self._len = items, len(items)

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[T]:
        return islice(self._items, self._len)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return self._items[: self._len][index]
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError(f"{self.what} index out of range")
        return self._items[index]
