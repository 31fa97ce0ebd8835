"""Several sessions taking turns one repetition at a time, as one stream.

Drift of the machine (a noisy neighbour, thermal state, page cache) then hits
every variant alike, which is what makes an A/B comparison in one sitting
honest.  Each session keeps its own worker and result file; a token passed
through the sessions' gates decides whose run is next.  Every variant runs once
a round, and each round starts one variant later than the one before (AB BA AB
BA..., ABC BCA CAB...): with a fixed order the variant that always runs second
gets half a round more of any drift, which a paired test on the rounds found
as a "change" between two identical variants (README, measurements).
"""
from __future__ import annotations

import asyncio
import uuid
from typing import AsyncIterator

from tui import events as ev
from tui.session import Session

_DONE = object()


async def interleave(sessions: list[Session]) -> AsyncIterator[ev.Event]:
    """Merged events of `sessions`, run alternately.  A session that fails ends
    alone; bad input (an exception from one) ends them all."""
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
            k = rounds % len(alive)
            turns = alive[k:] + alive[:k]
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
