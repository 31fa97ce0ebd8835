"""Several sessions taking turns one repetition at a time, as one stream (or, on separate
machines, running at once: `together`).

Drift of the machine (a noisy neighbour, thermal state, page cache) then hits
every variant alike, which is what makes an A/B comparison in one sitting
honest.  Each session keeps its own worker and result file; a token passed
through the sessions' gates decides whose run is next.  Every variant runs once
a round, in an order that changes from round to round (a Williams design: AB
BA AB BA..., ABDC BCAD CDBA DACB for four): with a fixed order the variant that
always runs second gets half a round more of any drift, and the one that always
runs after a heavy variant inherits what it leaves (caches, frequency), which a
paired test on the rounds found as a "change" between two identical variants
(docs/statistics.md, "On one kernel: interleave").  Over a cycle of rounds every
variant runs in every position, and right after every other variant, equally often.
"""
from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Sequence

from hotloop import events as ev
from hotloop.errors import HotloopError
from hotloop.record import Batch
from hotloop.run.sessionlike import SessionLike

_DONE = object()
_EVENTS = (ev.Started, ev.RunSample, ev.HotSymbols, ev.Warning, ev.PerfStart, ev.Finished,
           ev.Failed)


def williams(k: int) -> list[list[int]]:
    """Orders of k variants, one per round, balanced for position and for which variant
    runs just before which (Williams 1949): k rows for even k, 2k for odd."""
    first = [0]
    for i in range(1, k):
        first.append((i + 1) // 2 if i % 2 else k - i // 2)
    rows = [[(x + r) % k for x in first] for r in range(k)]
    return rows if k % 2 == 0 else rows + [row[::-1] for row in rows]


async def together(sessions: Sequence[SessionLike]) -> AsyncIterator[ev.Event]:
    """Merged events of `sessions` running at once (on separate machines).  Each ends
    alone, bad input too (a host that cannot start): the others run on, and the first
    exception is raised once they are all done."""
    errors: list[Exception] = []
    async with contextlib.aclosing(_merged(sessions, alone=True)) as stream:
        async for _, item in stream:
            if isinstance(item, Exception):
                errors.append(item)
            elif item is not _DONE:
                assert isinstance(item, _EVENTS)
                yield item
    if errors:
        raise errors[0]


async def _merged(sessions: Sequence[SessionLike], alone: bool = False
                  ) -> AsyncGenerator[tuple[SessionLike, object], None]:
    """(session, event) as each comes, (session, _DONE) at each one's end; an exception from
    one raises here (`alone`: it is passed on, and that one ends).  Closed, every session
    is stopped and its task awaited."""
    queue: asyncio.Queue[tuple[SessionLike, object]] = asyncio.Queue()
    tasks = [asyncio.create_task(_pump(s, queue)) for s in sessions]
    left = len(sessions)
    try:
        while left:
            s, item = await queue.get()
            if isinstance(item, Exception) and not alone:
                raise item
            left -= item is _DONE
            yield s, item
    finally:
        for s in sessions:
            s.stop()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _pump(s: SessionLike, queue: asyncio.Queue[tuple[SessionLike, object]]) -> None:
    try:
        async for event in s.events():
            await queue.put((s, event))
    except Exception as e:          # noqa: BLE001 - handed to the consumer
        await queue.put((s, e))
    await queue.put((s, _DONE))


async def interleave(sessions: Sequence[SessionLike]) -> AsyncIterator[ev.Event]:
    """Merged events of `sessions`, run alternately.  A session that fails ends
    alone; bad input (an exception from one) ends them all."""
    if any(s.until_ci is not None for s in sessions):
        # Each variant would stop when its own median is known: the rest would run alone,
        # no longer interleaved, and the paired test would weigh a one-round block like a
        # full one.
        raise HotloopError("until_ci cannot be used with --interleave: the variants would "
                           "stop apart; give --runs instead (a paired test needs every round)")
    batch = Batch(uuid.uuid4().hex[:16], interleaved=True, variants=len(sessions))
    for s in sessions:
        s.gate = asyncio.Queue()
        s.batch = batch
    alive = list(sessions)
    rounds = -1
    turns: list[SessionLike] = []           # who is still to run in this round, in order

    def pass_token() -> SessionLike | None:
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
    async with contextlib.aclosing(_merged(sessions)) as stream:
        async for s, item in stream:
            if item is _DONE:
                alive.remove(s)
                if s is holder:
                    holder = pass_token()
                continue
            assert isinstance(item, _EVENTS)
            yield item
            if isinstance(item, ev.RunSample) and s is holder:
                holder = pass_token() or holder
