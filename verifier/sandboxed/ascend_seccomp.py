"""Runs INSIDE the sandbox: the seccomp layer an Ascend C candidate worker adds once the emulator has started.

The base run filter (seccomp_filter.py) is installed by the zygote for every worker. Once an Ascend C
candidate's kernel libraries are loaded and each has fixed its GM window (abi.window_base: the kernel's GM
addresses lie there, with nothing behind them but a read-only view of the tiling), the worker stacks this
filter on top (filters only ever add restrictions):

* **no executable memory from now on**: ``mmap`` and ``mprotect`` with ``PROT_EXEC`` fail (every library is
  loaded already; a kernel that wrote machine code into memory cannot run it, so what the binary judge saw
  is what runs);
* **no protection keys**: ``pkey_alloc``, ``pkey_free``, ``pkey_mprotect``;
* **no mapping change inside the emulator's windows**: ``mmap`` (a hint or a fixed address there),
  ``munmap``, ``mprotect``, ``madvise``, ``mremap`` (from or, with ``MREMAP_FIXED``, to there), ``mlock``,
  ``munlock``, ``msync``, ``mbind`` and ``remap_file_pages`` whose address lies in them; ``shmat`` and
  ``process_madvise`` (which place or change memory at an address of the caller's choosing) not at all.

Seccomp compares arguments with constants only, so the windows form one aligned range
(``abi.SUPER_WINDOW``: 16 TiB at 32 TiB) tested with one masked comparison. A call on a range that starts
below a window and reaches into it fails at the unmapped guard terabyte in front of each window, before it
reaches the window. glibc's malloc arenas and OpenMP's thread stacks keep working: they map and protect their
own memory read/write, elsewhere.
"""
from __future__ import annotations

import errno
import mmap

PROT_EXEC = getattr(mmap, "PROT_EXEC", 4)
MREMAP_FIXED = 2
_IN_WINDOW = (("mmap", 0), ("munmap", 0), ("mprotect", 0), ("madvise", 0), ("mremap", 0), ("mlock", 0),
              ("mlock2", 0), ("munlock", 0), ("msync", 0), ("mbind", 0), ("remap_file_pages", 0))
_NEVER = ("pkey_alloc", "pkey_free", "pkey_mprotect", "shmat", "process_madvise")


def install(window: tuple[int, int]) -> str:
    """Stack the emulator layer for the windows in ``window`` = (base, size): size a power of two, base a multiple
    of it. Returns a short description (or why seccomp is unavailable)."""
    base, size = window
    if size <= 0 or size & (size - 1) or base % size:
        raise ValueError("the emulator's windows must form one aligned power-of-two range")
    try:
        import pyseccomp as sc
    except ImportError:  # the verifier records that seccomp was not available (the base filter says so too)
        return "seccomp unavailable (pyseccomp not installed)"
    mask = ~(size - 1) & 0xFFFF_FFFF_FFFF_FFFF
    deny = sc.ERRNO(errno.EPERM)
    flt = sc.SyscallFilter(defaction=sc.ALLOW)

    def rule(name: str, *args: object) -> None:
        try:
            flt.add_rule(deny, name, *args)
        except (RuntimeError, ValueError, OSError):
            pass  # a system call this architecture does not have

    rule("mmap", sc.Arg(2, sc.MASKED_EQ, PROT_EXEC, PROT_EXEC))
    rule("mprotect", sc.Arg(2, sc.MASKED_EQ, PROT_EXEC, PROT_EXEC))
    for name in _NEVER:
        rule(name)
    for name, arg in _IN_WINDOW:
        rule(name, sc.Arg(arg, sc.MASKED_EQ, mask, base))
    rule("mremap", sc.Arg(3, sc.MASKED_EQ, MREMAP_FIXED, MREMAP_FIXED), sc.Arg(4, sc.MASKED_EQ, mask, base))
    flt.load()
    return "seccomp (ascend emulator layer)"
