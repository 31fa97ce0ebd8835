"""Results that go into a mail, and text that fits the terminal.

`--format mail` of run, compare and show is plain text a reviewer reads in mutt: every line
at most 72 columns, no escape code, the workload and its parameters, the change with its
interval, the symbols that moved, the command that reproduces it, the version.  `show` and
`compare` text fit COLUMNS.  A newline in anything a file holds (a symbol, a header value)
is shown as `\\n` in every format, never a row of its own.
"""
from __future__ import annotations

import csv
import io
import json
import re
import shlex
import time
from pathlib import Path
from typing import Any

import forge
import pytest
from conftest import hotloop

from hotloop import __version__
from hotloop.cli.parser import parser

LABEL = "patched-with-a-rather-long-label-that-names-the-series-v1234"   # 60 characters
SYMBOL = "do_a_very_long_kernel_function_name_" + "x" * 84                 # 120 characters
FORGED = "FORGED 1.0 2.0 +100.00% faster"
EVIL = f"evil\n{FORGED}"
EVIL_SHOWN = "evil\\nFORGED"
TEXT_FORMATS = ("text", "mail", "md", "org")

assert len(LABEL) == 60 and len(SYMBOL) == 120


def mail_lines(out: str) -> list[str]:
    """The mail's lines, each checked: 72 columns at most, no ESC, no control character."""
    lines = out.rstrip("\n").split("\n")
    for line in lines:
        assert len(line) <= 72, f"{len(line)} columns: {line!r}"
        assert not re.search(r"[\x00-\x1f\x7f]", line), repr(line)
    return lines


def no_forged_row(out: str) -> None:
    """Nothing a file held began a line of its own."""
    for line in out.split("\n"):
        assert not line.lstrip(" |#>*").startswith("FORGED"), line


def reproduce(out: str) -> list[str]:
    """The reproduce block's command, its `\\` continuations joined, as words."""
    block = out.split("reproduce", 1)[1].split("\n", 1)[1]
    lines = []
    for line in block.split("\n"):
        lines.append(line.strip())
        if not line.endswith("\\"):
            break
    words = shlex.split(" ".join(ln.removesuffix("\\") for ln in lines))
    assert words[:2] == ["hotloop", "run"]
    parser().parse_args(words[1:])            # the real command line takes it
    return words


# --------------------------------------------------------------------------- forged sides

def sides(tmp_path: Path, label: str = LABEL, symbol: str = SYMBOL, sessions: int = 2,
          names: tuple[str, ...] = ("read_zero", "sym\nFORGED", "vfs_read"),
          base: dict[str, str] | None = None, **header: str) -> tuple[Path, Path]:
    """A stock and a patched side, `sessions` each, the patched 10% slower, hot symbols with
    a cost per op (task-clock), `symbol` the one that moved; `header` the patched side's
    header values, `base` both sides'."""
    out = []
    for side, ns, lab in (("stock", forge.NS_512, "stock"),
                          ("patched", round(forge.NS_512 * 1.1), label)):
        d = tmp_path / side
        for i in range(sessions):
            grow = 1.0 if side == "stock" else 1.6
            head = forge.header(params={"block_size": 512, "count": 20000, "spin": 0},
                                runs=6, label=lab, **(base or {}),
                                **(header if side == "patched" else {}))
            head["plan"]["perf"] = True
            sym = forge.symbols([40.0 * grow, 30.0, 20.0, 10.0],
                                names=[symbol, *names])
            for s in sym["symbols"]:
                s["samples"] = int(s["percent"] * 50)
            sym["samples"] = sum(s["samples"] for s in sym["symbols"])
            forge.zero_null(d / f"s{i + 1:02d}.jsonl", round(ns * forge.OFFSETS[i]),
                            head=head, more=[sym],
                            counters={"task-clock": 40.0 * (ns / forge.NS_512)})
        out.append(d)
    return out[0], out[1]


def test_compare_mail_of_forged_sides_with_a_long_label_and_symbol(tmp_path, cli):
    stock, patched = sides(tmp_path)
    p = cli("compare", str(stock), str(patched), "--format", "mail")
    assert p.returncode == 0, p.stderr
    lines = mail_lines(p.stdout)
    text = p.stdout
    assert "zero_null" in text and "block_size=512" in text and "count=20000" in text
    assert re.search(r"[-+]\d+\.\d+%", text) and "95% CI [" in text
    assert "perf-profile" in text and "do_a_very_long_kernel_function_name_" in text
    assert any(ln.endswith("…") for ln in lines)         # the 120-character symbol, cut
    assert "patched-with-a" in text                      # the 60-character label, cut or not
    assert __version__ in text
    words = reproduce(text)
    assert words[2] == "zero_null" and "--sessions" in words and "block_size=512" in words


