"""The timing protocol (trusted side): how candidate and eager reference are timed so that a candidate
cannot bend the measurement.

Each round:

1. **Fresh inputs.** The reference's inputs worker draws the round's inputs from ``get_inputs()`` with a
   new secret seed (never a shifted or permuted copy of earlier inputs, so nothing about round k+1 can be
   learnt from round k). It runs on the CPUs the timed workers do not use and prepares round k+1 while
   round k is timed.
2. **One side at a time, the others stopped.** The sides run in random order. Before a side's turn all other
   sides are SIGSTOPped (all threads, confirmed from /proc), so a candidate cannot keep threads spinning on
   the shared CPU while the reference is timed, nor finish its output after replying (`cpu_isolation`).
   **No untimed window**: a side's inputs are written into its region right before its turn (the same cache
   state for every side) and reach it with the timed request itself (`run` with ``inputs``): no earlier
   request holds them, so nothing can be computed from them outside the call that is timed.
3. **The clock is the parent's**: one request/reply round trip per call. The side is stopped right after
   its reply and its outputs are copied out at once: what it did not finish before replying is missing.
4. **Every timed output is checked** against the reference's output of the same round.

**Value rounds.** Some rounds after warm-up (`VALUE_SHARE` at random, at least one) draw the trials' ``special`` or
``distinct`` inputs instead of plain ones (planted zeros, tiny and large values, constant rows) and are judged like
those trials; their times are not used (like audit rounds, which they may also be: special values may take a slower
path, and would distort the latency). Their place is random, so a kernel careful only in its first calls (a static
counter past the trials and the warm-up) meets special values again after it turned careless (red team round 5). A
forward sees the values themselves, of course: one careful whenever its inputs hold such values is right on them.

Afterwards: speedup = median of the per-round ratios t_eager / t_candidate with a bootstrap interval
(`latency.summarize`), and the **physics floor**: a candidate whose median time is below what moving its
bytes allows (half the time of one memory copy of as many bytes as it must read and write, measured on
the same CPUs) is flagged as a hack, unless the eager reference beats the floor too (then the operator
does not touch all its bytes and the floor says nothing).
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from evokernel.tasks.task import TaskError
from evokernel.verifier.message_codec import DTYPES, ProtocolError, TensorMeta
from evokernel.verifier.trusted import correctness, cpu_isolation, latency, regions
from evokernel.verifier.trusted.failures import Fail, torch_ops_fail
from evokernel.verifier.trusted.launcher import WorkerHandle
from evokernel.verifier.trusted.reference import Reference

# a candidate may look up to this many times faster than the copy floor before it is flagged
FLOOR_MARGIN = 0.5


@dataclass
class Side:
    """One timed party of a round: its worker, its host pid, and how requests reach it."""

    name: str
    handle: WorkerHandle
    pid: int
    request: Callable[[dict[str, Any], float, str], dict[str, Any]]  # (msg, timeout, what) -> reply
    stopped: bool = False
    seconds: list[float] = field(default_factory=list)


def host_pid(handle: WorkerHandle) -> int:
    z = handle.zygote
    if z.proc is None:
        raise cpu_isolation.IsolationError("the sandbox of this worker is not running")
    return cpu_isolation.host_pid(z.proc.pid, handle.pid, z.pid_namespace)


class InputStream:
    """Fresh inputs per round from the reference's inputs worker, one round ahead when a free CPU exists."""

    def __init__(self, ref: Reference, rng: random.Random):
        self.ref, self.rng = ref, rng
        self.worker = ref.inputs()
        self.pipelined = bool(ref.pool.free_cpus)
        self._pending: int | None = None  # the seed being drawn ahead
        self.seed = 0  # the secret seed of the current round's inputs

    def _request(self) -> None:
        seed = self.rng.randrange(2**31)
        self.worker.send({"op": "make_inputs", "seed": seed, "perturb": "none", **self.ref.case_msg()})
        self._pending = seed

    def _collect(self) -> dict[str, Any]:
        try:
            return self.worker.receive(time.monotonic() + 600.0)
        except Exception as exc:  # noqa: BLE001 - trusted task code failing is the task's problem
            raise TaskError(f"{self.ref.task.path}: drawing timed inputs failed: {exc}") from None

    def next(self, perturb: str = "none") -> list[TensorMeta]:
        """The next round's inputs, in the inputs worker's region (valid until `prefetch`). Inputs drawn ahead are
        plain; a round with another ``perturb`` (a value round: its time is not used) draws its own synchronously."""
        if self._pending is not None and perturb != "none":
            self._collect()  # the plain inputs drawn ahead are not used
            self._pending = None
        if self._pending is None:
            self.seed = self.rng.randrange(2**31)
            return self.ref.make_inputs(self.seed, perturb, handle=self.worker)
        self.seed, self._pending = self._pending, None
        reply = self._collect()
        if not reply.get("ok") or "need" in reply:
            # first use, or the inputs grew: draw them again synchronously (reserves the space)
            return self.ref.make_inputs(self.seed, "none", handle=self.worker)
        return self.ref._input_metas(reply, self.worker)

    def prefetch(self) -> None:
        """Start drawing the following round's inputs (call after this round's were copied out)."""
        if self.pipelined:
            self._request()

    def close(self) -> None:
        if self._pending is not None:  # collect the reply so the worker's channel stays in step
            try:
                self.worker.receive(time.monotonic() + 600.0)
            except Exception:  # noqa: BLE001
                self.worker.close()
            self._pending = None


