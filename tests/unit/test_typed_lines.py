"""The one codec of typed lines (hotloop.codec): every field of every event, every worker line
and the header (with what it nests) is written and read back, found by introspection, so a
field added later is covered with no edit here; lines as hotloop wrote them before the codec
was one (tests/unit/data/*-0324fdc.jsonl, made by that commit's own code) read, and write
again byte for byte; and what an unknown key does, by kind of line."""
from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import pytest

from hotloop import codec, record
from hotloop import events as ev
from hotloop.results.reader import decode_line
from hotloop.results.writer import encode_line
from hotloop.run import protocol

DATA = Path(__file__).parent / "data"
MODULES = (ev, protocol, record)


def dataclasses_of(module: types.ModuleType) -> list[type]:
    return [c for _, c in inspect.getmembers(module, inspect.isclass)
            if dataclasses.is_dataclass(c) and c.__module__ == module.__name__]


# Candidate values of each scalar type, the first a field accepts (its bounds, its check)
# and that differs from its default is taken: a string with what JSON escapes, and one a
# build id can be.
CANDIDATES: dict[Any, tuple[Any, ...]] = {
    str: ('a "quoted" é\nline\x1b', "c0ffee", "b"), int: (7, 1, 2**40), float: (2.5, 1e-3),
    bool: (True, False),
}


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def value_for(tp: Any, meta: typing.Mapping[str, Any], default: Any = dataclasses.MISSING,
              seed: int = 0) -> Any:
    """A value of type `tp` its field accepts and that is not `default`."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return value_for(inner[seed % len(inner)], meta, default, seed)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return build(tp)
    if origin is dict:
        return {f"key{seed}": value_for(args[1], meta, seed=seed)}
    if origin is list:
        return [value_for(args[0], meta, seed=seed), value_for(args[0], meta, seed=seed + 1)]
    if origin is tuple:
        return (value_for(args[0], meta, seed=seed), value_for(args[0], meta, seed=seed + 1))
    if tp is Any:
        return {"nested": [1, "two", 3.5, None, True]}
    if origin is Literal:
        candidates: tuple[Any, ...] = args
    elif isinstance(tp, type) and issubclass(tp, enum.Enum):
        candidates = tuple(tp)
    else:
        candidates = CANDIDATES[tp]
    read = codec.field_decoder(tp, meta, "refuse")
    for c in candidates[seed % 2:] + candidates:
        try:
            ok = read(codec.to_json(c)) == c
        except ValueError:
            continue
        if ok and c != default:
            return c
    raise AssertionError(f"no value of {tp} for metadata {dict(meta)}")


def build(cls: type) -> Any:
    """`cls` with every field set to a value that is not its default."""
    hints = codec.hints(cls)
    return cls(**{f.name: value_for(hints[f.name], f.metadata, _default(f), i)
                  for i, f in enumerate(dataclasses.fields(cls))})


def test_every_module_holds_its_classes_and_every_line_class_is_tagged():
    assert {c.__name__ for c in dataclasses_of(ev)} >= {"Started", "RunSample", "HotSymbols",
                                                          "Warning", "PerfStart", "Finished",
                                                          "Failed", "HotSymbol"}
    tagged = {c for c in dataclasses_of(ev) if "tag" in vars(c)}
    assert tagged == set(ev.LINES.by_tag.values()) == set(typing.get_args(ev.Event))
    worker = {c for c in dataclasses_of(protocol) if "tag" in vars(c)}
    assert worker == set(protocol.LINES.by_tag.values()) == set(typing.get_args(protocol.Line))
    assert record.Header in dataclasses_of(record)


@pytest.mark.parametrize("cls", sorted({c for m in MODULES for c in dataclasses_of(m)},
                                       key=lambda c: (c.__module__, c.__name__)),
                         ids=lambda c: f"{c.__module__.removeprefix('hotloop.')}.{c.__name__}")
def test_every_field_of_every_class_round_trips(cls):
    value = build(cls)
    for f in dataclasses.fields(cls):           # each a value its default is not
        assert getattr(value, f.name) != _default(f), f.name
    names = [f.name for f in dataclasses.fields(cls)]
    if cls in ev.LINES.by_tag.values():
        line = encode_line(value)
        assert decode_line(line) == value
        assert list(json.loads(line)) == ["type", *names] and json.loads(line)["type"] == cls.tag
    elif cls in protocol.LINES.by_tag.values():
        line = protocol.encode(value)
        assert protocol.decode(line) == value
        assert list(json.loads(line)) == ["type", *names]
    elif cls is protocol.WorkerSpec:
        assert protocol.WorkerSpec.from_line(value.line().decode()) == value
        assert list(json.loads(value.line())) == names
    else:
        text = json.dumps(codec.to_json(value))
        assert codec.from_json(cls, json.loads(text)) == value
        assert list(json.loads(text)) == names       # every field, in its order


def test_no_table_of_classes_or_their_fields_is_kept_beside_them():
    # what the events' and the protocol's hand-kept tables were: {class: {field: check}},
    # {type name: class}, {class: type name}, {annotation text: type}
    for module in MODULES:
        for name, value in vars(module).items():
            if isinstance(value, dict) and not name.startswith("__"):
                held = [*value, *value.values()]
                assert not any(isinstance(x, (type, dict)) for x in held), \
                    f"{module.__name__}.{name}"


def test_a_field_added_later_is_written_and_read_with_no_table_to_edit():
    @dataclass(frozen=True)
    class Later(ev.RunSample):
        tag: ClassVar[str] = "run_later"
        noted: tuple[str, ...] = field(default=(), metadata={"cut": 5})
        seen: dict[str, float | None] = field(default_factory=dict)

    lines = codec.Tagged((Later,), unknown="refuse")
    value = build(Later)
    assert lines.from_json(json.loads(json.dumps(lines.to_json(value)))) == value
    # its metadata holds too: a string cut to 5
    line = {**lines.to_json(value), "noted": ["abcdefgh"]}
    assert lines.from_json(line).noted == ("abcd…",)


def test_a_class_the_codec_has_no_form_for_is_refused_when_its_reader_is_made():
    @dataclass(frozen=True)
    class Pair:
        both: tuple[int, str]

    with pytest.raises(TypeError, match="no JSON form"):
        codec.decoder(Pair)


def _lines(name: str) -> list[str]:
    return (DATA / name).read_text().splitlines(keepends=True)


@pytest.mark.parametrize("line", _lines("events-0324fdc.jsonl"),
                         ids=lambda s: json.loads(s)["type"])
def test_an_event_line_written_before_the_one_codec_reads_and_writes_the_same_bytes(line):
    """Byte for byte, but for the keys format 5 added (the series' design in the header's
    batch), which come at their defaults and are the only keys added."""
    event = decode_line(line)
    again = encode_line(event)
    assert decode_line(again) == event
    new = json.loads(again)
    batch = new.get("header", {}).get("batch")
    if isinstance(batch, dict):                 # format 5's, at their defaults: nothing else
        assert {k: batch.pop(k) for k in FORMAT_5_BATCH} == {
            "sides": [], "differs": [], "sessions": None, "position": None}
    assert json.dumps(new) == json.dumps(json.loads(line))         # every key, in order
    if not isinstance(batch, dict):
        assert again == line


FORMAT_5_BATCH = ("sides", "differs", "sessions", "position")   # the series' design


def test_the_old_lines_hold_every_event_and_their_values():
    events = [decode_line(s) for s in _lines("events-0324fdc.jsonl")]
    assert {type(e) for e in events} == set(ev.LINES.by_tag.values())
    started = events[0]
    assert isinstance(started, ev.Started)
    assert started.header.format == 4 and started.header.cpu.cpus == (7, 8)
    assert started.header.vm is not None and started.header.vm.cpus == 7
    symbols = next(e for e in events if isinstance(e, ev.HotSymbols))
    assert symbols.scope == "session" and symbols.pids == (4242, 4243)
    finished = next(e for e in events if isinstance(e, ev.Finished))
    assert finished.summary.stop is not None and finished.counters == {"counters.key": 1.5}


def test_worker_lines_written_before_the_one_codec_read_and_write_the_same_bytes():
    spec, *lines = _lines("worker-0324fdc.jsonl")
    assert protocol.WorkerSpec.from_line(spec).line().decode() == spec
    for line in lines:
        assert protocol.encode(protocol.decode(line)) == line


def test_an_unknown_key_is_left_in_an_event_line_and_refused_in_a_header_and_a_worker_line():
    run = json.loads(encode_line(build(ev.RunSample)))
    assert decode_line(json.dumps({**run, "later": 1})) == decode_line(json.dumps(run))
    header = json.loads(encode_line(ev.Started(record.Header())))
    header["header"]["plan"]["later"] = 1
    with pytest.raises(ValueError, match="started line: header: plan: unknown key 'later'"):
        decode_line(json.dumps(header))
    with pytest.raises(ValueError, match="run line: unknown key 'later'"):
        protocol.decode(json.dumps({**json.loads(protocol.encode(build(protocol.Run))),
                                    "later": 1}))
    spec = json.loads(build(protocol.WorkerSpec).line())
    with pytest.raises(ValueError, match="unknown key 'later'"):
        protocol.WorkerSpec.from_line(json.dumps({**spec, "later": 1}))
