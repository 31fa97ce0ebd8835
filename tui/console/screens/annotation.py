"""One hot symbol's instructions (`a`, or `enter` on the hot-symbols panel; `escape` returns).

perf runs in a thread, off the event loop, on the run's kept perf data: the latest window
while the run goes on (at idle priority, off the workload's CPUs), the whole run once it
has ended.  Whatever stops it (a kernel symbol without the kernel's code, perf data that
is not here) is the panel's one line.
"""
from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from hotloop.errors import HotloopError
from hotloop.events import HotSymbol
from hotloop.perf.annotate import Annotation, annotate, perf_data_files
from hotloop.render import annotation
from hotloop.visible import visible


class AnnotationScreen(Screen[None]):
    blocks_console = True           # the console's run/stop/compare keys rest meanwhile
    BINDINGS = [Binding("escape", "app.pop_screen", "Back", id="annotate.back"),
                Binding("s", "toggle_sort", "Hottest first", id="annotate.sort")]
    DEFAULT_CSS = """
    AnnotationScreen #annotate-title { height: auto; padding: 0 1; background: $panel;
                                       text-style: bold; }
    AnnotationScreen #annotate-body { height: 1fr; padding: 0 1; }
    AnnotationScreen #annotate-text { width: auto; }
    AnnotationScreen #annotate-text.-message { width: 1fr; }
    """

    def __init__(self, hot: HotSymbol, perf_dir: Path | None, whole_run: bool,
                 build_ids: dict[str, str] | None = None, background: set[int] | None = None,
                 unavailable: str = "", binaries: dict[str, str] | None = None,
                 pids: tuple[int, ...] = (), comms: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.hot, self.symbol = hot, hot.symbol
        self.perf_dir, self.whole_run = perf_dir, whole_run
        self.build_ids = build_ids      # the whole run's, recorded with its hot symbols
        # its workers': their copy of the binaries, their samples (and their children's)
        self.binaries, self.pids, self.comms = binaries, pids, comms
        self.background = background    # the running workload's CPUs: perf keeps off them
        self.unavailable = unavailable  # why there is nothing to annotate here, if so
        self.result: Annotation | None = None
        self.by_share = False

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(visible(f"{self.symbol} · "
                                 + ("the whole run" if self.whole_run else "the latest window")),
                         id="annotate-title", markup=False)
            with VerticalScroll(id="annotate-body"):
                yield Static("perf annotate…", id="annotate-text", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        if self.unavailable:
            self._show(self.unavailable)
        else:
            self.load()

    def _show(self, text: str | Text) -> None:
        if not self.is_attached:        # escape came while perf annotate ran
            return
        shown = self.query_one("#annotate-text", Static)
        # a message wraps at the screen's width; the instructions keep their lines (wide
        # ones scroll sideways)
        shown.set_class(isinstance(text, str), "-message")
        shown.update(text)

    @work(thread=True, exclusive=True, group="annotate", exit_on_error=False)
    def load(self) -> None:
        files = perf_data_files(self.perf_dir) if self.perf_dir is not None \
            and self.perf_dir.is_dir() else []
        if not self.whole_run:
            files = files[-1:]          # the newest finished window
        try:
            if not files:
                raise HotloopError("no perf data here yet: the first window comes within "
                                   "about a second of the first run")
            result = annotate(files, self.symbol, dso=self.hot.dso, kernel=self.hot.kernel,
                              build_ids=self.build_ids, binaries=self.binaries,
                              pids=self.pids, comms=self.comms,
                              background=self.background)
        except (HotloopError, OSError) as e:   # the panel's one line, never "perf…" for good
            self.app.call_from_thread(self._show, visible(str(e)))
            return
        self.app.call_from_thread(self._loaded, result)

    def _loaded(self, result: Annotation) -> None:
        self.result = result
        self._draw()

    def _draw(self) -> None:
        if self.result is not None:
            self._show(styled(self.result, self.by_share))

    def action_toggle_sort(self) -> None:
        self.by_share = not self.by_share
        self._draw()


def styled(result: Annotation, by_share: bool = False) -> Text:
    """The annotation's text, its title and header bold, its hottest instructions reversed
    (marked ◀ too: it reads without colours)."""
    text = Text()
    for i, line in enumerate(annotation.text(result, by_share=by_share).splitlines()):
        style = "bold" if i < 2 else ("bold reverse" if line.endswith(annotation.HOT_MARK)
                                      else "")
        text.append(line + "\n", style=style)
    return text