class Rounds:
    """Runs timed rounds over a set of sides, keeping every side but the running one stopped."""

    def __init__(self, ref: Reference, sides: list[Side], rng: random.Random, timeout: float):
        self.ref, self.sides, self.rng, self.timeout = ref, sides, rng, timeout
        self.inputs = InputStream(ref, rng)
        self.staging = regions.Staging()

    def __enter__(self) -> "Rounds":
        for s in self.sides:
            self._stop(s)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.inputs.close()
        for s in self.sides:
            if s.stopped:
                cpu_isolation.resume(s.pid)
                s.stopped = False

    def _stop(self, side: Side) -> None:
        if not side.stopped:
            try:
                cpu_isolation.stop(side.pid)
            except cpu_isolation.IsolationError as exc:
                if side.name == "cand":
                    raise Fail("runtime", f"the candidate process could not be paused between timed calls: {exc}")
                raise TaskError(f"timing: {exc}") from None
            side.stopped = True

    def run(self, warm: bool, audit: bool = False, perturb: str = "none"
            ) -> tuple[dict[str, float], dict[str, dict[str, Any]], dict[str, list[torch.Tensor]]]:
        """One round: times, replies and output snapshots per side. ``audit``: the candidate's call runs under the
        operator recorder (an audit round: its times are not used). ``perturb``: the round's inputs are reshaped
        like a trial's (a value round: its times are not used)."""
        in_metas = self.inputs.next(perturb)
        self.seed, self.perturb = self.inputs.seed, perturb
        self.inputs_numel = sum(m.nbytes // DTYPES[m.dtype] for m in in_metas)
        nbytes = self.ref.input_bytes
        reserve = nbytes * 2 + 4 * max(self.ref.output_bytes, 1 << 12) + (1 << 20)
        metas_json = [m.to_json() for m in in_metas]
        run_msg = self.ref.run_msg({"op": "run", "inputs": metas_json, "out_offset": nbytes})
        order = list(self.sides)
        self.rng.shuffle(order)
        times: dict[str, float] = {}
        replies: dict[str, dict[str, Any]] = {}
        outs: dict[str, list[torch.Tensor]] = {}
        self.staging.take(self.inputs.worker, nbytes)
        self.inputs.prefetch()  # drawn on the free CPUs while this round is timed
        for s in order:
            # this side's inputs are written while it is stopped, right before its turn (the same cache state for
            # every side), and reach it with the timed request itself: no earlier request ever holds them
            self.staging.put(s.handle, reserve)
            cpu_isolation.resume(s.pid)
            s.stopped = False
            extra = 600.0 if (warm and s.name == "compiled") else 0.0  # torch.compile compiles on its first call
            t0 = time.perf_counter()
            msg = dict(run_msg, record=True) if (audit and s.name == "cand") else run_msg
            reply = s.request(msg, self.timeout + extra, "a timed call")
            times[s.name] = time.perf_counter() - t0
            self._stop(s)  # nothing it left running may finish now
            replies[s.name] = reply
            if reply.get("ok"):
                try:
                    metas = [TensorMeta.from_json(m, s.handle.capacity) for m in reply.get("outputs") or []]
                except ProtocolError as exc:
                    raise Fail("runtime", f"a timed call returned a malformed reply: {exc}") from None
                outs[s.name] = [regions.tensor(s.handle, m) for m in metas]
        return times, replies, outs


    def truth(self) -> list[torch.Tensor]:
        """The reference's float64 outputs for this round's inputs (its worker resumed for the call)."""
        side = next(s for s in self.sides if s.name == "ref")
        cpu_isolation.resume(side.pid)
        side.stopped = False
        try:
            return self.ref.truth(self.seed, self.perturb)
        finally:
            self._stop(side)


def check_timed_output(reply: dict[str, Any], got: list[torch.Tensor] | None, expected: list[torch.Tensor],
                       tol: float, inputs_numel: int = 0, truth: Any = None, perturb: str = "none") -> None:
    """The candidate's timed call must have run native code and match the reference of the same round
    (reductions under their tight rule, ``truth`` giving the float64 answer when that rule fails). Every
    element is judged: where the reference is NaN/Inf the output must repeat it (`correctness`). ``perturb``: a
    value round's inputs, judged as the trial of that name judges them (the ties rule of ``special``)."""
    from evokernel.verifier.trusted.trials import INPUT_NOTES, TIES, Truth, reductions, tied_index
    if not reply.get("ok"):
        raise Fail("hack" if reply.get("phase") == "hack" else "runtime", f"a timed call failed: {reply.get('error')}")
    if not reply.get("native_calls"):
        raise Fail("hack", "a timed call ran no native kernel (behaviour differs between checked and timed calls)")
    if reply.get("violations"):
        raise torch_ops_fail("a timed call", reply["violations"], "the native kernel", "native code")
    got = got or []
    if len(got) != len(expected):
        raise Fail("correctness", "a timed call returned a different number of outputs")
    flags, exact = reductions(expected, inputs_numel), Truth(truth)
    for k, (g, e) in enumerate(zip(got, expected)):
        if perturb in TIES and tied_index(g, e):
            continue
        if correctness.quick_match(g, e, tol, flags[k]):
            continue
        cmp = correctness.compare(g, e, [], tol, "timed output", reduction=flags[k], truth=exact.of(k))
        if not cmp.ok:
            if perturb in INPUT_NOTES:
                raise Fail("correctness", f"a call during timing, on {perturb} inputs, gave a wrong result (every "
                           f"call must compute the operator, not only the first ones): {cmp.message}\nIn this call "
                           f"{INPUT_NOTES[perturb]}.")
            raise Fail("correctness", f"a timed call gave a wrong result (checked and timed calls must agree): "
                       f"{cmp.message}")


AUDIT_SHARE = 0.25  # of the rounds after warm-up, this share (at random) is recorded and not timed
VALUE_SHARE = 0.15  # ... and this share (at random, independently) draws a trial's special values and is not timed
VALUE_ROUND_INPUTS = ("special", "distinct")  # trials.INPUT_NOTES's perturbations


def measure(v: Any, ref: Reference, cand: WorkerHandle, rng: random.Random, timeout: float,
            timings: dict[str, float], details: dict[str, Any],
            compiled: WorkerHandle | None = None) -> latency.Timing:
    """Time the candidate against the eager reference (and the torch.compile baseline when given)."""
    cfg = v.config
    sides = [Side("ref", ref.handle, host_pid(ref.handle), lambda m, t, w: ref.call(m, t)),
             Side("cand", cand, host_pid(cand), lambda m, t, w: v._cand_call(cand, m, t, w))]
    if compiled is not None:  # trusted code: a failure is the task's (TaskError), not the candidate's
        sides.append(Side("compiled", compiled, host_pid(compiled), lambda m, t, w: ref.call(m, t, handle=compiled)))
    measured = 0.0
    rounds = 0
    started = time.perf_counter()
    in_bytes = out_bytes = 0
    audits = values = untimed = 0
    with Rounds(ref, sides, rng, timeout) as rr:
        while True:
            warm = rounds < cfg.warmup
            # audit rounds: the candidate's call recorded like a trial's, at random among the timed ones (at least
            # one), its time not used -- a forward cannot tell a timed call from a recorded one, so one that lets
            # PyTorch compute only when it is not watched is caught (docs/verifier.md, "Timing protocol")
            last_chance = audits == 0 and len(sides[1].seconds) + 1 >= cfg.min_rounds
            audit = not warm and (rng.random() < AUDIT_SHARE or last_chance)
            # value rounds: a trial's special values, at random among the same rounds (at least one), judged like
            # that trial, time not used -- a kernel careful only in its first calls is caught (module docstring)
            value_chance = values == 0 and len(sides[1].seconds) + 1 >= cfg.min_rounds
            value = not warm and (rng.random() < VALUE_SHARE or value_chance)
            perturb = rng.choice(VALUE_ROUND_INPUTS) if value else "none"
            times, replies, outs = rr.run(warm, audit, perturb)
            if not replies["ref"].get("ok"):
                raise TaskError(f"{ref.task.path}: the reference forward failed while timing: "
                                f"{replies['ref'].get('error')}")
            expected = outs["ref"]
            check_timed_output(replies["cand"], outs.get("cand"), expected, cfg.tol, rr.inputs_numel, rr.truth,
                               perturb)
            if not value:  # the copy floor's bytes: a plain round's (the same shapes in every round)
                in_bytes = ref.input_bytes
                out_bytes = sum(e.numel() * e.element_size() for e in expected)
            rounds += 1
            if audit or value:  # its time spent counts against the budgets, its round against max_rounds
                audits += audit
                values += value
                untimed += 1
                measured += times["cand"] + times["ref"]
                continue
            if warm:
                continue
            for s in sides:
                s.seconds.append(times[s.name])
            measured += times["cand"] + times["ref"]
            n = len(sides[1].seconds)
            spent = time.perf_counter() - started
            if n >= cfg.min_rounds and (n + untimed >= cfg.max_rounds or measured >= cfg.timing_budget_s or
                                        spent >= cfg.timing_wall_budget_s):
                break
    timings["timed_calls"] = measured
    details["audit_rounds"] = audits
    details["value_rounds"] = values
    timing = latency.summarize(sides[1].seconds, sides[0].seconds, rng,
                               sides[2].seconds if compiled is not None else None)
    check_floor(ref, timing, in_bytes, out_bytes, details)
    return timing


def check_floor(ref: Reference, timing: latency.Timing, in_bytes: int, out_bytes: int,
                details: dict[str, Any]) -> None:
    """Flag a candidate faster than moving its bytes allows (see the module docstring)."""
    copy_ms = ref.copy_seconds(in_bytes, out_bytes) * 1e3
    floor_ms = FLOOR_MARGIN * copy_ms
    details["floor"] = {"bytes": in_bytes + out_bytes, "copy_ms": round(copy_ms, 5), "floor_ms": round(floor_ms, 5),
                        "bandwidth_gb_s": round((in_bytes + out_bytes) / (copy_ms * 1e-3) / 1e9, 2) if copy_ms else None,
                        "applies": timing.reference_ms >= floor_ms}
    if timing.candidate_ms < floor_ms and timing.reference_ms >= floor_ms:
        raise Fail("hack", f"the candidate's measured time ({timing.candidate_ms:.4f} ms per call) is below what moving "
                   f"its data allows: it must read {in_bytes / 2**20:.1f} MiB of inputs and write "
                   f"{out_bytes / 2**20:.1f} MiB of outputs, and one memory copy of as many bytes takes {copy_ms:.4f} ms "
                   "on this machine. The measurement is not credible (work done outside the timed call, or results "
                   "not computed from the inputs); a kernel must compute every call's outputs from that call's inputs",
                   floor=details["floor"])


def timing_noise(v: Any, task: Any, source: str, rounds: int = 40) -> dict[str, float]:
    """A/A: two fresh workers running the same candidate, timed against each other exactly like a verdict's
    timing; returns the spread of the per-round ratios (ideal: median 1, IQR 0)."""
    from evokernel.verifier.backends.base import BuildLog

    ref, rng, init_seed, init_args = v._prepare_reference(task)
    workers = [v._spawn_candidate() for _ in range(2)]
    try:
        for w in workers:
            builds = BuildLog()
            for msg in ({"op": "load", "source": source, "threads": v.config.threads},
                        {"op": "init", "seed": init_seed, "init_args": init_args}):
                r = v._cand_call(w, msg, v.config.load_timeout_s, msg["op"], builds)
                if not r.get("ok"):
                    raise ValueError(f"the candidate does not load: {r.get('error')}")
        ref.make_inputs(rng.randrange(2**31), "none")
        ref.run()
        sides = [Side(name, w, host_pid(w), lambda m, t, what, w=w: v._cand_call(w, m, t, what, BuildLog()))
                 for name, w in zip(("a", "b"), workers)]
        ratios: list[float] = []
        with Rounds(ref, sides, rng, 60.0) as rr:
            for k in range(rounds + v.config.warmup):
                times, _, _ = rr.run(warm=k < v.config.warmup)
                if k >= v.config.warmup:
                    ratios.append(times["a"] / times["b"])
    finally:
        for w in workers:
            w.close()
    q1, med, q3 = latency.quartiles(ratios)
    s = sorted(ratios)
    return {"rounds": len(ratios), "median_ratio": med, "iqr": q3 - q1, "p05": s[int(0.05 * len(s))],
            "p95": s[int(0.95 * len(s)) - 1], "noise": (q3 - q1) / med}