def test_show_mail_of_a_forged_session(tmp_path, cli):
    _, patched = sides(tmp_path, sessions=1)
    p = cli("show", str(patched / "s01.jsonl"), "--format", "mail")
    assert p.returncode == 0, p.stderr
    mail_lines(p.stdout)
    assert "histogram of bytes/s" in p.stdout and "#" in p.stdout
    assert "do_a_very_long_kernel_function_name_" in p.stdout
    assert reproduce(p.stdout)[2] == "zero_null" and __version__ in p.stdout
    d = cli("show", str(patched), "--format", "mail")
    assert d.returncode == 0, d.stderr
    mail_lines(d.stdout)
    assert "cost per op" in d.stdout and reproduce(d.stdout)[2] == "zero_null"


# --------------------------------------------------------------------------- newlines

HEADER_VALUES = {"host": f"h{EVIL}", "compiler": f"cc{EVIL}", "cpu_model": f"cpu{EVIL}",
                 "kernel_release": f"6.1{EVIL}"}


@pytest.mark.parametrize("fmt", ["text", "mail", "md", "org", "csv", "json"])
def test_a_newline_in_a_symbol_or_a_header_value_forges_no_row_in_compare(tmp_path, cli, fmt):
    stock, patched = sides(tmp_path, label=f"lab{EVIL}", symbol=f"sym{EVIL}", **HEADER_VALUES)
    svg = tmp_path / "c.svg"
    p = cli("compare", str(stock), str(patched), "--format", fmt, "--svg", str(svg))
    assert p.returncode == 0, p.stderr
    no_forged_row(p.stdout)
    no_forged_row(p.stderr)
    assert "\x1b" not in p.stdout
    if fmt == "json":
        doc = json.loads(p.stdout)
        names = [s["symbol"] for d in doc["symbol_diffs"] for s in d["symbols"]]
        assert f"sym{EVIL}" in names and doc["results"][0]["label"] == f"lab{EVIL}"
    elif fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(p.stdout)))
        assert any(r["metric"] == f"symbol sym{EVIL_SHOWN} 1.0 2.0 +100.00% faster"
                   for r in rows)
    else:
        assert EVIL_SHOWN in p.stdout
    if fmt == "text":                   # the warning that quotes the header values
        assert "cpu_model Forged CPU -> cpuevil\\nFORGED" in " ".join(p.stdout.split())
    picture = svg.read_text()
    assert "FORGED" in picture              # drawn, escaped: one text line holds it
    no_forged_row(re.sub(r"<[^>]+>", "\n", picture).replace("&#160;", " "))


@pytest.mark.parametrize("fmt", ["text", "mail", "csv", "json"])
def test_a_newline_in_a_symbol_or_a_header_value_forges_no_row_in_show(tmp_path, cli, fmt):
    _, patched = sides(tmp_path, label=f"lab{EVIL}", symbol=f"sym{EVIL}", sessions=1,
                       **HEADER_VALUES)
    f = patched / "s01.jsonl"
    for what in (f, patched):           # show FILE, show DIR
        if what == patched and fmt == "csv":
            continue
        svg = tmp_path / f"{what.name}.svg"
        p = cli("show", str(what), "--format", fmt, "--svg", str(svg))
        assert p.returncode == 0, p.stderr
        no_forged_row(p.stdout)
        assert "\x1b" not in p.stdout
        if fmt in ("text", "mail"):
            assert EVIL_SHOWN in p.stdout
        if fmt == "json":
            json.loads(p.stdout)
        no_forged_row(re.sub(r"<[^>]+>", "\n", svg.read_text()).replace("&#160;", " "))


# --------------------------------------------------------------------------- the terminal

