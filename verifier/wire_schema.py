"""Typed, bounded checks of decoded JSON values (imported by both sides, pure Python).

A schema is a tree of `Spec` objects; ``spec.check(value, where)`` returns the value as the schema
describes it (objects keep only their known fields, over-long texts may be truncated) or raises
`ProtocolError` naming the place (``where``) and what was wrong. There is no "any JSON" spec: every
field a peer may send has a type, a size bound and a nesting bound, so code that reads a checked value
can index it the way the schema says without meeting a surprise (an AttributeError on a number where
an object was promised, a TypeError on a list where a number was).

The message schemas themselves live with their messages: `message_codec` (requests and replies) and
`backends/ascend_sim/report_schema.py` (the emulator's report).
"""
from __future__ import annotations

import json
import math
from typing import Any


class ProtocolError(RuntimeError):
    """The peer sent something that is not a well-formed message."""


class Spec:
    def check(self, value: Any, where: str) -> Any:
        raise NotImplementedError


class Int(Spec):
    def __init__(self, lo: int = 0, hi: int = 2**62):
        self.lo, self.hi = lo, hi

    def check(self, value: Any, where: str) -> Any:
        if isinstance(value, bool) or not isinstance(value, int) or not self.lo <= value <= self.hi:
            raise ProtocolError(f"{where}: expected an integer in [{self.lo}, {self.hi}], got {show(value)}")
        return value


class Num(Spec):
    """A finite number (integers included), optionally within [lo, hi]."""

    def __init__(self, lo: float = -math.inf, hi: float = math.inf):
        self.lo, self.hi = lo, hi

    def check(self, value: Any, where: str) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or not self.lo <= value <= self.hi:
            raise ProtocolError(f"{where}: expected a finite number in [{self.lo}, {self.hi}], got {show(value)}")
        return value


class Bool(Spec):
    def check(self, value: Any, where: str) -> Any:
        if not isinstance(value, bool):
            raise ProtocolError(f"{where}: expected true or false, got {show(value)}")
        return value


class Str(Spec):
    def __init__(self, limit: int = 256, truncate: bool = False, choices: frozenset[str] | None = None):
        self.limit, self.truncate, self.choices = limit, truncate, choices

    def check(self, value: Any, where: str) -> Any:
        if not isinstance(value, str):
            raise ProtocolError(f"{where}: expected a string, got {show(value)}")
        if self.choices is not None and value not in self.choices:
            raise ProtocolError(f"{where}: {show(value)} is not one of {sorted(self.choices)}")
        if len(value) > self.limit:
            if not self.truncate:
                raise ProtocolError(f"{where}: string of {len(value)} characters (limit {self.limit})")
            return value[: self.limit] + " [...]"
        return value


class Nullable(Spec):
    """``null`` or what ``spec`` accepts."""

    def __init__(self, spec: Spec):
        self.spec = spec

    def check(self, value: Any, where: str) -> Any:
        return None if value is None else self.spec.check(value, where)


class List(Spec):
    def __init__(self, item: Spec, limit: int):
        self.item, self.limit = item, limit

    def check(self, value: Any, where: str) -> Any:
        if not isinstance(value, list) or len(value) > self.limit:
            raise ProtocolError(f"{where}: expected a list of at most {self.limit} items, got {show(value)}")
        return [self.item.check(v, f"{where}[{i}]") for i, v in enumerate(value)]


class Map(Spec):
    """A JSON object with free string keys and values of one kind (``fixed``: a few named keys of another)."""

    def __init__(self, value: Spec, limit: int, key: Spec | None = None, fixed: dict[str, Spec] | None = None):
        self.value, self.limit, self.key, self.fixed = value, limit, key or Str(256), fixed or {}

    def check(self, value: Any, where: str) -> Any:
        if not isinstance(value, dict) or len(value) > self.limit:
            raise ProtocolError(f"{where}: expected an object of at most {self.limit} entries, got {show(value)}")
        return {self.key.check(k, f"{where} key"): self.fixed.get(k, self.value).check(v, f"{where}[{k[:40]!r}]")
                for k, v in value.items()}


class Obj(Spec):
    """A JSON object with known fields (``required`` must be present; unknown fields are dropped)."""

    def __init__(self, fields: dict[str, Spec], required: tuple[str, ...] = ()):
        self.fields, self.required = fields, required
        unknown = set(required) - set(fields)
        if unknown:
            raise ValueError(f"required fields without a spec: {sorted(unknown)}")

    def check(self, value: Any, where: str) -> Any:
        if not isinstance(value, dict):
            raise ProtocolError(f"{where}: expected an object, got {show(value)}")
        missing = [k for k in self.required if k not in value]
        if missing:
            raise ProtocolError(f"{where}: missing {', '.join(missing)}")
        return {k: spec.check(value[k], f"{where}.{k}") for k, spec in self.fields.items() if k in value}

    def extend(self, fields: dict[str, Spec], required: tuple[str, ...] = ()) -> "Obj":
        """This object with more fields (a newer producer's additions)."""
        return Obj({**self.fields, **fields}, self.required + required)


class Value(Spec):
    """A plain value: null, true/false, a bounded integer, a finite number, a bounded string, or a list of
    plain values nested at most ``depth`` levels (constructor arguments, an operator's attributes)."""

    def __init__(self, depth: int = 8, items: int = 4096, text: int = 4096, int_bound: int = 2**63):
        self.depth, self.items, self.text, self.int_bound = depth, items, text, int_bound

    def check(self, value: Any, where: str) -> Any:
        return self._check(value, where, self.depth)

    def _check(self, value: Any, where: str, depth: int) -> Any:
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, int):
            return Int(-self.int_bound, self.int_bound).check(value, where)
        if isinstance(value, float):
            return Num().check(value, where)
        if isinstance(value, str):
            return Str(self.text).check(value, where)
        if isinstance(value, list):
            if depth <= 0:
                raise ProtocolError(f"{where}: lists nested deeper than {self.depth} levels")
            if len(value) > self.items:
                raise ProtocolError(f"{where}: a list of {len(value)} items (limit {self.items})")
            return [self._check(v, f"{where}[{i}]", depth - 1) for i, v in enumerate(value)]
        raise ProtocolError(f"{where}: expected a number, string, bool, null or a list of them, got {show(value)}")


def show(value: Any) -> str:
    """A short description of a value for an error message (never its whole text)."""
    if isinstance(value, (dict, list)):
        return f"{type(value).__name__} of {len(value)}"
    text = json.dumps(value) if not isinstance(value, int) or abs(value) < 10**30 else "a huge integer"
    return text[:60]
