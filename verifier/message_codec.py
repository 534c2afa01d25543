"""The message codec between the trusted parent and a sandboxed worker. Imported by both sides.

Control messages are length-prefixed JSON objects on one AF_UNIX stream socket per worker (a socketpair
the parent creates; the worker's end is its *control socket*). Tensor bytes never travel in a message:
they sit in a shared memory file that the parent creates and passes to the worker, described by
`TensorMeta` (dtype, shape, offset, nbytes).

Everything a worker sends is untrusted: a candidate shares the worker's process. So decoding is
bounded -- a size cap per message, a nesting cap, no oversized numbers, strings or lists -- and every
reply is checked against the schema of the request it answers (`check_reply`; primitives in
wire_schema.py, the emulator report's schema in backends/ascend_sim/report_schema.py), and every build
request against its own (`check_build_request`). Anything else raises `ProtocolError`, which the verifier
turns into a `runtime` verdict: junk from a worker is never an exception in the parent, never code
execution (nothing is unpickled) and never a field read that is not there.

Who wrote a frame: a worker sends only with ``sendmsg`` on its control socket (`WorkerChannel`); the
candidate worker's seccomp filter refuses every other way of writing to that socket (write, writev,
sendto, splice, copying the descriptor, asynchronous I/O), so bytes written through the C stdio layer or
any other file API never become a frame. Each frame echoes the nonce of the request it answers
(`check_nonce`; otherwise `ForgedFrame`), and the parent checks that nothing is waiting on the socket
before each request (a second frame after a reply is forged too).
"""
from __future__ import annotations

import json
import os
import select
import socket
import struct
import time
from dataclasses import dataclass
from typing import Any

from evokernel.verifier.backends.ascend_sim.report_schema import REPORTS
from evokernel.verifier.wire_schema import Bool, Int, List, Map, Num, Obj, ProtocolError, Spec, Str, Value

__all__ = ["ProtocolError", "PeerClosed", "Timeout", "ForgedFrame", "TensorMeta", "WorkerChannel", "check_reply",
           "check_build_request", "check_nonce", "decode", "encode", "send", "recv", "align"]

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


class PeerClosed(ProtocolError):
    """The peer closed its end (it exited or crashed)."""


class Timeout(ProtocolError):
    """No complete message arrived before the deadline."""


class ForgedFrame(ProtocolError):
    """A frame the worker's request loop did not send: a wrong or missing nonce, or bytes waiting on the
    channel before a request (the verifier's ``hack`` gate)."""


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


class WorkerChannel:
    """A worker's end of its control socket. Frames leave only through ``sendmsg`` (in a candidate worker the
    seccomp filter refuses every other write to this descriptor, see seccomp_filter.py) and carry the nonce
    of the request being answered; requests are read with ``read``."""

    def __init__(self, fd: int, nonce: int | None = None):
        self.fd = fd
        self.sock = socket.socket(fileno=fd)  # AF_UNIX SOCK_STREAM: the parent's socketpair
        self.nonce = nonce  # of the request being answered (first: the spawn's, for the hello)

    def send(self, msg: dict[str, Any]) -> None:
        view = memoryview(encode(msg if self.nonce is None else {**msg, "nonce": self.nonce}))
        while view:
            view = view[self.sock.sendmsg([view]):]

    def recv_request(self, max_message: int) -> dict[str, Any]:
        """The parent's next request (its nonce is echoed in every frame until the next request)."""
        msg = recv(self.fd, None, max_message)
        nonce = msg.get("nonce")
        self.nonce = nonce if type(nonce) is int else None
        return msg

    def recv_answer(self, max_message: int) -> dict[str, Any]:
        """The parent's answer to a frame of ours within the current request (a build)."""
        return recv(self.fd, None, max_message)


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


# --- schemas (the primitives: wire_schema.py) ---------------------------------------------------------
# the dimensions a tensor description carries: PyTorch has no cap of its own; KernelBench's most are 5 or 6, and a
# task with 17-dimensional outputs was refused as a protocol break before this was raised from 16 (red team rt6)
MAX_DIMS = 64
META = Obj({"dtype": Str(16, choices=frozenset(DTYPES)), "shape": List(Int(0, 2**40), MAX_DIMS),
            "offset": Int(0, 2**50), "nbytes": Int(0, 2**50), "strides": List(Int(0, 2**50), MAX_DIMS)},
           required=("dtype", "shape", "offset", "nbytes"))
# get_init_inputs(): numbers, strings, bools, None and (nested) lists of them (worker.init refuses the rest)
INIT_ARGS = List(Value(depth=8, items=4096, text=4096), 256)
CALL_ARGS = List(Value(depth=10, items=4096, text=4096), 256)
# the reference's recorded ATen operators (op_recorder.ShapeRecorder; read by latency_model.estimate_eager)
_TENSOR_DESC = Obj({"shape": List(Int(0, 2**62), 64), "dtype": Str(64)}, required=("shape", "dtype"))
OP_RECORDS = List(Obj({"op": Str(512), "inputs": List(_TENSOR_DESC, 4096), "outputs": List(_TENSOR_DESC, 4096)},
                      required=("op", "inputs", "outputs")), 10_000)
# the model's parameters and buffers after a call (worker._write_state; judged by trusted/model_state.py): the
# tensor's place only where it was written (a reference writes only those its calls changed)
STATE = List(Obj({"name": Str(1024), "kind": Str(16, choices=frozenset({"parameter", "buffer"})),
                  "shape": List(Int(0, 2**40), MAX_DIMS), "dtype": Str(32), "changed": Bool(), "tensor": META},
                 required=("name", "kind", "shape", "dtype")), 65536)
