"""Several sessions taking turns one repetition at a time (ABAB...), as one stream.

Drift of the machine (a noisy neighbour, thermal state, page cache) then hits
every variant alike, which is what makes an A/B comparison in one sitting
honest.  Each session keeps its own worker and result file; a token passed
round-robin through the sessions' gates decides whose run is next.
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
    holder = alive[0]

    def pass_token(after: Session) -> Session | None:
        if not alive:
            return None
        i = (alive.index(after) + 1) % len(alive) if after in alive else 0
        nxt = alive[i]
        assert nxt.gate is not None
        nxt.gate.put_nowait(None)
        return nxt

    assert holder.gate is not None
    holder.gate.put_nowait(None)
    try:
        while alive:
            s, item = await queue.get()
            if isinstance(item, Exception):
                raise item
            if item is _DONE:
                nxt_index = alive.index(s)
                alive.remove(s)
                if s is holder and alive:
                    holder = alive[nxt_index % len(alive)]
                    assert holder.gate is not None
                    holder.gate.put_nowait(None)
                continue
            assert isinstance(item, (ev.Started, ev.RunSample, ev.HotSymbols, ev.Warning,
                                     ev.Finished, ev.Failed))
            yield item
            if isinstance(item, ev.RunSample) and s is holder:
                holder = pass_token(s) or holder
    finally:
        for s in sessions:
            s.stop()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
