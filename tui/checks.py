"""Checks of untrusted values (a result file, a TOML profile): each returns why a value is not
what it should be, in words a one-line error can quote, or None.  Leaf checks say what their
domain calls things (TOML's "array" and "table", JSON's "list" and "object"); the combinators
here are shared.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

Check = Callable[[Any], "str | None"]


def show(value: Any) -> str:
    """A value as an error message quotes it: short, one line."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def optional(check: Check) -> Check:
    return lambda v: None if v is None else check(v)


def list_of(item: Check, noun: str = "a list", describe: Callable[[Any], str] = show) -> Check:
    def check(v: Any) -> str | None:
        if not isinstance(v, list):
            return f"expected {noun}, got {describe(v)}"
        for i, x in enumerate(v):
            bad = item(x)
            if bad:
                return f"item {i}: {bad}"
        return None
    return check


def map_of(value: Check) -> Check:
    """An object whose every value passes `value`."""
    def check(v: Any) -> str | None:
        if not isinstance(v, dict):
            return f"expected an object, got {show(v)}"
        for k, x in v.items():
            bad = value(x)
            if bad:                     # a key as an error quotes it: short (a forged one may
                return f"{k if len(str(k)) <= 40 else str(k)[:37] + '...'}: {bad}"   # be huge)
        return None
    return check


def fields(spec: dict[str, Check], required: tuple[str, ...] = ()) -> Check:
    """An object whose listed keys (when present) hold what `spec` says; others are free."""
    def check(v: Any) -> str | None:
        if not isinstance(v, dict):
            return f"expected an object, got {show(v)}"
        for k in required:
            if k not in v:
                return f"missing {k!r}"
        for k, x in v.items():
            if k in spec:
                bad = spec[k](x)
                if bad:
                    return f"{k}: {bad}"
        return None
    return check
