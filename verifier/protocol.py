"""Wire format between the trusted parent and a sandboxed worker. Imported by both sides.

Control messages are length-prefixed JSON objects on a pipe pair. Tensor bytes never travel in
a message: they sit in a shared memory file (memfd) that the parent creates and passes to the
worker, described by `TensorMeta` (dtype, shape, offset, nbytes). Nothing is ever unpickled: a
worker that sends junk produces a `ProtocolError` in the parent, never code execution.
"""
from __future__ import annotations

import json
import os
import select
import struct
import time
from dataclasses import dataclass
from typing import Any

MAX_MESSAGE = 64 * 1024 * 1024  # a control message larger than this is a protocol violation
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


def send(fd: int, msg: dict[str, Any]) -> None:
    data = json.dumps(msg, separators=(",", ":")).encode()
    buf = _LEN.pack(len(data)) + data
    view = memoryview(buf)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class Timeout(ProtocolError):
    """No complete message arrived before the deadline."""


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


def recv(fd: int, deadline: float | None = None) -> dict[str, Any]:
    """One message; ``deadline`` is a time.monotonic() value (None waits for ever)."""
    (length,) = _LEN.unpack(_read_exact(fd, 4, deadline))
    if length > MAX_MESSAGE:
        raise ProtocolError(f"message of {length} bytes exceeds the {MAX_MESSAGE}-byte limit")
    raw = _read_exact(fd, length, deadline)
    try:
        msg = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolError(f"malformed message: {exc}") from None
    if not isinstance(msg, dict):
        raise ProtocolError("message is not a JSON object")
    return msg


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
        if not isinstance(obj, dict):
            raise ProtocolError("tensor description is not an object")
        dtype, shape, offset, nbytes = obj.get("dtype"), obj.get("shape"), obj.get("offset"), obj.get("nbytes")
        if dtype not in DTYPES:
            raise ProtocolError(f"unsupported dtype {dtype!r}")
        if not isinstance(shape, list) or len(shape) > 16 or not all(
            isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2**40 for d in shape
        ):
            raise ProtocolError(f"invalid shape {shape!r}")
        numel = 1
        for d in shape:
            numel *= d
        if not isinstance(offset, int) or not isinstance(nbytes, int) or offset < 0:
            raise ProtocolError("invalid offset/nbytes")
        if nbytes != numel * DTYPES[dtype]:
            raise ProtocolError(f"nbytes {nbytes} does not match shape {shape} of {dtype}")
        if offset + nbytes > capacity:
            raise ProtocolError(f"tensor at {offset}+{nbytes} lies outside the {capacity}-byte region")
        return TensorMeta(dtype, tuple(shape), offset, nbytes)


def align(n: int, a: int = 64) -> int:
    return (n + a - 1) // a * a