@pytest.mark.parametrize("columns", [80, 120])
def test_columns_bound_every_line_of_show_and_compare_text(tmp_path, cli, monkeypatch,
                                                          columns):
    monkeypatch.setenv("COLUMNS", str(columns))
    stock, patched = sides(tmp_path, label=LABEL, symbol=SYMBOL)
    outs = [cli("compare", str(stock), str(patched)),
            cli("compare", str(stock / "s01.jsonl"), str(patched / "s01.jsonl")),
            cli("show", str(patched / "s01.jsonl")),
            cli("show", str(patched / "s01.jsonl"), "--runs"),
            cli("show", str(patched))]
    for p in outs:
        assert p.returncode == 0, p.stderr
        for line in p.stdout.split("\n"):
            assert len(line) <= columns, f"{len(line)}: {line!r}"
    # the verdict stays where columns go: a called change says so
    assert "slower" in outs[0].stdout
    wide = outs[0].stdout
    monkeypatch.setenv("COLUMNS", "300")
    assert max(map(len, cli("compare", str(stock), str(patched)).stdout.split("\n"))) > \
        max(map(len, wide.split("\n")))


def test_org_and_md_keep_no_line_longer_than_their_tables(tmp_path, cli):
    stock, patched = sides(tmp_path, label="patched", symbol="foo")
    for fmt, is_row in (("org", lambda ln: ln.startswith("|")),
                        ("md", lambda ln: ln.startswith("|"))):
        out = cli("compare", str(stock), str(patched), "--format", fmt).stdout
        widest = max(len(ln) for ln in out.split("\n") if is_row(ln))
        for line in out.split("\n"):
            assert len(line) <= widest, f"{fmt}: {len(line)} > {widest}: {line!r}"


def test_the_shared_histogram_tells_the_sides_apart_without_colour(tmp_path, cli):
    stock, patched = sides(tmp_path, label="patched", symbol="foo")
    out = cli("compare", str(stock), str(patched)).stdout
    hist = out.split("distribution of", 1)[1].split("\n\n", 1)[0]
    assert "█ stock" in hist and "░ patched" in hist          # the legend
    assert "██" in hist and "░░" in hist                       # the bars, one mark a side


# --------------------------------------------------------------------------- real runs

def test_run_and_show_mail_of_a_real_run(tmp_path):
    out = tmp_path / "r.jsonl"
    p = hotloop("run", "zero_null", "--runs", "5", "--out", str(out), "--format", "mail")
    assert p.returncode == 0, p.stderr
    mail_lines(p.stdout)
    assert "zero_null" in p.stdout and "block_size=" in p.stdout
    assert "histogram of bytes/s" in p.stdout and __version__ in p.stdout
    words = reproduce(p.stdout)
    assert words[2] == "zero_null" and words[words.index("--runs") + 1] == "5"
    shown = hotloop("show", str(out), "--format", "mail")
    assert shown.returncode == 0 and shown.stdout == p.stdout


def test_run_and_compare_mail_of_a_real_series(tmp_path):
    p = hotloop("run", "zero_null", "--runs", "5", "--param", "block_size=512,4096",
                "--param", "count=200000", "--sessions", "2", "--format", "mail")
    assert p.returncode == 0, p.stderr
    lines = mail_lines(p.stdout)
    text = p.stdout
    assert "block_size=512,4096" in text and "count=200000" in text
    assert lines.count("bytes/s:") == 1 and "95% CI [" in text
    assert re.search(r"\+\d+\.\d+%", text)              # 4096-byte blocks: more bytes/s
    assert __version__ in text
    words = reproduce(text)
    assert "--sessions" in words and "block_size=512,4096" in words
    series = next((tmp_path / "results").iterdir())
    c = hotloop("compare", str(series / "block_size=512"), str(series / "block_size=4096"),
                "--format", "mail")
    assert c.returncode == 0, c.stderr
    mail_lines(c.stdout)
    if "perf-profile" in c.stdout:      # perf ran: the symbols that moved, under it
        assert re.search(r"^  \[[k.]\] \S+", c.stdout, re.M)
    assert reproduce(c.stdout)[2] == "zero_null"


def test_two_runs_of_the_page_pool_plan_give_one_table_a_row_a_mode(tmp_path):
    for side in ("before", "after"):
        p = hotloop("run", "page-pool", "--runs", "3", "--no-perf", "--param", "loops=20000")
        assert p.returncode == 0, p.stderr
        (tmp_path / side).mkdir()
        for f in (tmp_path / "results").glob("*.jsonl"):
            f.rename(tmp_path / side / f.name)
    for fmt in ("org", "mail", "text", "md"):
        c = hotloop("compare", "before/", "after/", "--format", fmt)
        assert c.returncode == 0, c.stderr
        rows = [ln for ln in c.stdout.split("\n")
                if re.match(r"^[| ]*(fast_path|ptr_ring|slow)\b", ln)]
        assert [re.search(r"fast_path|ptr_ring|slow", r).group() for r in rows] == \
            ["fast_path", "ptr_ring", "slow"], c.stdout
        assert "before" in c.stdout and "after" in c.stdout
        assert "ns/op" in c.stdout and "cycles/op" in c.stdout
        if fmt == "org":
            assert "diff" in c.stdout and "change" in c.stdout
            assert len({len(ln) for ln in c.stdout.split("\n") if ln.startswith("|")}) == 1
        if fmt == "mail":
            mail_lines(c.stdout)
    j = json.loads(hotloop("compare", "before/", "after/", "--format", "json").stdout)
    assert [v["variant"] for v in j["variants"]] == ["mode=fast_path", "mode=ptr_ring",
                                                     "mode=slow"]
    assert j["units"] == ["ns/op", "cycles/op"]


