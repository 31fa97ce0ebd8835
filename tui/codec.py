"""The one codec of typed lines: a dataclass as a JSON object and back, derived from its type
hints, for the result file's lines (hotloop.events, the header and summary of hotloop.record)
and the worker's (hotloop.run.protocol).

`to_json` writes every field of a dataclass (nested ones as objects, tuples as lists, an enum
as its value); `from_json` reads one back, every field checked against its annotation (a
string, an integer that is not a bool, a finite number, one of a Literal's values, an object
of..., a list of...) and its field's metadata, so the definition is the only statement of the
format and a field added to a class is written and read with no table to keep:

- `{"min": N}`, `{"max": N}`: bounds of a number (every integer lies within -2**64..2**64-1);
- `{"cut": N}`: a string read is cut to N characters (TEXT_MAX unless said; "…" last), a
  forged 30 MB label would otherwise be printed, drawn and diffed in full;
- `{"check": f}`: f(value) says why a value cannot be, or None (a measurement's range);
- `{"finite": False}`: a number may be NaN or infinite (a worker's extras, which the session
  checks itself to fail the run naming the one);

each applied to the field's value, or to every item of a list and every value of an object.
A field missing from a line reads as its default (an older file's); one with no default is
refused ("missing 'ns'").  A key no field names is refused with `unknown="refuse"` (the worker's
lines) and ignored with `unknown="ignore"` (an event line of a newer writer); a class may say
its own (`unknown_keys`: the header refuses, in every line that holds it), and how a line of an
older format reads (`from_older(obj) -> obj`, called on the object before its fields are read).

Tagged unions (`Tagged`): each class names its line by a `tag` ClassVar, written as "type".
"""
from __future__ import annotations

import dataclasses
import enum
import functools
import math
import types
import typing
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, Generic, Literal, Protocol, TypeVar

from hotloop.checks import show

T = TypeVar("T")
TEXT_MAX = 4096
NAME_MAX = 200                      # a dict's key, as read: what a table shows by a name
_INT_LO, _INT_HI = -2**64, 2**64 - 1
Unknown = Literal["refuse", "ignore"]
Decoder = Callable[[Any], Any]


class Whole(ValueError):
    """A refusal that stands as it is, not under the path of the field it was found in
    (a newer format: `record.NewerFormat`)."""


def cut(text: str, most: int = TEXT_MAX) -> str:
    return text if len(text) <= most else text[:most - 1] + "…"


def cut_all(v: Any) -> Any:
    """Every string in a value of no declared shape (a param, an expect table), cut."""
    if isinstance(v, str):
        return cut(v)
    if isinstance(v, dict):
        return {cut(str(k), NAME_MAX): cut_all(x) for k, x in v.items()}
    if isinstance(v, list):
        return [cut_all(x) for x in v]
    return v


# --------------------------------------------------------------------------- writing

def to_json(obj: Any) -> Any:
    """A value as JSON values: dataclasses as objects, tuples as lists, enums as values."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _encoder(type(obj))(obj)
    if isinstance(obj, dict):
        return {str(k): to_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_json(v) for v in obj]
    if isinstance(obj, enum.Enum):
        return obj.value
    return obj


def object_json(obj: Any) -> dict[str, Any]:
    """A dataclass as a JSON object, field by field."""
    out: dict[str, Any] = _encoder(type(obj))(obj)
    return out


def _plain(tp: Any) -> bool:
    """Whether a value of `tp` is its own JSON (no copy needed)."""
    if tp in (int, float, str, bool, type(None)):
        return True
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Literal:
        return True
    if origin in (typing.Union, types.UnionType):
        return all(_plain(a) for a in args)
    return False


_ENCODERS: dict[type, Callable[[Any], dict[str, Any]]] = {}
_DECODERS: dict[tuple[type, str, bool], Decoder] = {}


def _encoder(cls: type) -> Callable[[Any], dict[str, Any]]:
    """The function that writes a `cls` (made once a class)."""
    enc = _ENCODERS.get(cls)
    if enc is None:
        enc = _ENCODERS[cls] = _make_encoder(cls)
    return enc


def _make_encoder(cls: type) -> Callable[[Any], dict[str, Any]]:
    types_ = hints(cls)
    names = tuple(f.name for f in dataclasses.fields(cls))
    plain = tuple(_plain(types_[n]) for n in names)
    if all(plain):
        return lambda obj: {n: getattr(obj, n) for n in names}
    pairs = tuple(zip(names, plain))
    return lambda obj: {n: getattr(obj, n) if p else to_json(getattr(obj, n)) for n, p in pairs}


# --------------------------------------------------------------------------- reading

def from_json(cls: type[T], obj: Any, *, unknown: Unknown = "ignore") -> T:
    """`cls` from a parsed JSON object, every field checked; ValueError naming the field's
    path ("workload: unit: expected a string, got 5", "plan: unknown key 'runz'")."""
    value = decoder(cls, unknown)(obj)
    assert isinstance(value, cls)
    return value


@functools.cache
def hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _at(where: str, e: ValueError) -> ValueError:
    return e if isinstance(e, Whole) else ValueError(f"{where}: {e}")


class Missing(ValueError):
    """A field with no default missing from its object."""

    def __init__(self, name: str) -> None:
        super().__init__(f"missing {name!r}")
        self.name = name


def decoder(cls: type, unknown: Unknown = "refuse", tagged: bool = False) -> Decoder:
    """The function that reads a `cls` from a parsed JSON object (made once a class);
    `tagged`: the object's "type" key names its class and is no field."""
    read = _DECODERS.get((cls, unknown, tagged))
    if read is None:
        read = _DECODERS[(cls, unknown, tagged)] = _make_decoder(cls, unknown, tagged)
    return read


