"""The table of variant texts that `run --param` and the console's vs field accept and refuse
alike (tests/unit/test_variants.py runs it through both; tests/e2e/test_variant_texts.py a
few through the real console)."""
from __future__ import annotations

SYNTAX = "expected KEY=VALUE, or KEY=V1,V2 for several (a workload param, or cpu)"
TWICE = ("the batch names the same variant twice: {} (an A/A, one variant against itself, "
         "is --aa)")
KNOWN = "(known: block_size, count, spin; or cpu)"
CPUS = "(known: default, fifo, same-core, split)"
BASELINE = ("vs {}: the form's own settings (the baseline), and no variant beside them; give "
            "another value")


def params(text: str) -> list[str]:
    """The text as `run`'s --param items."""
    return [a for item in text.split() for a in ("--param", item)]


# A text; what `run zero_null --param ITEM ...` makes of it; what the console's vs field makes
# of it with the form at zero_null's defaults (block_size 512, cpu default).  A list: the
# variants' names; a string: the one-line refusal, "{at}" the entry's word for the item
# (--param, vs).  Only the baseline differs: the console's field is against the form.
CASES = [
    # the case: the form's own value listed is the form, as the command line runs it
    ("block_size=512,4096", ["block_size=512", "block_size=4096"],
     ["block_size=512", "block_size=4096"]),
    ("block_size=4096", [""], ["block_size=512", "block_size=4096"]),
    # the form stays the first side (the comparison's baseline); the command line's first is
    ("block_size=4096,512", ["block_size=4096", "block_size=512"],
     ["block_size=512", "block_size=4096"]),
    ("block_size=0x1000,512", ["block_size=4096", "block_size=512"],
     ["block_size=512", "block_size=4096"]),
    ("cpu=split", [""], ["cpu=default", "cpu=split"]),
    ("cpu=default,split", ["cpu=default", "cpu=split"], ["cpu=default", "cpu=split"]),
    ("cpu=split block_size=1024,4096", ["block_size=1024", "block_size=4096"],
     ["cpu=default block_size=512", "cpu=split block_size=1024", "cpu=split block_size=4096"]),
    ("count=5 spin=0,10", ["spin=0", "spin=10"],
     ["count=1048576 spin=0", "count=5 spin=0", "count=5 spin=10"]),
    # the form alone: nothing to compare it with (the command line runs the one variant)
    ("block_size=512", [""], BASELINE.format("block_size=512")),
    ("block_size=0x200 cpu=default", [""], BASELINE.format("block_size=0x200 cpu=default")),
    # refused by both, in the same words
    ("block_size=512,512", TWICE.format("block_size=512"), TWICE.format("block_size=512")),
    ("block_size=0x200,512,4096", TWICE.format("block_size=512"),
     TWICE.format("block_size=512")),
    ("cpu=split,split", TWICE.format("cpu=split"), TWICE.format("cpu=split")),
    ("blok_size=4096", "{at} blok_size=4096: workload zero_null has no param 'blok_size'; did "
                       f"you mean block_size? {KNOWN}", None),
    ("colour=red", f"{{at}} colour=red: workload zero_null has no param 'colour' {KNOWN}", None),
    ("cpus=split", "{at} cpus=split: workload zero_null has no param 'cpus'; did you mean "
                   f"cpu? {KNOWN}", None),
    ("block_size=abc", "{at} block_size=abc: expected an integer, got 'abc'", None),
    ("block_size=512,0", "{at} block_size=512,0: 0 is below the minimum 1", None),
    ("cpu=splt", f"{{at}} cpu=splt: unknown CPU profile 'splt'; did you mean split? {CPUS}",
     None),
    ("kernel=busy-poll", "{at} kernel=busy-poll: kernels are compared with --kernel A "
                         "--kernel B (in the console, the vs kernel field), not as a K=V "
                         "variant", None),
    ("block_size", f"{{at}} block_size: {SYNTAX}", None),
    ("block_size=", f"{{at}} block_size=: {SYNTAX}", None),
    ("=4096", f"{{at}} =4096: {SYNTAX}", None),
    ("block_size=512,,4096", f"{{at}} block_size=512,,4096: {SYNTAX}", None),
    ("block_size=512 block_size=4096", "{at} block_size=4096: block_size twice (V1,V2 gives "
                                       "it several values)", None),
    ("block_size=512,4096 cpu=nope", f"{{at}} cpu=nope: unknown CPU profile 'nope' {CPUS}",
     None),
]
REFUSED_BY_BOTH = [(text, cli) for text, cli, vs in CASES
                   if isinstance(cli, str) and (vs is None or vs == cli)]
