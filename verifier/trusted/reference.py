"""The reference: the task's own ``Model`` and ``get_inputs`` (trusted task code), run in workers of
the reference sandbox so that they are timed under the same conditions as candidates.

A `Reference` per task holds two workers:

* the **model** worker: builds ``Model`` from a secret init seed, makes the correctness trials' inputs
  from secret seeds, computes the expected outputs, and is the eager side of every timed round;
* the **inputs** worker: draws each timed round's inputs fresh from ``get_inputs()`` with a new secret
  seed (never shifted copies of earlier inputs). It is pinned to the CPUs the timed workers do not use,
  so it prepares round k+1 while round k is being timed.

References are kept warm across verdicts (a few per verifier, least recently used first out).
"""
from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Callable

from evokernel.tasks.task import Task, TaskError

if TYPE_CHECKING:
    import torch
from evokernel.verifier.message_codec import ProtocolError, TensorMeta, align
from evokernel.verifier.sandboxed.trial_inputs import LARGE_IN, OFFSET_IN
from evokernel.verifier.trusted.launcher import SandboxError, WorkerDied, WorkerHandle, WorkerTimeout, Zygote

# reference workers run trusted task code and live across many verdicts: no CPU-seconds cap
# (a long evaluation would otherwise kill them); wall-clock deadlines still apply to every call
REFERENCE_CPU_S = 10**8
KEEP = 4  # warm references per verifier


