"""The message codec between the trusted parent and a sandboxed worker. Imported by both sides.

Control messages are length-prefixed JSON objects on a pipe pair. Tensor bytes never travel in a
message: they sit in a shared memory file that the parent creates and passes to the worker, described
by `TensorMeta` (dtype, shape, offset, nbytes).

Everything a worker sends is untrusted: a candidate shares the worker's process. So decoding is
bounded -- a size cap per message, a nesting cap, no oversized numbers, strings or lists -- and every
reply is checked against the schema of the request it answers (`check_reply`), and every build request
against its own (`check_build_request`). Anything else raises `ProtocolError`, which the verifier turns
into a `runtime` verdict: junk from a worker is never an exception in the parent, never code execution
(nothing is unpickled) and never a field read that is not there.
"""
from __future__ import annotations

import json
import math
import os
import select
import struct
import time
from dataclasses import dataclass
from typing import Any

MAX_MESSAGE = 4 * 1024 * 1024  # the largest real message measured: 91 KB (ascend-sim emulator reports)
MAX_DEPTH = 24  # nesting of any decoded message (real messages: 5)
MAX_TEXT = 20_000  # characters of an error or detail text kept
_LEN = struct.Struct(">I")

# dtypes that may cross the boundary, by name; itemsize in bytes
DTYPES: dict[str, int] = {
    "float32": 4,
    "float64": 8,
    "float16": 2,
    "bfloat16": 2,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "bool": 1,
}


class ProtocolError(RuntimeError):
    """The peer sent something that is not a well-formed message."""


class PeerClosed(ProtocolError):
    """The peer closed its end (it exited or crashed)."""


class Timeout(ProtocolError):
    """No complete message arrived before the deadline."""


# --- framing ----------------------------------------------------------------------------------------
def encode(msg: dict[str, Any]) -> bytes:
    data = json.dumps(msg, separators=(",", ":")).encode()
    return _LEN.pack(len(data)) + data


def send(fd: int, msg: dict[str, Any]) -> None:
    view = memoryview(encode(msg))
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _wait_readable(fd: int, deadline: float | None) -> None:
    if deadline is None:
        return
    remaining = deadline - time.monotonic()
    if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
        raise Timeout("no reply before the deadline")


def _read_exact(fd: int, n: int, deadline: float | None = None) -> bytes:
    chunks: list[bytes] = []
    while n:
        _wait_readable(fd, deadline)
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise PeerClosed("peer closed the channel")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def recv(fd: int, deadline: float | None = None, max_message: int = MAX_MESSAGE) -> dict[str, Any]:
    """One message, decoded with the bounds above; ``deadline`` is a time.monotonic() value (None: wait)."""
    (length,) = _LEN.unpack(_read_exact(fd, 4, deadline))
    if length > max_message:
        raise ProtocolError(f"message of {length} bytes exceeds the {max_message}-byte limit")
    return decode(_read_exact(fd, length, deadline), max_message)


