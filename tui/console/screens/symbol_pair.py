"""One symbol of a comparison annotated on both sides, side by side (`a` or `enter` on the
compare screen's symbol tab; `escape` returns).

Each side is annotated on its hottest session for the symbol: the session with most samples
of it (of the row's one name, or of all its clones' names), in that session's kept perf data,
under the name that session sampled most (a clone's name differs between builds).  Each pane
runs perf in its own thread, off the event loop; whatever stops a side (no perf data kept, a
kernel symbol without the kernel's code, not sampled there) is that pane's one line.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from hotloop import results
from hotloop.analysis.symbols import base_name
from hotloop.console.screens.annotation import styled
from hotloop.console.widgets.symbol_diff import Row
from hotloop.errors import HotloopError
from hotloop.perf.annotate import Annotation
from hotloop.results import Result
from hotloop.results.annotating import annotate_symbol, perf_files
from hotloop.visible import cut, visible

SIDES = ("baseline", "new")


@dataclass(frozen=True)
class Wanted:
    """The symbol as the comparison's row has it: its base name, or one name of it."""
    symbol: str
    dso: str
    kernel: bool
    name: str = ""                      # one clone's name (a row under a merged symbol)

    def matches(self, symbol: str, dso: str, kernel: bool) -> bool:
        if dso != self.dso or kernel != self.kernel:
            return False
        return symbol == self.name if self.name else base_name(symbol) == base_name(self.symbol)


def hottest(sessions: list[Result], wanted: Wanted) -> tuple[Result, str, int] | None:
    """The session with most samples of the symbol, the name it sampled most, and its
    samples of the symbol; None when no session sampled it."""
    best: tuple[Result, str, int] | None = None
    for r in sessions:
        counts: dict[str, int] = {}
        for s in r.session_symbols.symbols if r.session_symbols else ():
            if wanted.matches(s.symbol, s.dso, s.kernel):
                counts[s.symbol] = counts.get(s.symbol, 0) + s.samples
        total = sum(counts.values())
        if total and (best is None or total > best[2]):
            best = (r, max(counts, key=lambda n: (counts[n], n)), total)
    return best


class SymbolPairScreen(Screen[None]):
    blocks_console = True
    BINDINGS = [Binding("escape", "app.pop_screen", "Back", id="symbol-pair.back"),
                Binding("s", "toggle_sort", "Hottest first", id="symbol-pair.sort")]

    def __init__(self, wanted: Wanted, sides: tuple[tuple[str, ...], tuple[str, ...]],
                 names: tuple[str, str]) -> None:
        super().__init__()
        self.wanted = wanted
        self.sides = sides              # each side's session files
        self.names = names              # each side's name in the comparison
        self.heads = ["", ""]           # each pane's session, once found
        self.results: list[Annotation | None] = [None, None]
        self.messages = ["", ""]        # what stopped a side, if something did
        self.by_share = False

    @classmethod
    def of(cls, row: Row) -> SymbolPairScreen:
        d = row.delta
        assert d is not None            # a heading row asks for nothing
        return cls(Wanted(d.symbol, d.dso, d.kernel, row.name),
                   (row.pair.baseline.files or (row.pair.baseline.file,),
                    row.pair.new.files or (row.pair.new.file,)),
                   (row.pair.baseline.name, row.pair.new.name))

    def compose(self) -> ComposeResult:
        what = self.wanted.name or self.wanted.symbol
        with Vertical():
            yield Static(visible(f"{what}: {cut(self.names[0], 30)} vs {cut(self.names[1], 30)}, "
                                 f"each on its hottest session for it"),
                         id="pair-title", markup=False)
            with Horizontal(id="pair-panes"):
                for side in SIDES:
                    with Vertical(classes="pair-pane", id=f"pane-{side}"):
                        yield Static(f"{side}: finding its session…",
                                     classes="pair-head", markup=False)
                        with VerticalScroll(classes="pair-body"):
                            yield Static("perf annotate…", classes="pair-text", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        # the baseline's pane has the keys: arrows scroll it (wide lines sideways), tab
        # goes to the other
        self.query_one(f"#pane-{SIDES[0]} .pair-body").focus()
        for i in range(2):
            self.load(i)

    @work(thread=True, exit_on_error=False)
    def load(self, i: int) -> None:
        """Side i's hottest session for the symbol, annotated (a thread: perf takes seconds)."""
        head = SIDES[i]
        try:
            sessions = [results.read(Path(f)) for f in self.sides[i]]
            found = hottest(sessions, self.wanted)
            if found is None:
                raise HotloopError(f"{self.wanted.name or self.wanted.symbol}: not sampled "
                                   f"on this side ({len(sessions)} sessions): nothing to "
                                   f"annotate")
            res, name, samples = found
            head = f"{head}: {_session(res.path)}, {samples} samples of {name}"
            self.app.call_from_thread(self._head, i, head)
            got: Annotation | str = annotate_symbol(res, perf_files(res), name)
        except (HotloopError, OSError) as e:
            got = " ".join(str(e).split())
        self.app.call_from_thread(self._loaded, i, got)

    def _head(self, i: int, head: str) -> None:
        self.heads[i] = head
        if self.is_attached:            # escape came while perf ran: nothing to show
            self.query_one(f"#pane-{SIDES[i]} .pair-head", Static).update(visible(head))

    def _loaded(self, i: int, got: Annotation | str) -> None:
        if isinstance(got, str):
            self.messages[i] = got
        else:
            self.results[i] = got
        self._draw(i)

    def _draw(self, i: int) -> None:
        if not self.is_attached:
            return
        shown = self.query_one(f"#pane-{SIDES[i]} .pair-text", Static)
        result = self.results[i]
        # a message wraps at the pane's width; the instructions keep their lines
        shown.set_class(result is None, "-message")
        shown.update(styled(result, self.by_share) if result is not None
                     else Text(visible(self.messages[i])))

    def action_toggle_sort(self) -> None:
        self.by_share = not self.by_share
        for i in range(2):
            if self.results[i] is not None:
                self._draw(i)

    def pane_text(self, i: int) -> str:
        """What pane i shows (its head and its text), for tests and the curious."""
        pane = self.query_one(f"#pane-{SIDES[i]}")
        return "\n".join(str(s.render()) for s in pane.query(Static))


def _session(path: Path) -> str:
    """A session file named with its directory: a series' k1/s01.jsonl."""
    return f"{path.parent.name}/{path.name}" if path.parent.name else path.name