_FAILED = {"ok": Bool(), "phase": Str(64, truncate=True), "error": Str(MAX_TEXT, truncate=True),
           "detail": Str(MAX_TEXT, truncate=True), "native_reports": REPORTS,
           # a failure the parent explains further (trials.py), named rather than matched in the error text
           "reason": Str(64, choices=frozenset({"output_too_large", "init_compute"}))}
_OK_FIELDS: dict[str, dict[str, Spec]] = {
    "load": {}, "init": {"init_args": INIT_ARGS, "widen_buffers": Bool(), "state_bytes": Int(0, 2**50)}, "ping": {},
    "compile": {}, "reload": {}, "state": {"state": STATE, "need": Int(0, 2**50)},
    # args: forward's call template when some arguments are not tensors (trial_inputs.encode_args)
    "make_inputs": {"inputs": List(META, 256), "need": Int(0, 2**50), "args": CALL_ARGS, "large_level": Int(0, 16),
                    "aliases": List(Int(0, 255), 256)},  # per input, the first input it is one tensor with
    "run": {"outputs": List(META, 256), "native_calls": Int(), "inner_s": Num(), "native_reports": REPORTS,
            "ops": Map(Int(), 4096), "violations": Map(Int(), 4096), "inputs_after": List(META, 256),
            "state": STATE, "structure": Str(32, truncate=True), "by_keyword": Bool()},  # structure: "tensor", "tuple of N", "list of N" (trials.py compares it)
    "record_ops": {"ops": OP_RECORDS},
    "bandwidth": {"seconds": List(Num(0.0), 64)},
    "truth": {"outputs": List(META, 256), "scale": Num()},
}
_OK_REQUIRED = {"run": ("outputs", "native_calls"), "truth": ("outputs",), "make_inputs": (), "record_ops": ("ops",),
                "bandwidth": ("seconds",), "init": ()}
REPLY_OPS = frozenset(_OK_FIELDS)  # every request a worker answers (the fuzzer walks them all)
HELLO = Obj({"op": Str(16, choices=frozenset({"hello"})), "pid": Int(0, 2**31)}, required=("op", "pid"))


def check_nonce(msg: dict[str, Any], nonce: int) -> None:
    """A frame from a worker must echo the nonce of the request it answers (the hello: the spawn's). Anything
    else was not written by the worker's request loop: ForgedFrame."""
    got = msg.get("nonce")
    if type(got) is not int or got != nonce:
        raise ForgedFrame(f"a frame without the nonce of the request it claims to answer (op {_op_name(msg)})")


def _op_name(msg: dict[str, Any]) -> str:
    op = msg.get("op")
    return op[:32] if isinstance(op, str) else "reply"


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
    if op in ("make_inputs", "state") and ("inputs" if op == "make_inputs" else "state") not in reply \
            and "need" not in reply:
        raise ProtocolError(f"reply to {op}: neither {'inputs' if op == 'make_inputs' else 'state'} nor need")
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
                          "attrs": List(Value(depth=2, items=4096, text=64), 64)}, required=("inputs", "outputs", "attrs")),
}


def check_build_request(msg: dict[str, Any]) -> dict[str, Any]:
    """A worker's request for a native build, validated (ProtocolError says what is wrong)."""
    kind = Str(16, choices=frozenset(_BUILD_KINDS)).check(msg.get("kind"), "build request: kind")
    return {"op": "build", "kind": kind, **_BUILD_KINDS[kind].check(msg, f"build request ({kind})")}


@dataclass(frozen=True)
class TensorMeta:
    """A tensor in a shared region: ``nbytes`` bytes from ``offset``. Without ``strides`` the tensor is contiguous
    (nbytes = elements x element size); with them (element strides, non-negative: a trial's non-contiguous input
    view, trial_inputs.strided_view) the bytes are the view's storage span, from its first element to its last, and
    the tensor is that span seen through ``shape`` and ``strides``."""
    dtype: str
    shape: tuple[int, ...]
    offset: int
    nbytes: int
    strides: tuple[int, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"dtype": self.dtype, "shape": list(self.shape), "offset": self.offset, "nbytes": self.nbytes}
        if self.strides is not None:
            out["strides"] = list(self.strides)
        return out

    @staticmethod
    def from_json(obj: Any, capacity: int) -> "TensorMeta":
        """Validate a tensor description sent by a peer against the shared region's capacity."""
        m = META.check(obj, "tensor description")
        numel = 1
        for d in m["shape"]:
            numel *= d
        strides = m.get("strides")
        if strides is not None:
            if len(strides) != len(m["shape"]) or numel == 0:
                raise ProtocolError(f"strides {strides} do not fit shape {m['shape']}")
            elements = span(m["shape"], strides)
        else:
            elements = numel
        if m["nbytes"] != elements * DTYPES[m["dtype"]]:
            raise ProtocolError(f"nbytes {m['nbytes']} does not match shape {m['shape']} of {m['dtype']}"
                                + (f" with strides {strides}" if strides is not None else ""))
        if m["offset"] + m["nbytes"] > capacity:
            raise ProtocolError(f"tensor at {m['offset']}+{m['nbytes']} lies outside the {capacity}-byte region")
        return TensorMeta(m["dtype"], tuple(m["shape"]), m["offset"], m["nbytes"],
                          tuple(strides) if strides is not None else None)


def span(shape: Any, strides: Any) -> int:
    """Elements from the first to the last element of a non-empty view of ``shape`` with non-negative ``strides``."""
    return 1 + sum((d - 1) * s for d, s in zip(shape, strides))


def align(n: int, a: int = 64) -> int:
    return (n + a - 1) // a * a