def decode(raw: bytes, max_message: int = MAX_MESSAGE) -> dict[str, Any]:
    """A JSON object from untrusted bytes, or ProtocolError (bounded size, depth, numbers and text)."""
    if len(raw) > max_message:
        raise ProtocolError(f"message of {len(raw)} bytes exceeds the {max_message}-byte limit")
    try:
        msg = json.loads(raw, parse_constant=_no_constant)
    except RecursionError:
        raise ProtocolError("malformed message: nested too deeply") from None
    except (UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError, over-long integers, NaN/Infinity
        raise ProtocolError(f"malformed message: {str(exc)[:200]}") from None
    if not isinstance(msg, dict):
        raise ProtocolError("message is not a JSON object")
    _depth_ok(msg)
    return msg


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a valid number in a message")


def _depth_ok(value: Any) -> None:
    """Iterative (never recursive) check that nesting stays within MAX_DEPTH."""
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if d > MAX_DEPTH:
            raise ProtocolError(f"malformed message: nested deeper than {MAX_DEPTH} levels")
        if isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            stack.extend((x, d + 1) for x in v)


# --- schemas ----------------------------------------------------------------------------------------
class _Spec:
    def check(self, value: Any, where: str) -> Any:
        raise NotImplementedError


class Int(_Spec):
    def __init__(self, lo: int = 0, hi: int = 2**62):
        self.lo, self.hi = lo, hi

    def check(self, value: Any, where: str) -> Any:
        if isinstance(value, bool) or not isinstance(value, int) or not self.lo <= value <= self.hi:
            raise ProtocolError(f"{where}: expected an integer in [{self.lo}, {self.hi}], got {_show(value)}")
        return value


class Num(_Spec):
    def check(self, value: Any, where: str) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ProtocolError(f"{where}: expected a finite number, got {_show(value)}")
        return value


class Bool(_Spec):
    def check(self, value: Any, where: str) -> Any:
        if not isinstance(value, bool):
            raise ProtocolError(f"{where}: expected true or false, got {_show(value)}")
        return value


class Str(_Spec):
    def __init__(self, limit: int = 256, truncate: bool = False, choices: frozenset[str] | None = None):
        self.limit, self.truncate, self.choices = limit, truncate, choices

    def check(self, value: Any, where: str) -> Any:
        if not isinstance(value, str):
            raise ProtocolError(f"{where}: expected a string, got {_show(value)}")
        if self.choices is not None and value not in self.choices:
            raise ProtocolError(f"{where}: {_show(value)} is not one of {sorted(self.choices)}")
        if len(value) > self.limit:
            if not self.truncate:
                raise ProtocolError(f"{where}: string of {len(value)} characters (limit {self.limit})")
            return value[: self.limit] + " [...]"
        return value


class List(_Spec):
    def __init__(self, item: _Spec, limit: int):
        self.item, self.limit = item, limit

    def check(self, value: Any, where: str) -> Any:
        if not isinstance(value, list) or len(value) > self.limit:
            raise ProtocolError(f"{where}: expected a list of at most {self.limit} items, got {_show(value)}")
        return [self.item.check(v, f"{where}[{i}]") for i, v in enumerate(value)]


class Map(_Spec):
    """A JSON object with free string keys and values of one kind."""

    def __init__(self, value: _Spec, limit: int):
        self.value, self.limit = value, limit

    def check(self, value: Any, where: str) -> Any:
        if not isinstance(value, dict) or len(value) > self.limit:
            raise ProtocolError(f"{where}: expected an object of at most {self.limit} entries, got {_show(value)}")
        return {Str(256).check(k, f"{where} key"): self.value.check(v, f"{where}[{k!r}]") for k, v in value.items()}


class Obj(_Spec):
    """A JSON object with known fields (``required`` must be present; unknown fields are dropped)."""

    def __init__(self, fields: dict[str, _Spec], required: tuple[str, ...] = ()):
        self.fields, self.required = fields, required

    def check(self, value: Any, where: str) -> Any:
        if not isinstance(value, dict):
            raise ProtocolError(f"{where}: expected an object, got {_show(value)}")
        missing = [k for k in self.required if k not in value]
        if missing:
            raise ProtocolError(f"{where}: missing {', '.join(missing)}")
        return {k: spec.check(value[k], f"{where}.{k}") for k, spec in self.fields.items() if k in value}


class Json(_Spec):
    """Any JSON value (already bounded in size and depth by `decode`): emulator reports, constructor args."""

    def check(self, value: Any, where: str) -> Any:
        return value


def _show(value: Any) -> str:
    text = json.dumps(value)[:60] if not isinstance(value, (dict, list)) else type(value).__name__
    return text


META = Obj({"dtype": Str(16, choices=frozenset(DTYPES)), "shape": List(Int(0, 2**40), 16),
            "offset": Int(0, 2**50), "nbytes": Int(0, 2**50)}, required=("dtype", "shape", "offset", "nbytes"))
_FAILED = {"ok": Bool(), "phase": Str(64, truncate=True), "error": Str(MAX_TEXT, truncate=True),
           "detail": Str(MAX_TEXT, truncate=True), "native_reports": List(Json(), 4096),
           # a failure the parent explains further (trials.py), named rather than matched in the error text
           "reason": Str(64, choices=frozenset({"output_too_large"}))}
_OK_FIELDS = {
    "load": {}, "init": {"init_args": List(Json(), 256)}, "set_inputs": {}, "ping": {}, "compile": {},
    "make_inputs": {"inputs": List(META, 256), "need": Int(0, 2**50)},
    "run": {"outputs": List(META, 256), "native_calls": Int(), "inner_s": Num(), "native_reports": List(Json(), 4096),
            "ops": Map(Int(), 4096), "violations": Map(Int(), 4096), "inputs_after": List(META, 256)},
    "record_ops": {"ops": List(Json(), 100_000)},
    "bandwidth": {"seconds": List(Num(), 64)},
    "truth": {"outputs": List(META, 256), "scale": Num()},
}
_OK_REQUIRED = {"run": ("outputs", "native_calls"), "truth": ("outputs",), "make_inputs": (), "record_ops": ("ops",),
                "bandwidth": ("seconds",), "init": ()}
HELLO = Obj({"op": Str(16, choices=frozenset({"hello"})), "pid": Int(0, 2**31)}, required=("op", "pid"))


def check_reply(op: str, msg: dict[str, Any]) -> dict[str, Any]:
    """A worker's reply to request ``op``, validated (fields typed and bounded; unknown fields dropped)."""
    if op == "hello":
        return HELLO.check(msg, "hello")
    ok = Bool().check(msg.get("ok"), f"reply to {op}: ok")
    if not ok:
        return Obj(_FAILED, required=("ok",)).check(msg, f"reply to {op}")
    fields = _OK_FIELDS.get(op)
    if fields is None:
        raise ProtocolError(f"a reply to an unknown request {op!r}")
    reply = Obj({"ok": Bool(), **fields}, required=("ok", *_OK_REQUIRED.get(op, ()))).check(msg, f"reply to {op}")
    if op == "make_inputs" and "inputs" not in reply and "need" not in reply:
        raise ProtocolError("reply to make_inputs: neither inputs nor need")
    return reply


_ASCEND_TENSOR = Obj({"dtype": Str(16, choices=frozenset(DTYPES)), "dims": List(Int(0, 2**40), 16),
                      "values": List(Int(-2**63, 2**64 - 1), 64)}, required=("dtype", "dims"))
_BUILD_KINDS = {
    "cpp": Obj({"source": Str(MAX_MESSAGE), "flags": List(Str(512), 64)}, required=("source",)),
    "inline": Obj({"spec": Obj({"name": Str(128), "cpp_sources": List(Str(MAX_MESSAGE), 64),
                                "functions": List(Str(256), 512), "extra_cflags": List(Str(512), 64)},
                               required=("name", "cpp_sources", "functions", "extra_cflags"))}, required=("spec",)),
    "ascend": Obj({"source": Str(MAX_MESSAGE), "combo": Int(0, 4096)}, required=("source",)),
    # an Ascend C call's shapes, dtypes and attributes; the parent answers with its tiling (ascend_sim/backend.py)
    "ascend_tiling": Obj({"combo": Int(0, 4096), "inputs": List(_ASCEND_TENSOR, 64), "outputs": List(_ASCEND_TENSOR, 64),
                          "attrs": List(Json(), 64)}, required=("inputs", "outputs", "attrs")),
}


def check_build_request(msg: dict[str, Any]) -> dict[str, Any]:
    """A worker's request for a native build, validated (ProtocolError says what is wrong)."""
    kind = Str(16, choices=frozenset(_BUILD_KINDS)).check(msg.get("kind"), "build request: kind")
    return {"op": "build", "kind": kind, **_BUILD_KINDS[kind].check(msg, f"build request ({kind})")}


@dataclass(frozen=True)
class TensorMeta:
    dtype: str
    shape: tuple[int, ...]
    offset: int
    nbytes: int

    def to_json(self) -> dict[str, Any]:
        return {"dtype": self.dtype, "shape": list(self.shape), "offset": self.offset, "nbytes": self.nbytes}

    @staticmethod
    def from_json(obj: Any, capacity: int) -> "TensorMeta":
        """Validate a tensor description sent by a peer against the shared region's capacity."""
        m = META.check(obj, "tensor description")
        numel = 1
        for d in m["shape"]:
            numel *= d
        if m["nbytes"] != numel * DTYPES[m["dtype"]]:
            raise ProtocolError(f"nbytes {m['nbytes']} does not match shape {m['shape']} of {m['dtype']}")
        if m["offset"] + m["nbytes"] > capacity:
            raise ProtocolError(f"tensor at {m['offset']}+{m['nbytes']} lies outside the {capacity}-byte region")
        return TensorMeta(m["dtype"], tuple(m["shape"]), m["offset"], m["nbytes"])


def align(n: int, a: int = 64) -> int:
    return (n + a - 1) // a * a
