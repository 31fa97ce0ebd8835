"""The compare screen's file list: a file's row as the results index lists it, and the filter
typed above it."""
from __future__ import annotations

from rich.text import Text

from hotloop.results.index import Entry
from hotloop.results.liveness import being_written
from hotloop.visible import cut, visible

PARAMS_WIDTH = 48
FILTER_HINT = "filter: words of the name, label, date, workload or params (enter: the list)"


def row(e: Entry) -> tuple[Text | str, ...]:
    """Its cells after the pick column: file, label, date, runs, partial, workload, params.
    Text, not str: a DataTable reads a str as markup, and a file's strings are anybody's
    ("[/]" as a workload name crashed the console)."""
    runs = "-" if e.runs is None else str(e.runs)
    # a file a run is still writing is not what a crash left
    partial: str | Text = "" if not (e.ok and e.partial) else \
        Text("running", style="cyan") if being_written(e.path) else \
        Text("partial", style="yellow")
    label = Text(e.label, style="dim red") if not e.ok else Text(visible(e.label))
    return (Text(visible(e.name or e.path.name), style="bold"), label, Text(visible(e.date)),
            runs, partial, Text(visible(e.workload)),
            Text(cut(visible(e.params), PARAMS_WIDTH), style="dim"))


def shown(entries: list[Entry], words: str) -> list[Entry]:
    """The entries the filter's words keep (all when it is empty)."""
    return [e for e in entries if e.matches(words)] if words.strip() else list(entries)
