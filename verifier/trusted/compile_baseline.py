"""The torch.compile baseline: the task's ``Model`` under ``torch.compile`` (Inductor), a third side of the
timed rounds beside eager and the candidate (`timing_protocol.measure`).

Compiling is the expensive part (tens of seconds cold on this machine; Dynamo traces the forward, Inductor
generates and builds C++), so it happens **once per task, outside the timed rounds**:

* the compiled worker is a reference worker kept with the task's `Reference` (warm across verdicts, closed
  with it); each verdict rebuilds ``Model`` in it with that verdict's secret seeds (the candidate's weights)
  and wraps it in ``torch.compile`` again: Dynamo's guards are on shapes and types, not on the module
  object, so the compiled code of the first verdict is reused (measured: 0.0 s instead of ~10-60 s);
* each verdict runs the compiled model once on fresh inputs before the rounds, so a compile (first verdict,
  or a recompile) never lands in a timed call;
* across runs, Inductor's own cache (``<cache>/inductor``, writable in the reference sandbox only) skips the
  C++ builds; Dynamo still traces again in a new worker;
* a task torch.compile cannot handle is not a verdict failure: the verdict is timed against eager alone and
  ``details["compile_baseline"]`` says why (``{"ok": false, "error": ...}``); the failure is remembered for
  the reference's lifetime, so later verdicts do not pay for the attempt again.
"""
from __future__ import annotations

import random
import time
from typing import Any

from evokernel.tasks.task import Task, TaskError
from evokernel.verifier.message_codec import ProtocolError
from evokernel.verifier.trusted.launcher import WorkerDied, WorkerHandle, WorkerTimeout
from evokernel.verifier.trusted.reference import Reference

COMPILE_TIMEOUT_S = 900.0  # a cold Inductor build of a level-2 chain on a loaded 2-core machine


class CompileFailed(Exception):
    pass


def _call(handle: WorkerHandle, msg: dict[str, Any], timeout: float) -> dict[str, Any]:
    try:
        reply = handle.call(msg, timeout)
    except (WorkerDied, WorkerTimeout, ProtocolError) as exc:
        raise CompileFailed(f"{msg['op']}: {exc}; {handle.stderr_tail()}".strip()) from None
    if not reply.get("ok"):
        raise CompileFailed(f"{msg['op']}: {reply.get('error')}\n{reply.get('detail', '')}".strip())
    return reply


def prepare(ref: Reference, task: Task, init_seed: int, params_seed: int | None, rng: random.Random,
            details: dict[str, Any], timings: dict[str, float]) -> WorkerHandle | None:
    """The compiled worker for this verdict, compiled and warm (None when torch.compile fails for the task)."""
    t0 = time.perf_counter()
    info: dict[str, Any] = {}
    details["compile_baseline"] = info
    if ref.compile_error is not None:
        info.update(ok=False, error=ref.compile_error, reused=True)
        return None
    handle = ref.compiled_worker
    fresh = handle is None or handle.status is not None
    try:
        if fresh:
            handle = ref.compiled_worker = ref.pool.spawn_loaded(task)
        init: dict[str, Any] = {"op": "init", "seed": init_seed}
        if params_seed is not None:  # the models being timed were built with drawn constants
            init["params_seed"] = params_seed
            if getattr(ref, "vary_floats", False):
                init["vary_floats"] = True
        _call(handle, init, COMPILE_TIMEOUT_S)
        _call(handle, {"op": "compile"}, COMPILE_TIMEOUT_S)
        # compile now (torch.compile compiles on the first call), on fresh inputs, outside the timed rounds
        ref.make_inputs(rng.randrange(2**31), "none", handle=handle)
        handle.ensure_capacity(ref.input_bytes + 2 * max(ref.output_bytes, 1 << 12) + (1 << 20))
        _call(handle, {"op": "run", "out_offset": ref.input_bytes}, COMPILE_TIMEOUT_S)
    except (CompileFailed, TaskError) as exc:
        if handle is not None:
            handle.close()
        ref.compiled_worker = None
        ref.compile_error = f"torch.compile of the reference failed: {str(exc)[-1500:]}"
        info.update(ok=False, error=ref.compile_error, reused=False)
        timings["compile_baseline"] = time.perf_counter() - t0
        return None
    seconds = time.perf_counter() - t0
    timings["compile_baseline"] = seconds
    info.update(ok=True, reused=not fresh, prepare_s=round(seconds, 3))
    return handle
