"""Connection pools shared by the sessions of one process.

Every session has its own provider, but many sessions on one event loop talking to one
service should not each open (and TLS-handshake) connections of their own: one
``httpx.AsyncClient`` per event loop, origin, timeouts, TLS settings and headers (so no two
credentials share a cookie jar) is lent to every provider that asks, and closed when the last
of them lets go. A streamed answer holds its connection until it ends, so the number of
connections is not capped (a cap would make sessions queue for one); up to
``KEEP_ALIVE`` idle ones are kept for the next requests.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Hashable, Mapping
from typing import Any

__all__ = ["KEEP_ALIVE", "borrow", "give_back", "open_pools", "pool_key"]

#: idle connections a shared client keeps open
KEEP_ALIVE = 100


class _Pool:
    __slots__ = ("client", "users")

    def __init__(self, client: Any) -> None:
        self.client = client
        self.users = 0


_pools: dict[Hashable, _Pool] = {}


def pool_key(url: str, headers: Mapping[str, str], settings: Hashable) -> Hashable | None:
    """Which pool a provider shares: this event loop's, for the URL's origin, with the same
    client ``settings`` and headers (None outside an event loop: nothing to share)."""
    import anyio.lowlevel
    import httpx

    try:
        loop = anyio.lowlevel.current_token()
    except RuntimeError:  # no event loop (anyio's NoEventLoopError, sniffio's before 4.11)
        return None
    origin = httpx.URL(url)
    digest = hashlib.sha256(json.dumps(sorted(headers.items())).encode()).hexdigest()
    return (loop, origin.scheme, origin.host, origin.port,
            settings, digest)


def borrow(key: Hashable, make: Callable[[], Any]) -> Any:
    """The client shared under ``key`` (``make()`` builds it the first time)."""
    pool = _pools.get(key)
    if pool is None or pool.client.is_closed:
        pool = _pools[key] = _Pool(make())
    pool.users += 1
    return pool.client


async def give_back(key: Hashable, client: Any) -> None:
    """One borrower is done with ``client``; the last one closes it."""
    pool = _pools.get(key)
    if pool is None or pool.client is not client:
        await client.aclose()  # not (or no longer) shared: it is this borrower's alone
        return
    pool.users -= 1
    if pool.users <= 0:
        del _pools[key]
        await client.aclose()


def open_pools() -> int:
    """How many shared clients are open (for tests and diagnostics)."""
    return sum(1 for p in _pools.values() if not p.client.is_closed)
