"""An annotated symbol as text or JSON: one result's, or two side by side."""
from __future__ import annotations

import json
from typing import Any

from hotloop.perf.annotate import Annotation, Instruction, align
from hotloop.visible import visible

HOT_MARK = "◀"
HOT_SHARE = 0.5                         # marked: at least half the hottest one's samples


def _hot(a: Annotation) -> int:
    hottest = a.hottest()
    return max(1, round(hottest.samples * HOT_SHARE)) if hottest and hottest.samples else 1


def _title(a: Annotation) -> str:
    return (f"{a.symbol} in {a.dso or '?'}: {a.samples} sample{'' if a.samples == 1 else 's'}"
            f" in {a.files} perf window{'' if a.files == 1 else 's'}"
            + (f" (an even spread of the {a.sampled_from} holding it)" if a.sampled_from
               else "") + (f"; the kernel's code from {a.code}" if a.code else ""))


def text(a: Annotation, by_share: bool = False) -> str:
    """The symbol's instructions in address order (or hottest first, only those sampled),
    the hottest marked, with the source line perf shows before an instruction."""
    hot = _hot(a)
    insns = sorted((i for i in a.instructions if i.samples), key=lambda i: -i.samples) \
        if by_share else a.instructions
    lines = [visible(_title(a)), f"  {'samples':>7}  {'share':>6}  {'address':>8}  instruction"]
    for i in insns:
        if i.source and not by_share:
            lines.append(f"  {'':>7}  {'':>6}  {'':>8}  {visible(i.source)}")
        mark = f"  {HOT_MARK}" if i.samples >= hot else ""
        lines.append(f"  {i.samples or '':>7}  {_pct(a.share(i)) if i.samples else '':>6}  "
                     f"{i.offset:>8x}  {visible(i.text)}{mark}")
    return "\n".join(lines)


def _pct(x: float) -> str:
    return f"{x:.1f}%"


def _insn(a: Annotation, i: Instruction) -> dict[str, Any]:
    return {"offset": i.offset, "text": i.text, "samples": i.samples,
            "share": round(a.share(i), 3), "source": i.source}


def document(a: Annotation) -> dict[str, Any]:
    return {"symbol": a.symbol, "dso": a.dso, "samples": a.samples, "windows": a.files,
            "sampled_from": a.sampled_from, "code": a.code or None,
            "instructions": [_insn(a, i) for i in a.instructions]}


def side_by_side(a: Annotation, b: Annotation, names: tuple[str, str]) -> str:
    """The same symbol of two results: each instruction's share on each side and the
    change in percentage points, aligned (perf.annotate.align)."""
    lines = [f"A {visible(names[0])}: {visible(_title(a))}",
             f"B {visible(names[1])}: {visible(_title(b))}",
             f"  {'A share':>7}  {'B share':>7}  {'change':>7}  {'A addr':>7}  {'B addr':>7}  "
             f"instruction"]
    for x, y in align(a, b):
        sa = a.share(x) if x else None
        sb = b.share(y) if y else None
        change = f"{sb - sa:+.1f}pp" if sa is not None and sb is not None and (sa or sb) else ""
        either = y or x
        what = either.text if either else ""
        lines.append(f"  {_pct(sa) if sa else '':>7}  {_pct(sb) if sb else '':>7}  "
                     f"{change:>7}  {f'{x.offset:x}' if x else '-':>7}  "
                     f"{f'{y.offset:x}' if y else '-':>7}  {visible(what)}")
    return "\n".join(lines)


def pair_document(a: Annotation, b: Annotation) -> dict[str, Any]:
    return {"a": document(a), "b": document(b),
            "aligned": [{"a": x.offset if x else None, "b": y.offset if y else None,
                         "a_share": round(a.share(x), 3) if x else None,
                         "b_share": round(b.share(y), 3) if y else None}
                        for x, y in align(a, b)]}


def dumps(doc: Any) -> str:
    return json.dumps(doc, indent=2)
