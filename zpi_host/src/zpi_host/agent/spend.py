"""One spend ledger per session tree: the budget check before every model request.

A session, its sub-agents and the side requests of its tools (``ports.model``) share one
:class:`SpendLedger`. Every model request is sent inside :meth:`SpendLedger.request`, which
checks and reserves before the request starts:

- when the spend since :meth:`SpendLedger.start` has reached the limit, no request starts:
  :class:`BudgetExhaustedError`;
- when the spend plus the requests in flight (each estimated at the largest cost one request
  of this tree has had; before the first has ended, one request at a time) reaches the limit,
  the request waits until one in flight ends, then checks again.

So when the budget runs out, the overrun is bounded by the requests in flight at that moment,
each at most one request's cost, and never by the number of calls in one answer
(docs/reliability.md, "Budgets").
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio

from ..errors import ZpiError

__all__ = ["BudgetExhaustedError", "Reservation", "SpendLedger"]


class BudgetExhaustedError(ZpiError):
    """The spend limit is reached: no further model request is sent."""


class Reservation:
    """One request in flight; the code that records its usage adds the cost here."""

    __slots__ = ("cost",)

    def __init__(self) -> None:
        self.cost = 0.0

    def add(self, amount: float) -> None:
        self.cost += amount


class SpendLedger:
    """The spend of one session tree against an optional limit; see the module docstring.
    ``total`` reads the tree's running total in US dollars (the root session's)."""

    def __init__(self, total: Callable[[], float]) -> None:
        self._total = total
        self.limit: float | None = None
        #: a request was refused because the limit was reached (since :meth:`start`)
        self.exhausted = False
        self.in_flight = 0
        #: model requests started since :meth:`start`
        self.started = 0
        self._baseline = 0.0
        self._largest: float | None = None
        self._ended: anyio.Event | None = None

    def start(self, limit: float | None) -> None:
        """Count from now against ``limit`` US dollars (None: no limit), e.g. for one query."""
        self.limit = limit
        self._baseline = self._total()
        self.exhausted = False
        self.started = 0

    def spent(self) -> float:
        """US dollars spent since :meth:`start`."""
        return self._total() - self._baseline

    @asynccontextmanager
    async def request(self) -> AsyncIterator[Reservation]:
        """Hold one model request: raises BudgetExhaustedError before it starts when the
        limit is reached; waits while the requests in flight may reach it."""
        if self.limit is not None:
            await self._admit(self.limit)
        reservation = Reservation()
        self.in_flight += 1
        self.started += 1
        try:
            yield reservation
        finally:
            self.in_flight -= 1
            if self._largest is None or reservation.cost > self._largest:
                self._largest = reservation.cost
            ended, self._ended = self._ended, None
            if ended is not None:
                ended.set()

    async def _admit(self, limit: float) -> None:
        while True:
            spent = self.spent()
            if spent >= limit:
                self.exhausted = True
                raise BudgetExhaustedError(
                    f"the budget of ${limit:g} is spent (${spent:.6f} so far, including "
                    "sub-agents and side requests); no further model request is sent "
                    "(raise max_budget_usd to go on)")
            if self.in_flight == 0 or (self._largest is not None and
                                       spent + self.in_flight * self._largest < limit):
                return
            if self._ended is None:
                self._ended = anyio.Event()
            await self._ended.wait()