_ABSENT = object()


def _make_decoder(cls: type, unknown: Unknown, tagged: bool) -> Decoder:
    unknown = getattr(cls, "unknown_keys", unknown)
    types_ = hints(cls)
    fields = tuple((f.name, field_decoder(types_[f.name], f.metadata, unknown),
                    f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
                   for f in dataclasses.fields(cls))
    names = frozenset(n for n, _, _ in fields) | ({"type"} if tagged else set())
    older = getattr(cls, "from_older", None)
    refuse = unknown == "refuse"

    def decode(v: Any) -> Any:
        if type(v) is not dict:
            raise ValueError(f"expected an object, got {show(v)}")
        if older is not None:
            v = older(v)
        if refuse and not names.issuperset(v):
            raise ValueError(f"unknown key {show(next(k for k in v if k not in names))}")
        out = {}
        for name, read, must in fields:
            x = v.get(name, _ABSENT)
            if x is not _ABSENT:
                try:
                    out[name] = read(x)
                except ValueError as e:
                    raise _at(name, e) from None
            elif must:
                raise Missing(name)
        return cls(**out)
    return decode


def field_decoder(tp: Any, meta: typing.Mapping[str, Any], unknown: Unknown) -> Decoder:
    """A field's decoder: its type's, the metadata's bounds and check on its scalars."""
    return _typed(tp, _Leaf(meta.get("min"), meta.get("max"), meta.get("cut", TEXT_MAX),
                            meta.get("check"), meta.get("finite", True)), unknown)


@dataclasses.dataclass(frozen=True)
class _Leaf:
    lo: Any
    hi: Any
    most: int
    check: Callable[[Any], str | None] | None
    finite: bool = True


def _bounded(read: Decoder, leaf: _Leaf) -> Decoder:
    lo, hi, check = leaf.lo, leaf.hi, leaf.check
    if lo is None and hi is None and check is None:
        return read

    def bounded(v: Any) -> Any:
        x = read(v)
        if lo is not None and x < lo:
            raise ValueError(f"{show(v)} is below {lo}")
        if hi is not None and x > hi:
            raise ValueError(f"{show(v)} is above {hi}")
        if check is not None:
            bad = check(x)
            if bad:
                raise ValueError(bad)
        return x
    return bounded


def _typed(tp: Any, leaf: _Leaf, unknown: Unknown) -> Decoder:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return cut_all
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            one = _typed(inner[0], leaf, unknown)
            if len(args) == 1:
                return one
            return lambda v: None if v is None else one(v)
        return _union(tp, [_typed(a, leaf, unknown) for a in args])
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return decoder(tp, unknown)
    if origin is dict:
        return _dict(_typed(args[1], leaf, unknown))
    if origin in (list, tuple):
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            raise TypeError(f"no JSON form for {tp!r} (a tuple[X, ...] has one)")
        return _list(_typed(args[0], leaf, unknown), origin is tuple)
    if origin is Literal:
        return _bounded(_literal(args), leaf)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _bounded(_enum(tp), leaf)
    if tp is bool:
        return _bounded(_bool, leaf)
    if tp is int:
        return _int_in(_INT_LO if leaf.lo is None else leaf.lo,
                       _INT_HI if leaf.hi is None else leaf.hi, leaf.check)
    if tp is float:
        return _bounded(_float if leaf.finite else _number, leaf)
    if tp is str:
        return _bounded(_str(leaf.most), _Leaf(None, None, leaf.most, leaf.check))
    if tp is type(None):
        return _none
    raise TypeError(f"no JSON form for {tp!r}")     # a definition the codec lacks


def _union(tp: Any, reads: list[Decoder]) -> Decoder:
    def union(v: Any) -> Any:
        for read in reads:
            try:
                return read(v)
            except ValueError:
                continue
        raise ValueError(f"expected {_noun(tp)}, got {show(v)}")
    return union


def _noun(tp: Any) -> str:
    names = {int: "an integer", float: "a number", str: "a string", bool: "true or false",
             type(None): "null"}
    return " or ".join(names.get(a, str(a)) for a in typing.get_args(tp))


def _dict(read: Decoder) -> Decoder:
    def mapping(v: Any) -> Any:
        if type(v) is not dict:
            raise ValueError(f"expected an object, got {show(v)}")
        out = {}
        for k, x in v.items():
            try:
                out[k if len(k) <= NAME_MAX else cut(k, NAME_MAX)] = read(x)
            except ValueError as e:
                raise _at(cut(k, 40), e) from None
        return out
    return mapping


def _list(read: Decoder, as_tuple: bool) -> Decoder:
    def sequence(v: Any) -> Any:
        if type(v) is not list:
            raise ValueError(f"expected a list, got {show(v)}")
        items = []
        for i, x in enumerate(v):
            try:
                items.append(read(x))
            except ValueError as e:
                raise _at(f"item {i}", e) from None
        return tuple(items) if as_tuple else items
    return sequence


def _literal(allowed: Iterable[Any]) -> Decoder:
    values = tuple(allowed)

    def literal(v: Any) -> Any:
        for a in values:
            if type(v) is type(a) and v == a:
                return a
        raise ValueError(f"{show(v)} is not one of {', '.join(map(show, values))}")
    return literal


def _enum(cls: type[enum.Enum]) -> Decoder:
    def member(v: Any) -> Any:
        try:
            return cls(v)
        except ValueError:
            raise ValueError(f"{show(v)} is not one of "
                             f"{', '.join(show(m.value) for m in cls)}") from None
    return member


def _bool(v: Any) -> bool:
    if v is True or v is False:
        return v
    raise ValueError(f"expected true or false, got {show(v)}")


def _int_in(lo: int, hi: int, check: Callable[[Any], str | None] | None) -> Decoder:
    def integer(v: Any) -> int:
        if type(v) is not int:
            raise ValueError(f"expected an integer, got {show(v)}")
        if v < lo:
            raise ValueError(f"{show(v)} is below {lo}")
        if v > hi:
            raise ValueError(f"{show(v)} is above {hi}")
        if check is not None:
            bad = check(v)
            if bad:
                raise ValueError(bad)
        return v
    return integer


def _float(v: Any) -> float:
    t = type(v)
    if t is float:
        if math.isfinite(v):
            return float(v) + 0.0   # -0.0 reads as 0.0: a sign on nothing is noise
    elif t is int:
        try:
            return float(v)
        except OverflowError:       # an integer beyond any float
            pass
    else:
        raise ValueError(f"expected a number, got {show(v)}")
    raise ValueError(f"{show(v)} is not a finite number")


def _number(v: Any) -> float:
    if type(v) is float:
        return v
    if type(v) is int:
        try:
            return float(v)
        except OverflowError:
            return math.copysign(math.inf, v)
    raise ValueError(f"expected a number, got {show(v)}")


def _str(most: int) -> Decoder:
    def text(v: Any) -> str:
        if type(v) is str:
            return v if len(v) <= most else cut(v, most)
        raise ValueError(f"expected a string, got {show(v)}")
    return text


def _none(v: Any) -> None:
    if v is None:
        return None
    raise ValueError(f"expected null, got {show(v)}")


# --------------------------------------------------------------------------- tagged lines

class Tagline(Protocol):
    tag: ClassVar[str]


L = TypeVar("L", bound=Tagline)


class Tagged(Generic[L]):
    """Lines of several classes told apart by their "type" key: each class's `tag`."""

    def __init__(self, classes: Iterable[type[L]], unknown: Unknown) -> None:
        self.by_tag: dict[str, type[L]] = {}
        for cls in classes:
            tag = getattr(cls, "tag", None)
            if not isinstance(tag, str) or tag in self.by_tag:
                raise TypeError(f"{cls.__name__}: no tag of its own")
            self.by_tag[tag] = cls
        self.unknown = unknown

    def to_json(self, obj: L) -> dict[str, Any]:
        return {"type": obj.tag, **object_json(obj)}

    def from_json(self, obj: Any) -> L:
        """ValueError: "unknown type 'runs'", "run line without 'ns'", "run line: ops: ..."."""
        if type(obj) is not dict:
            raise ValueError(f"expected an object, got {show(obj)}")
        kind = obj.get("type")
        cls = self.by_tag.get(kind) if isinstance(kind, str) else None
        if cls is None or not isinstance(kind, str):
            raise ValueError(f"unknown type {show(kind)}" if "type" in obj else "no \"type\"")
        try:
            value: L = decoder(cls, self.unknown, tagged=True)(obj)
        except Missing as e:
            raise ValueError(f"{kind} line without {e.name!r}") from None
        except Whole:
            raise
        except ValueError as e:
            raise ValueError(f"{kind} line: {e}") from None
        return value