class Reference:
    """The reference workers of one task."""

    def __init__(self, pool: "ReferencePool", task: Task, handle: WorkerHandle):
        self.pool, self.task, self.handle = pool, task, handle
        self.input_bytes = 0
        self.output_bytes = 0
        self.eager_ops: dict[int | None, list[dict[str, Any]]] = {}  # recorded ATen ops of one forward, per case
        self.inputs_worker: WorkerHandle | None = None
        # the torch.compile baseline (`compile_baseline`): its worker, kept warm, or why compiling failed
        self.compiled_worker: WorkerHandle | None = None
        self.compile_error: str | None = None
        self.floors: dict[tuple[int, int], float] = {}  # (input bytes, output bytes) -> seconds of a copy
        self.case: int | None = None  # a task with cases (Task.cases): the case every make_inputs draws
        self.args: list[Any] | None = None  # forward's call template of the last inputs (non-tensor arguments)
        # the planted large values (sandboxed/large_bound.py): the tolerances per output dtype the model worker checks
        # its float32 answer against (set by the trials), and the highest level it chose per perturbation, which the
        # inputs worker (no model to ask) plants at in the timing's value rounds
        self.resolve: dict[str, list[float]] | None = None
        self.strided = True  # the strided trials' inputs as non-contiguous views (VerifyConfig.strided_inputs)
        self.large_levels: dict[str, int] = {}
        self.last_large_level = 0  # the level of the last inputs the model worker made
        # the perturbed-parameter build (init with params_seed): constructor floats varied, constant buffers widened
        self.vary_floats = False
        self.widen_buffers = False
        self.state_bytes = 0  # the model's parameters and buffers as built, in bytes (model_state.py)
        self.last_state: list[dict[str, Any]] | None = None  # the state entries of the last run that asked for them

    # --- calls ------------------------------------------------------------------------------------
    def call(self, msg: dict[str, Any], timeout: float = 600.0, handle: WorkerHandle | None = None) -> dict[str, Any]:
        handle = handle or self.handle
        try:
            reply = handle.call(msg, timeout)
        except (WorkerDied, WorkerTimeout, ProtocolError) as exc:
            tail = handle.stderr_tail()
            handle.close()
            raise TaskError(f"{self.task.path}: the reference failed ({msg['op']}): {exc}; {tail}") from None
        if not reply.get("ok"):
            raise TaskError(f"{self.task.path}: the reference failed ({msg['op']}): {reply.get('error')}\n"
                            f"{reply.get('detail', '')}")
        return reply

    def init(self, seed: int, params_seed: int | None = None, vary_floats: bool = False) -> list[Any]:
        """Build ``Model`` from ``seed``; returns the constructor arguments (``get_init_inputs()``). With
        ``params_seed``, its constant initialisers draw their values from that seed instead
        (`sandboxed.init_perturbation`), and its float arguments and constant buffers get new values where the model
        accepts them (`sandboxed.init_args`; the arguments returned are those it was built with): the candidate's
        ModelNew is built the same way for the same trial."""
        msg: dict[str, Any] = {"op": "init", "seed": seed}
        if params_seed is not None:
            msg["params_seed"] = params_seed
            if vary_floats:
                msg["vary_floats"] = True
        self.vary_floats = vary_floats  # the compiled baseline's reference is built the same way
        reply = self.call(msg)
        # with params_seed: whether its constant buffers were widened (sandboxed/init_args.py, worker.init); the
        # candidate is built the same way
        self.widen_buffers = reply.get("widen_buffers") is True
        self.state_bytes = int(reply.get("state_bytes", 0))
        return list(reply["init_args"])

    def make_inputs(self, seed: int, perturb: str, handle: WorkerHandle | None = None) -> list[TensorMeta]:
        """Inputs from ``seed`` (perturbed), written at offset 0 of the worker's region."""
        handle = handle or self.handle
        msg: dict[str, Any] = {"op": "make_inputs", "seed": seed, "perturb": perturb, **self.case_msg()}
        if perturb in LARGE_IN:
            if handle is self.handle and self.resolve:
                msg["resolve"] = self.resolve
            elif self.large_levels.get(perturb):
                msg["large_level"] = self.large_levels[perturb]
        elif perturb in OFFSET_IN and handle is self.handle and self.resolve:  # offsets kept where resolved
            msg["resolve"] = self.resolve
        if not self.strided:
            msg["strided"] = False
        for _ in range(8):
            reply = self.call(msg, handle=handle)
            if "need" in reply:
                handle.ensure_capacity(int(reply["need"]) * 2 + (1 << 20))
                continue
            self.last_large_level = int(reply.get("large_level", 0))
            if self.last_large_level:
                self.large_levels[perturb] = max(self.large_levels.get(perturb, 0), self.last_large_level)
            return self._input_metas(reply, handle)
        raise TaskError(f"{self.task.path}: could not reserve memory for the inputs")

    def case_msg(self) -> dict[str, Any]:
        """The part of a make_inputs request that names the case (nothing for a task without cases)."""
        return {} if self.case is None else {"case": self.case}

    def run_msg(self, msg: dict[str, Any]) -> dict[str, Any]:
        """A run request with the call template of the last inputs, when forward takes non-tensor arguments."""
        return msg if self.args is None else {**msg, "args": self.args}

    def _input_metas(self, reply: dict[str, Any], handle: WorkerHandle) -> list[TensorMeta]:
        metas = [TensorMeta.from_json(m, handle.capacity) for m in reply["inputs"]]
        args = reply.get("args")
        self.args = args if isinstance(args, list) else None
        self.input_bytes = align(max((m.offset + m.nbytes for m in metas), default=0))
        return metas

    def run(self, timeout: float = 600.0, state: bool = False, rewind: bool = False
            ) -> tuple[list[TensorMeta], dict[str, Any]]:
        """Forward on the last inputs; outputs land after the inputs in the region. ``state``: the reply also
        describes the model's parameters and buffers its calls changed (`model_state`, written after the outputs,
        kept in ``last_state``); ``rewind``: the state goes back first to what it was before the last such run (a
        trial drawn again)."""
        msg: dict[str, Any] = {"op": "run", "out_offset": self.input_bytes}
        if state:
            msg["state"] = True
            if rewind:
                msg["rewind"] = True
        for _ in range(8):
            try:
                reply = self.handle.call(msg, timeout)
            except (WorkerDied, WorkerTimeout, ProtocolError) as exc:
                self.handle.close()
                raise TaskError(f"{self.task.path}: the reference crashed: {exc}") from None
            if reply.get("ok"):
                metas = [TensorMeta.from_json(m, self.handle.capacity) for m in reply["outputs"]]
                self.output_bytes = max(self.output_bytes, sum(align(m.nbytes) for m in metas))
                self.last_state = reply.get("state") if state else None
                return metas, reply
            if "larger than the space" in str(reply.get("error")):
                self.handle.ensure_capacity(self.handle.capacity * 4 + (1 << 20))
                if state:  # the failed run's forward changed the state: undone before it runs again
                    msg["rewind"] = True
                continue
            raise TaskError(f"{self.task.path}: the reference forward failed: {reply.get('error')}\n"
                            f"{reply.get('detail', '')}")
        raise TaskError(f"{self.task.path}: the reference output does not fit in memory")

    def truth(self, seed: int, perturb: str) -> list["Exact"]:
        """The reference's outputs in float64 for the inputs of ``(seed, perturb)`` (drawn again): the exact
        answer a reduction's float32 result is weighed against when the tight rule fails, each with the
        forward's working scale (the largest RMS of its intermediate tensors)."""
        from evokernel.verifier.trusted import regions
        from evokernel.verifier.trusted.correctness import Exact

        self.make_inputs(seed, perturb)
        self.handle.ensure_capacity(self.input_bytes + 2 * max(self.output_bytes, 1 << 12) + (1 << 20))
        reply = self.call({"op": "truth", "out_offset": self.input_bytes})
        metas = [TensorMeta.from_json(m, self.handle.capacity) for m in reply["outputs"]]
        scale = max(0.0, float(reply.get("scale", 0.0)))
        return [Exact(regions.tensor(self.handle, m), scale) for m in metas]

    def state(self) -> list[dict[str, Any]]:
        """The model worker's state entries now (those its calls changed since it was built carry their values,
        written at offset 0 of its region: the last inputs are overwritten)."""
        for _ in range(8):
            reply = self.call({"op": "state", "offset": 0})
            if "need" in reply:
                self.handle.ensure_capacity(int(reply["need"]) + (1 << 20))
                continue
            return list(reply["state"])
        raise TaskError(f"{self.task.path}: could not reserve memory for the model's state")

    def recorded_ops(self) -> list[dict[str, Any]]:
        """The ATen operators one eager forward runs (the ascend-sim latency model's eager side)."""
        if self.case not in self.eager_ops:  # on the last inputs drawn: of this case
            self.eager_ops[self.case] = list(self.call({"op": "record_ops"})["ops"])
        return self.eager_ops[self.case]

    # --- the inputs worker ------------------------------------------------------------------------
    def inputs(self) -> WorkerHandle:
        """The worker that draws timed inputs (spawned on first use, pinned off the timed CPUs)."""
        if self.inputs_worker is not None and self.inputs_worker.status is None:
            return self.inputs_worker
        self.inputs_worker = self.pool.spawn_loaded(self.task, cpus=self.pool.free_cpus)
        return self.inputs_worker

    def copy_seconds(self, input_bytes: int, output_bytes: int) -> float:
        """The best time of one memory copy that moves as many bytes as a kernel must (it reads every input
        byte and writes every output byte: a copy of (in + out) / 2 bytes), measured in the model worker,
        on the timed CPUs, with the source written right before (like fresh inputs). Cached per size."""
        key = (input_bytes, output_bytes)
        if key not in self.floors:
            nbytes = max(1, (input_bytes + output_bytes) // 2)
            reply = self.call({"op": "bandwidth", "nbytes": nbytes, "repeats": 7})
            self.floors[key] = min(float(s) for s in reply["seconds"])
        return self.floors[key]

    def close(self) -> None:
        for h in (self.handle, self.inputs_worker, self.compiled_worker):
            if h is not None:
                h.close()


class ReferencePool:
    """The reference sandbox and the warm references of recent tasks."""

    def __init__(self, zygote_factory: Callable[[], Zygote], threads: int, memory_mb: int, load_timeout_s: float,
                 free_cpus: list[int]):
        self._zygote_factory = zygote_factory
        self.zygote: Zygote | None = None
        self.threads, self.memory_mb, self.load_timeout_s = threads, memory_mb, load_timeout_s
        self.free_cpus = free_cpus  # where the inputs workers run ([] = anywhere; then nothing is pipelined)
        self._refs: OrderedDict[tuple[str, int], Reference] = OrderedDict()

    def get(self, task: Task) -> Reference:
        key = (task.key, self.threads)
        ref = self._refs.get(key)
        if ref is not None:
            if ref.handle.status is None and alive(ref.handle):
                self._refs.move_to_end(key)
                return ref
            ref.close()  # its sandbox went away: start a fresh reference
            del self._refs[key]
        ref = Reference(self, task, self.spawn_loaded(task))
        self._refs[key] = ref
        while len(self._refs) > KEEP:
            _, old = self._refs.popitem(last=False)
            old.close()
        return ref

    def spawn_loaded(self, task: Task, cpus: list[int] | None = None) -> WorkerHandle:
        """A fresh reference worker with the task module loaded (TaskError if it does not load)."""
        if self.zygote is None or not self.zygote.alive():
            self.zygote = self._zygote_factory()
        handle = self.zygote.spawn("reference", self.memory_mb * 2, REFERENCE_CPU_S, fsize_mb=4096, cpus=cpus)
        try:
            reply = handle.call({"op": "load", "source": task.source, "threads": self.threads}, self.load_timeout_s)
        except (WorkerDied, WorkerTimeout, ProtocolError) as exc:
            tail = handle.stderr_tail()
            handle.close()
            raise TaskError(f"{task.path}: the task module could not be loaded: {exc}; {tail}") from None
        if not reply.get("ok"):
            handle.close()
            raise TaskError(f"{task.path}: the task module failed to load: {reply.get('error')}\n{reply.get('detail', '')}")
        return handle

    def close(self) -> None:
        for ref in self._refs.values():
            ref.close()
        self._refs.clear()


def alive(handle: WorkerHandle) -> bool:
    try:
        return bool(handle.call({"op": "ping"}, 10).get("ok"))
    except (WorkerDied, WorkerTimeout, SandboxError, ProtocolError):
        return False
