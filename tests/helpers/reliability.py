"""How hard the reliability suite pushes: CI runs a bounded version (a few minutes in all);
``ZPI_RELIABILITY=long`` (``tox -e reliability``) runs the long one whose figures go in
docs/reliability.md."""

from __future__ import annotations

import os

LONG = os.environ.get("ZPI_RELIABILITY", "").lower() == "long"


def scaled(short: int, long: int) -> int:
    """``short`` in the bounded run, ``long`` in the long one (kills, race trials, examples)."""
    return long if LONG else short
