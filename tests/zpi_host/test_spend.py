"""The spend ledger: no request starts once the budget is spent, and requests in flight are
bounded by what the budget can pay for (each estimated at the largest cost seen)."""

from __future__ import annotations

import anyio
import pytest

from zpi_host.agent.spend import BudgetExhaustedError, SpendLedger

pytestmark = pytest.mark.anyio


class Tree:
    """A session tree's running total, as the ledger reads it."""

    def __init__(self) -> None:
        self.total = 0.0

    def ledger(self) -> SpendLedger:
        return SpendLedger(lambda: self.total)


async def spend(ledger: SpendLedger, tree: Tree, amount: float) -> None:
    async with ledger.request() as reservation:
        tree.total += amount
        reservation.add(amount)


async def test_no_request_starts_once_the_budget_is_spent():
    tree = Tree()
    tree.total = 7.0  # spent before this query: not counted
    ledger = tree.ledger()
    ledger.start(1.0)
    await spend(ledger, tree, 0.6)
    await spend(ledger, tree, 0.6)  # spent 0.6 < 1.0: may start, and overruns
    with pytest.raises(BudgetExhaustedError, match=r"budget of \$1 is spent \(\$1\.2"):
        await spend(ledger, tree, 0.6)
    assert ledger.exhausted and ledger.started == 2
    assert ledger.spent() == pytest.approx(1.2)
    ledger.start(None)  # the next query has no limit
    await spend(ledger, tree, 5.0)
    assert not ledger.exhausted


async def test_requests_in_flight_are_bounded_by_the_budget_left():
    tree = Tree()
    ledger = tree.ledger()
    ledger.start(1.0)
    await spend(ledger, tree, 0.3)  # the largest request so far: $0.30
    inside: list[int] = []
    go = anyio.Event()
    refused: list[int] = []

    async def request(n: int) -> None:
        try:
            async with ledger.request() as reservation:
                inside.append(n)
                await go.wait()
                tree.total += 0.3
                reservation.add(0.3)
        except BudgetExhaustedError:
            refused.append(n)

    async with anyio.create_task_group() as group:
        for n in range(10):
            group.start_soon(request, n)
        await anyio.wait_all_tasks_blocked()
        # 0.3 spent + k in flight x 0.3 < 1.0 admits k = 0, 1, 2; the others wait
        assert len(inside) == 3 and ledger.in_flight == 3
        go.set()
    # the three ended at 1.2 spent: every waiting request is refused, none started late
    assert len(inside) == 3 and len(refused) == 7
    assert ledger.started == 4 and ledger.spent() == pytest.approx(1.2)


async def test_before_any_cost_is_known_one_request_at_a_time():
    tree = Tree()
    ledger = tree.ledger()
    ledger.start(1.0)
    inside: list[int] = []
    go = anyio.Event()

    async def request(n: int) -> None:
        async with ledger.request() as reservation:
            inside.append(n)
            await go.wait()
            reservation.add(0.0)

    async with anyio.create_task_group() as group:
        for n in range(3):
            group.start_soon(request, n)
        await anyio.wait_all_tasks_blocked()
        assert len(inside) == 1
        go.set()
    assert len(inside) == 3  # a request of no cost: the rest may run together
