"""Tensor bytes in a worker's shared-memory region, as the trusted parent reads and moves them.

A worker's region is a memory file both sides map; what a worker writes there is untrusted data,
described by a validated ``TensorMeta``. The parent takes private copies before it judges anything.
"""
from __future__ import annotations

from typing import Any

import torch

DTYPES = {name: getattr(torch, name) for name in ("float32", "float64", "float16", "bfloat16", "int64", "int32",
                                                  "int16", "int8", "uint8", "bool")}


def tensor(handle: Any, meta: Any) -> torch.Tensor:
    """A private copy (one memcpy) of a tensor in a worker's shared region (a view with the meta's strides, if it
    has them)."""
    dtype = DTYPES[meta.dtype]
    if meta.nbytes == 0:
        return torch.empty(meta.shape, dtype=dtype)
    view = torch.frombuffer(handle.mm, dtype=dtype, count=meta.nbytes // dtype.itemsize, offset=meta.offset)
    strides = getattr(meta, "strides", None)  # a non-contiguous input view: its storage span, seen through strides
    out = view.clone().view(meta.shape) if strides is None else view.clone().as_strided(meta.shape, strides)
    del view  # release the buffer export so the region can be resized later
    return out


def same_bytes(h1: Any, m1: Any, h2: Any, m2: Any) -> bool:
    """Byte equality of two tensors in two shared regions, compared in place."""
    if m1.nbytes != m2.nbytes:
        return False
    if m1.nbytes == 0:
        return True
    # the widest integer word that divides the size and both offsets: torch.equal runs ~4x faster on int64 words
    # than on bytes, and equal words are equal bytes
    word = next(w for w in (torch.int64, torch.int32, torch.int16, torch.uint8)
                if m1.nbytes % w.itemsize == 0 and m1.offset % w.itemsize == 0 and m2.offset % w.itemsize == 0)
    n = m1.nbytes // word.itemsize
    a = torch.frombuffer(h1.mm, dtype=word, count=n, offset=m1.offset)
    b = torch.frombuffer(h2.mm, dtype=word, count=n, offset=m2.offset)
    same = torch.equal(a, b)
    del a, b  # release the buffer exports
    return same


def copy_prefix(src: Any, dst: Any, nbytes: int, reserve: int) -> None:
    """Copy the first ``nbytes`` of ``src``'s region into ``dst``'s (one memcpy), growing ``dst`` to hold
    ``reserve`` bytes in all."""
    dst.ensure_capacity(reserve)
    assert dst.mm is not None and src.mm is not None
    with memoryview(dst.mm) as d, memoryview(src.mm) as s:
        d[0:nbytes] = s[0:nbytes]


class Staging:
    """A parent-side copy of one round's inputs: the inputs worker may draw the next round at once, and each
    side's region is written from here right before that side's turn."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.nbytes = 0

    def take(self, src: Any, nbytes: int) -> None:
        if len(self.buf) < nbytes:
            self.buf = bytearray(nbytes)
        assert src.mm is not None
        with memoryview(src.mm) as s, memoryview(self.buf) as b:
            b[0:nbytes] = s[0:nbytes]
        self.nbytes = nbytes

    def put(self, dst: Any, reserve: int) -> None:
        dst.ensure_capacity(reserve)
        assert dst.mm is not None
        with memoryview(dst.mm) as d, memoryview(self.buf) as b:
            d[0:self.nbytes] = b[0:self.nbytes]


def keep_freed_memory() -> None:
    """Ask glibc to reuse freed memory instead of unmapping large blocks (the workers get the same
    through GLIBC_TUNABLES): every fresh 32 MiB tensor otherwise costs ~8k page faults, which made
    the parent's copies and comparisons of large outputs several times slower than the kernels."""
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        libc.mallopt(-4, 0)  # M_MMAP_MAX: no mmap'ed chunks
        libc.mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD: keep up to 1 GiB of freed memory
    except (OSError, AttributeError):
        pass  # not glibc: nothing to tune
