"""How the gates fail: the exception that carries a failed gate and its feedback, and the messages for
a candidate process that died. Shared by every judge of the trusted side."""
from __future__ import annotations

import signal
from typing import Any


class Fail(Exception):
    """Gate ``gate`` failed with ``feedback`` (text an LLM can act on); ``details`` go to the verdict."""

    def __init__(self, gate: str, feedback: str, **details: Any):
        super().__init__(feedback)
        self.gate, self.feedback, self.details = gate, feedback, details


SIGNALS = {
    signal.SIGSEGV: "segmentation fault (invalid memory access in native code)",
    signal.SIGBUS: "bus error (misaligned or invalid memory access)",
    signal.SIGILL: "illegal instruction",
    signal.SIGFPE: "arithmetic exception (e.g. integer division by zero)",
    signal.SIGABRT: "aborted (e.g. an uncaught C++ exception or std::bad_alloc)",
    signal.SIGXFSZ: "file size limit exceeded (too much output)",
}


def classify_death(status: dict[str, Any], stderr: str, where: str) -> Fail:
    """The verdict for a candidate process that died (``status`` from the zygote) during ``where``."""
    tail = f"\nstderr (last lines):\n{stderr.strip()[-1200:]}" if stderr.strip() else ""
    sig = status.get("signal")
    if sig == signal.SIGXCPU:
        return Fail("timeout", f"the candidate exceeded its CPU-time limit during {where}{tail}", status=status)
    if sig == signal.SIGKILL:  # not by us (our kills are timeouts): the OOM killer or the hard CPU limit
        return Fail("runtime", f"the candidate process was killed during {where} (out of memory or CPU time?)"
                    f"{tail}", status=status)
    if sig is not None:
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        what = SIGNALS.get(sig, "killed by a signal")
        return Fail("runtime", f"the candidate process crashed during {where}: {name}, {what}{tail}", status=status)
    if "exited" in status:
        return Fail("runtime", f"the candidate process exited with code {status['exited']} during {where} "
                    f"(a kernel must return, not exit){tail}", status=status)
    return Fail("runtime", f"the candidate process stopped answering during {where}{tail}", status=status)


MOVEMENT_PREFIX = "data movement: "  # a data-movement finding in a worker's violations (sandboxed/data_movement.py)

INPUTS_MODIFIED = ("forward modified its input tensor(s); a kernel must leave its inputs unchanged (write "
                   "results into a new output tensor)")


def torch_ops_fail(label: str, violations: dict[str, int], outside: str, home: str) -> Fail:
    """The dynamic anti-hack finding: ATen compute operators dispatched during forward, or data that PyTorch
    moved for the kernel (keys with the recorder's ``data movement: `` prefix, sandboxed/data_movement.py)."""
    moved = {k: v for k, v in violations.items() if k.startswith(MOVEMENT_PREFIX)}
    ops = ", ".join(f"aten::{k} x{v}" for k, v in sorted(violations.items()) if k not in moved)
    if ops:
        return Fail("hack", f"{label}: PyTorch compute ran during forward outside {outside}: {ops}. All computation "
                    f"must happen in {home}; forward may only allocate outputs, take views/reshapes and call "
                    ".contiguous()", torch_ops=violations)
    what = "; ".join(f"{k[len(MOVEMENT_PREFIX):]} (x{v})" for k, v in sorted(moved.items()))
    return Fail("hack", f"{label}: PyTorch moved the data instead of {home}: {what}. Views are allowed, but "
                "PyTorch may copy only a whole tensor byte for byte; every rearrangement (transpose, broadcast, "
                "slice, concatenation, layout change) must be written by your kernel into an output it allocated",
                torch_ops=violations)


def init_compute_fail(found: str) -> Fail:
    """The construction guard's finding (verifier/sandboxed/init_guard.py): PyTorch computed in ModelNew.__init__
    beyond an affine map of drawn values, or the model holds a table Python made."""
    return Fail("hack", f"ModelNew.__init__: {found[:600]}. In __init__ PyTorch may draw random values, fill "
                "constants, view, copy and concatenate, cast and apply affine maps with scalar factors "
                "(1.0 + 0.5 * torch.randn(n)) to such values; any other computation (exp, reciprocal, matmul, "
                "sort, arithmetic on arange/linspace grids or on torch.tensor(list) data) belongs in native code, "
                "which __init__ may call; values Python chooses (list entries, constants, placements into part "
                "of a tensor, numbers passed to native calls) count against a cap of a few hundred",
                init_compute=found[:600])
