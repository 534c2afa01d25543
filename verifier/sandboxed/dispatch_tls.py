"""Runs INSIDE the sandbox: the thread's local dispatch key sets must come back from candidate code unchanged.

PyTorch keeps, per thread, a set of dispatch keys to include and one to exclude. The operator recorder of trials
and audit rounds (op_recorder.py) is a TorchDispatchMode: it sees an operator only while the Python keys are not
excluded. Native code that leaks a key guard (``new ExcludeDispatchKeyGuard(Python | PythonTLSSnapshot)``,
however the type is named) blinds the recorder for everything the thread runs afterwards, and a guard that is
restored before returning still hid what ran under it. The binary judge refuses the guards' symbols; this is the
run-time half, a rule on the *effect*: the two sets are read before each native call and each request that runs
candidate code, and must read the same after it. A change is restored at once and reported as a hack.
"""
from __future__ import annotations

import torch

_C = torch._C


class DispatchStateChanged(Exception):
    """Candidate code left the thread's dispatch key sets changed (already restored when this is raised)."""


# every change found, in order: the worker reports the first one after the request, so candidate code that catches
# the exception does not hide it
FOUND: list[str] = []


def snapshot() -> tuple[int, int]:
    """(include set, exclude set) of this thread, as raw bit sets."""
    return _C._dispatch_tls_local_include_set().raw_repr(), _C._dispatch_tls_local_exclude_set().raw_repr()


def _restore(saved: tuple[int, int]) -> None:
    want_in = _C.DispatchKeySet.from_raw_repr(saved[0])
    want_ex = _C.DispatchKeySet.from_raw_repr(saved[1])
    now_in, now_ex = _C._dispatch_tls_local_include_set(), _C._dispatch_tls_local_exclude_set()
    for key in _C.DispatchKey.__members__.values():
        try:
            if want_in.has(key) != now_in.has(key):
                _C._dispatch_tls_set_dispatch_key_included(key, want_in.has(key))
            if want_ex.has(key) != now_ex.has(key):
                _C._dispatch_tls_set_dispatch_key_excluded(key, want_ex.has(key))
        except (RuntimeError, ValueError):  # an alias key has no bit of its own
            continue


def _names(bits: int) -> str:
    return str(_C.DispatchKeySet.from_raw_repr(bits)).removeprefix("DispatchKeySet")


def check_unchanged(saved: tuple[int, int], where: str) -> None:
    """Raise `DispatchStateChanged` (after restoring ``saved``) if the sets differ from ``saved``."""
    now = snapshot()
    if now == saved:
        return
    changes = []
    for label, before, after in (("include", saved[0], now[0]), ("exclude", saved[1], now[1])):
        added, removed = after & ~before, before & ~after
        if added:
            changes.append(f"added {_names(added)} to the thread's {label} set")
        if removed:
            changes.append(f"removed {_names(removed)} from the thread's {label} set")
    _restore(saved)
    restored = snapshot() == saved
    message = (
        f"{where} changed PyTorch's dispatch state ({'; '.join(changes)}): a leaked dispatch-key guard hides the "
        "operators PyTorch runs afterwards from the verifier; native code must leave the thread's dispatch keys as "
        "it found them" + ("" if restored else " (and they could not be restored)"))
    FOUND.append(message)
    raise DispatchStateChanged(message)