# --------------------------------------------------------------------------- the console

def test_the_compare_screen_saves_and_copies_the_mail_text(isolated, tmp_path):
    import asyncio

    from test_app import SIZE
    from test_app_compare import compared, open_compare, pick, results_dir, status

    from hotloop.console.app import HotloopApp
    stock, patched = sides(tmp_path / "made", label="patched", symbol=SYMBOL, sessions=1)
    a, b = tmp_path / "stock.jsonl", tmp_path / "patched.jsonl"
    a.write_bytes((stock / "s01.jsonl").read_bytes())
    b.write_bytes((patched / "s01.jsonl").read_bytes())
    out = results_dir(isolated, [a, b])

    async def go() -> None:
        app = HotloopApp(results_dir=out)
        copied: list[str] = []
        app.copy_to_clipboard = copied.append       # the terminal's clipboard: no terminal
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_compare(pilot, app, 2)
            await pilot.press("m")                  # nothing compared yet: said so
            assert "compare first" in status(screen) and screen.mailed is None
            await pick(pilot, screen, "stock.jsonl")
            await pick(pilot, screen, "patched.jsonl")
            await compared(pilot, screen)
            await pilot.press("m")
            await pilot.pause()
            assert screen.mailed is not None and screen.mailed.parent == out
            text = screen.mailed.read_text()
            assert copied == [text]
            mail_lines(text)
            assert "hotloop compare: zero_null" in text and "95% CI [" in text
            assert reproduce(text)[2] == "zero_null"
            assert "mail text" in status(screen)
            # again, and with links planted where the next names would be: a file of its
            # own each time, none written through a link
            first = screen.mailed
            victim = tmp_path / "victim"
            victim.write_text("mine")
            for n in range(2, 6):
                for when in (first.name.split(".")[0], time.strftime("compare-%Y%m%d-%H%M%S")):
                    link = out / f"{when}-{n}.mail.txt"
                    if not link.exists():
                        link.symlink_to(victim)
            await pilot.press("m")
            await pilot.pause()
            assert screen.mailed != first and first.read_text() == text
            assert not screen.mailed.is_symlink() and screen.mailed.read_text() == text
            assert victim.read_text() == "mine"
    asyncio.run(go())


# --------------------------------------------------------------------------- the manual

DOC_MACHINE = {"cpu_model": "AMD EPYC 7B12 64-Core Processor", "host": "lab1",
               "kernel_release": "6.18.0-rc4"}


def doc_sides(tmp_path: Path) -> tuple[Path, Path]:
    """The sides of docs/usage.md's mail example: two sessions each of zero_null, the
    patched 10% slower, its __arch_clear_user costlier."""
    return sides(tmp_path, label="patched", symbol="__arch_clear_user", sessions=3,
                 names=("iov_iter_zero", "vfs_read", "ksys_read"), base=DOC_MACHINE)


def test_the_manuals_mail_example_is_what_compare_prints(tmp_path, cli):
    from test_readme import DOCS, block
    doc_sides(tmp_path)
    p = cli("compare", "stock/", "patched/", "--format", "mail")
    assert p.returncode == 0, p.stderr
    shown = block("text", "## Results for a mail", DOCS / "usage.md")
    assert shown == p.stdout, p.stdout
    assert "hotloop compare stock/ patched/ --format mail" in \
        (DOCS / "usage.md").read_text().split("## Results for a mail", 1)[1]


