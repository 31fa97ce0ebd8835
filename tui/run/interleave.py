"""Several sessions taking turns one repetition at a time, as one stream.

Drift of the machine (a noisy neighbour, thermal state, page cache) then hits
every variant alike, which is what makes an A/B comparison in one sitting
honest.  Each session keeps its own worker and result file; a token passed
through the sessions' gates decides whose run is next.  Every variant runs once
a round, in an order that changes from round to round (a Williams design: AB
BA AB BA..., ABDC BCAD CDBA DACB for four): with a fixed order the variant that
always runs second gets half a round more of any drift, and the one that always
runs after a heavy variant inherits what it leaves (caches, frequency), which a
paired test on the rounds found as a "change" between two identical variants
(README, measurements).  Over a cycle of rounds every variant runs in every
position, and right after every other variant, equally often.
"""
from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

from hotloop import events as ev
from hotloop.errors import HotloopError
from hotloop.run.session import Session

_DONE = object()


def williams(k: int) -> list[list[int]]:
    """Orders of k variants, one per round, balanced for position and for which variant
    runs just before which (Williams 1949): k rows for even k, 2k for odd."""
    first = [0]
    for i in range(1, k):
        first.append((i + 1) // 2 if i % 2 else k - i // 2)
    rows = [[(x + r) % k for x in first] for r in range(k)]
    return rows if k % 2 == 0 else rows + [row[::-1] for row in rows]


async def interleave(sessions: list[Session]) -> AsyncIterator[ev.Event]:
    """Merged events of `sessions`, run alternately.  A session that fails ends
    alone; bad input (an exception from one) ends them all."""
    if any(s.rp.plan.until_ci is not None for s in sessions):
        # Each variant would stop when its own median is known: the rest would run alone,
        # no longer interleaved, and the paired test would weigh a one-round block like a
        # full one.
        raise HotloopError("until_ci cannot be used with --interleave: the variants would "
                           "stop apart; give --runs instead (a paired test needs every round)")
    batch = {"id": uuid.uuid4().hex[:16], "interleaved": True, "variants": len(sessions)}
    for s in sessions:
        s.gate = asyncio.Queue()
        s.batch = batch
    queue: asyncio.Queue[tuple[Session, object]] = asyncio.Queue()

    async def pump(s: Session) -> None:
        try:
            async for event in s.events():
                await queue.put((s, event))
        except Exception as e:          # noqa: BLE001 - handed to the consumer below
            await queue.put((s, e))
        await queue.put((s, _DONE))

    tasks = [asyncio.create_task(pump(s)) for s in sessions]
    alive = list(sessions)
    rounds = -1
    turns: list[Session] = []           # who is still to run in this round, in order

    def pass_token() -> Session | None:
        """The token to the next session of the round (a new round when it is over)."""
        nonlocal rounds, turns
        turns = [t for t in turns if t in alive]
        if not turns:
            if not alive:
                return None
            rounds += 1
            orders = williams(len(alive))
            turns = [alive[i] for i in orders[rounds % len(orders)]]
        nxt = turns.pop(0)
        assert nxt.gate is not None
        nxt.gate.put_nowait(None)
        return nxt

    holder = pass_token()
    try:
        while alive:
            s, item = await queue.get()
            if isinstance(item, Exception):
                raise item
            if item is _DONE:
                alive.remove(s)
                if s is holder:
                    holder = pass_token()
                continue
            assert isinstance(item, (ev.Started, ev.RunSample, ev.HotSymbols, ev.Warning,
                                     ev.Finished, ev.Failed))
            yield item
            if isinstance(item, ev.RunSample) and s is holder:
                holder = pass_token() or holder
    finally:
        for s in sessions:
            s.stop()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
