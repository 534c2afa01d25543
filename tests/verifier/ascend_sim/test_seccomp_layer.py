"""The seccomp layer of an Ascend C candidate worker (verifier/sandboxed/ascend_seccomp.py), in a fresh process:
after it, no executable memory, no protection keys and no mapping change inside the emulator's GM windows, while
glibc's malloc arenas and OpenMP threads (which map and protect their own memory) keep working."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("pyseccomp")

PROBE = r'''
import ctypes, errno, json, threading
import torch
from evokernel.verifier.backends.ascend_sim import abi
from evokernel.verifier.sandboxed import ascend_seccomp

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.mremap.restype = ctypes.c_void_p
libc.mremap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
for f in ("munmap", "mprotect", "madvise"):
    getattr(libc, f).argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int] if f != "munmap" else [ctypes.c_void_p, ctypes.c_size_t]
libc.syscall.restype = ctypes.c_long
R, W, X, PRIV_ANON, FIXED, MREMAP_MAYMOVE, MREMAP_FIXED = 1, 2, 4, 0x22, 0x10, 1, 2
FAILED = ctypes.c_void_p(-1).value
window = abi.window_base(0)
out = {}

def err(rc, failed):
    return "ok" if rc != failed else errno.errorcode[ctypes.get_errno()]

def run():
    page = libc.mmap(None, 1 << 16, R | W, PRIV_ANON, -1, 0)
    out["rw elsewhere"] = err(page, FAILED)
    out["mprotect read elsewhere"] = err(libc.mprotect(page, 4096, R), -1)
    out["mmap exec"] = err(libc.mmap(None, 4096, R | X, PRIV_ANON, -1, 0), FAILED)
    out["mprotect exec"] = err(libc.mprotect(page, 4096, R | X), -1)
    out["mmap hint in window"] = err(libc.mmap(window + (1 << 30), 4096, R | W, PRIV_ANON, -1, 0), FAILED)
    out["mmap fixed in window"] = err(libc.mmap(window + (1 << 30), 4096, R | W, PRIV_ANON | FIXED, -1, 0), FAILED)
    out["munmap window"] = err(libc.munmap(window, 4096), -1)
    out["mprotect window"] = err(libc.mprotect(window, 4096, R | W), -1)
    out["madvise window"] = err(libc.madvise(window, 4096, 4), -1)
    out["mremap into window"] = err(libc.mremap(page, 4096, 4096, MREMAP_MAYMOVE | MREMAP_FIXED, window + (1 << 31)), FAILED)
    out["pkey_alloc"] = err(libc.syscall(330, 0, 0), -1)
    # malloc arenas of new threads (mmap + mprotect of their own heaps) and OpenMP's threads
    sizes = []
    def grow():
        bufs = [ctypes.create_string_buffer(1 << 20) for _ in range(16)]
        sizes.append(sum(len(b) for b in bufs))
    ts = [threading.Thread(target=grow) for _ in range(4)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    out["thread arenas"] = "ok" if sizes == [16 << 20] * 4 else sizes
    torch.set_num_threads(2)
    x = torch.arange(1 << 22, dtype=torch.float64)
    out["openmp"] = "ok" if float((x * 2).sum()) == float((1 << 22) * ((1 << 22) - 1)) else "wrong"

if __import__("sys").argv[1] == "layer":
    ascend_seccomp.install(abi.SUPER_WINDOW)
run()
print(json.dumps(out))
'''


def probe(mode: str) -> dict:
    p = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_layer_denies_executable_memory_pkeys_and_window_changes():
    without, with_layer = probe("none"), probe("layer")
    denied = ["mmap exec", "mprotect exec", "mmap hint in window", "mmap fixed in window", "munmap window",
              "mprotect window", "madvise window", "mremap into window", "pkey_alloc"]
    for what in denied:
        assert with_layer[what] == "EPERM", (what, with_layer)
        assert without[what] != "EPERM", (what, without)  # the layer, not the machine, refuses it
    for what in ("rw elsewhere", "mprotect read elsewhere", "thread arenas", "openmp"):
        assert with_layer[what] == "ok", (what, with_layer)


def test_window_must_be_one_aligned_range():
    from evokernel.verifier.sandboxed import ascend_seccomp

    with pytest.raises(ValueError):
        ascend_seccomp.install((3 << 40, 1 << 44))