def two_kernel_batch(tmp_path: Path) -> list[Any]:
    """Forged files as `run page-pool --kernel stock --kernel patched` writes them: the
    variant names the mode and the kernel; patched 30% slower in each mode."""
    from hotloop import results
    done = []
    for kernel, slower in (("stock", 1.0), ("patched", 1.3)):
        for mode, ns in (("fast_path", 5_400_000), ("ptr_ring", 15_000_000)):
            head = forge.header(params={"mode": mode, "count": 20000},
                                variant=f"mode={mode} kernel={kernel}")
            head["kernel"]["name"] = kernel
            done.append(results.read(forge.zero_null(tmp_path / f"{kernel}-{mode}.jsonl",
                                                     round(ns * slower), head=head)))
    return done


def test_a_batch_of_a_plans_variants_on_two_kernels_reports_a_row_a_variant(tmp_path):
    """`run page-pool --kernel stock --kernel patched`'s report: each mode before and after
    (forged files as that batch writes them: the variant names the mode and the kernel)."""
    from hotloop.render import mail
    done = two_kernel_batch(tmp_path)
    text = mail.run_mail(done, batch=True)
    lines = mail_lines(text)
    assert [ln.split()[0] for ln in lines if ln.startswith(("  fast_path", "  ptr_ring"))] \
        == ["fast_path", "ptr_ring"]
    assert "before" in text and "after" in text and "-23.1" in text    # 1/1.3 - 1
    words = reproduce(text)
    assert words.count("--kernel") == 2 and "mode=fast_path,ptr_ring" in " ".join(words)


def test_the_reproduce_line_quotes_what_a_header_holds(tmp_path):
    """A param value with a space, a `;` or a newline is one shell word, shown escaped, and
    a long command wraps with `\\` within 72 columns."""
    from hotloop import results
    from hotloop.render import mail
    head = forge.header(params={"block_size": 512, "tag": "a b;rm -rf x\nnext", "count": 1},
                        runs=6)
    head["cpu"]["name"] = "split"
    head["kernel"]["name"] = "patched-" + "k" * 50
    r = results.read(forge.zero_null(tmp_path / "q.jsonl", forge.NS_512, head=head))
    lines = mail.reproduce([[r]], 70)
    assert all(len(ln) <= 70 for ln in lines) and len(lines) > 1
    assert all(ln.endswith(" \\") for ln in lines[:-1])
    words = shlex.split(" ".join(ln.removesuffix("\\") for ln in lines))
    assert "tag=a b;rm -rf x\\nnext" in words
    assert words[words.index("--cpu") + 1] == "split"
    assert words[words.index("--kernel") + 1] == "patched-" + "k" * 50


def test_the_variants_table_keeps_its_verdict_and_every_warning(tmp_path):
    """At 80 columns the units after the primary give way before the verdict does, and the
    comparisons' warnings (each named by its variant) reach the text and the json."""
    from hotloop.analysis import matched
    from hotloop.render.compare_formats import variants
    done = two_kernel_batch(tmp_path)
    m = matched.split_by_kernel(done)
    assert m is not None
    text = variants.render_text(m, 80)
    rows = [ln for ln in text.splitlines() if ln.lstrip().startswith(("fast_path", "ptr_ring"))]
    assert len(rows) == 2 and all(len(ln) <= 80 and "…" not in ln for ln in rows), text
    words = [variants.verdicts.word(c.pairs[0].metrics[0], short=True) for c in m.comparisons]
    assert all(ln.rstrip().endswith(w) for ln, w in zip(rows, words)), (rows, words)
    said = [w for c in m.comparisons for w in c.warnings]
    assert said, "the forged pairs warn of nothing: the test shows nothing"
    doc = variants.document(m)
    assert len(doc["warnings"]) >= len(said)
    assert any(w["text"].startswith(("mode=fast_path", "fast_path")) and w["variant"]
               for w in doc["warnings"]), doc
    assert "note:" in text


def test_an_aa_s_reproduce_line_says_aa(tmp_path):
    """An A/A's two sides (a1, a2; or one variant's, "block_size=512 a1") are reproduced by
    --aa, not by a run of one variant; two variants that only end alike are not one."""
    from hotloop import results
    from hotloop.render import mail

    def side(name: str) -> list:
        head = forge.header(params={"block_size": 512, "count": 1}, runs=6, variant=name)
        return [results.read(forge.zero_null(tmp_path / f"{name}.jsonl", forge.NS_512,
                                             head=head))]
    for a, b, aa in (("a1", "a2", True), ("block_size=512 a1", "block_size=512 a2", True),
                     ("x a1", "y a2", False), ("a1", "a3", False)):
        words = " ".join(mail.reproduce([side(a), side(b)], 200)).split()
        assert ("--aa" in words) == aa, (a, b, words)
