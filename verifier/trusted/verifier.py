"""The trusted parent: runs the gates in order and decides the verdict.

    hack (static rules) -> compile (native builds, import) -> correctness (+ dynamic hack checks)
    -> latency (feasible candidates only)

It owns the secret seeds, gets inputs and expected outputs from a *reference* worker (trusted
task code, sandboxed like the candidate so both are timed alike), hands each model its own copy
of the inputs, compares in this process, keeps the clock, and never imports candidate code.
"""
from __future__ import annotations

import dataclasses
import random
import secrets
import statistics
import signal
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from evokernel.tasks import Task, TaskError
from evokernel.verifier.backends.base import BuildLog
from evokernel.verifier.backends.cpu import make_backend
from evokernel.verifier.protocol import ProtocolError, TensorMeta, align
from evokernel.verifier.trusted import correctness, latency, native_build
from evokernel.verifier.trusted.launcher import SandboxError, WorkerDied, WorkerHandle, WorkerTimeout, Zygote
from evokernel.verifier.verdict import Verdict

_DTYPES = {name: getattr(torch, name) for name in ("float32", "float64", "float16", "bfloat16", "int64", "int32",
                                                   "int16", "int8", "uint8", "bool")}


@dataclass
class VerifyConfig:
    tol: float = correctness.DEFAULT_TOL  # atol = rtol; 1e-4 in strict mode
    trials: int = 5  # standard trials, fresh secret seed each
    perturbations: tuple[str, ...] = ("scale", "negate", "shift")  # one extra trial each
    threads: int = 1  # both sides timed at this thread count
    timing: bool = True
    warmup: int = 3
    min_rounds: int = 10
    max_rounds: int = 40
    timing_budget_s: float = 0.5  # stop adding rounds once this much time was measured...
    timing_wall_budget_s: float = 1.5  # ...or once the timing stage took this long (after min_rounds)
    compile_baseline: bool = False
    memory_mb: int = 4096  # address space a worker may add on top of the warm interpreter
    cpu_s: int = 600  # CPU seconds per worker
    run_timeout_s: float = 20.0  # per forward call, plus 50x the reference time
    load_timeout_s: float = 120.0  # import + construction, not counting native builds
    build_timeout_s: float = 600.0
    seed: int | None = None  # None: secret seeds from the OS
    static_rules: bool = True  # False skips the static hack rules (to test the deeper layers alone)
    sandbox: str | None = None  # "bwrap" or "rlimits"; None: bwrap when installed (EVOKERNEL_SANDBOX overrides)
    cache_dir: Path = field(default_factory=native_build.default_cache_dir)


# reference workers run trusted task code and live across many verdicts: no CPU-seconds cap
# (a long evaluation would otherwise kill them); wall-clock deadlines still apply to every call
REFERENCE_CPU_S = 10**8


class _Fail(Exception):
    def __init__(self, gate: str, feedback: str, **details: Any):
        super().__init__(feedback)
        self.gate, self.feedback, self.details = gate, feedback, details


_SIGNALS = {
    signal.SIGSEGV: "segmentation fault (invalid memory access in native code)",
    signal.SIGBUS: "bus error (misaligned or invalid memory access)",
    signal.SIGILL: "illegal instruction",
    signal.SIGFPE: "arithmetic exception (e.g. integer division by zero)",
    signal.SIGABRT: "aborted (e.g. an uncaught C++ exception or std::bad_alloc)",
    signal.SIGXFSZ: "file size limit exceeded (too much output)",
}


def _classify_death(status: dict[str, Any], stderr: str, where: str) -> _Fail:
    tail = f"\nstderr (last lines):\n{stderr.strip()[-1200:]}" if stderr.strip() else ""
    sig = status.get("signal")
    if sig == signal.SIGXCPU:
        return _Fail("timeout", f"the candidate exceeded its CPU-time limit during {where}{tail}", status=status)
    if sig == signal.SIGKILL:  # not by us (our kills are timeouts): the OOM killer or the hard CPU limit
        return _Fail("runtime", f"the candidate process was killed during {where} (out of memory or CPU time?)"
                     f"{tail}", status=status)
    if sig is not None:
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        what = _SIGNALS.get(sig, "killed by a signal")
        return _Fail("runtime", f"the candidate process crashed during {where}: {name}, {what}{tail}", status=status)
    if "exited" in status:
        return _Fail("runtime", f"the candidate process exited with code {status['exited']} during {where} "
                     f"(a kernel must return, not exit){tail}", status=status)
    return _Fail("runtime", f"the candidate process stopped answering during {where}{tail}", status=status)


_INPUTS_MODIFIED = ("forward modified its input tensor(s); a kernel must leave its inputs unchanged (write "
                    "results into a new output tensor)")


def _torch_ops_fail(label: str, violations: dict[str, int], outside: str, home: str) -> _Fail:
    """The dynamic anti-hack finding: ATen compute operators dispatched during forward."""
    ops = ", ".join(f"aten::{k} x{v}" for k, v in sorted(violations.items()))
    return _Fail("hack", f"{label}: PyTorch compute ran during forward outside {outside}: {ops}. All computation "
                 f"must happen in {home}; forward may only allocate outputs, take views/reshapes and call "
                 ".contiguous()", torch_ops=violations)


def _shapes_key(task: Task, inputs: list[torch.Tensor]) -> tuple[Any, ...]:
    """What a reference measurement depends on: the task and its input shapes and dtypes."""
    return task.key, tuple(tuple(t.shape) for t in inputs), tuple(str(t.dtype) for t in inputs)


def _sim_warnings(trials: list[list[dict[str, Any]]]) -> list[str]:
    """Distinct warning-level emulator findings of the correctness trials (formatted for feedback)."""
    from evokernel.verifier.backends.ascend_sim.report import format_violation

    seen: dict[tuple[str, str, int], str] = {}
    for reports in trials:
        for r in reports:
            for v in r.get("violations") or []:
                key = (str(v.get("rule")), str(v.get("file")), int(v.get("line") or 0))
                if v.get("severity") == "warning" and key not in seen:
                    seen[key] = format_violation(v)
    return list(seen.values())


def _sim_summary(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """The structured part of a failed emulated run: status and the rules broken (details.emulator)."""
    last = reports[-1]
    return {"status": last.get("status"), "error": last.get("error", ""),
            "violations": [{k: v.get(k) for k in ("rule", "severity", "file", "line", "block", "count", "message")}
                           for r in reports for v in r.get("violations") or []][:50]}


def _tensor(handle: WorkerHandle, meta: TensorMeta) -> torch.Tensor:
    """A private copy (one memcpy) of a tensor in a worker's shared region."""
    dtype = _DTYPES[meta.dtype]
    if meta.nbytes == 0:
        return torch.empty(meta.shape, dtype=dtype)
    view = torch.frombuffer(handle.mm, dtype=dtype, count=meta.nbytes // dtype.itemsize, offset=meta.offset)
    out = view.clone().view(meta.shape)
    del view  # release the buffer export so the region can be resized later
    return out


def _same_bytes(h1: WorkerHandle, m1: TensorMeta, h2: WorkerHandle, m2: TensorMeta) -> bool:
    """Byte equality of two tensors in two shared regions, compared in place."""
    if m1.nbytes != m2.nbytes:
        return False
    if m1.nbytes == 0:
        return True
    a = torch.frombuffer(h1.mm, dtype=torch.uint8, count=m1.nbytes, offset=m1.offset)
    b = torch.frombuffer(h2.mm, dtype=torch.uint8, count=m2.nbytes, offset=m2.offset)
    same = torch.equal(a, b)
    del a, b  # release the buffer exports
    return same


def _keep_freed_memory() -> None:
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


class _Reference:
    """A reference worker for one task (kept warm across candidates of that task)."""

    def __init__(self, handle: WorkerHandle, task: Task):
        self.handle, self.task = handle, task
        self.input_bytes = 0
        self.output_bytes = 0
        self.eager_ops: list[dict[str, Any]] | None = None  # recorded ATen ops of one forward (model timing)


class Verifier:
    """Judges candidates for one backend. Not thread-safe: use one per worker thread/process."""

    def __init__(self, backend: str = "cpu", config: VerifyConfig | None = None):
        self.config = config or VerifyConfig()
        self.config.cache_dir = Path(self.config.cache_dir)
        self.config.cache_dir.mkdir(parents=True, exist_ok=True)
        self.backend = make_backend(backend, self.config.cache_dir, self.config.build_timeout_s)
        self._ref_zygote: Zygote | None = None
        self._cand_zygote: Zygote | None = None
        self._refs: OrderedDict[tuple[str, int], _Reference] = OrderedDict()
        self._builds = BuildLog()  # the native builds of the verdict in progress
        self._reports: list[list[dict[str, Any]]] = []  # emulator reports per correctness trial

    # --- lifecycle ----------------------------------------------------------------------------
    def start(self) -> "Verifier":
        """Start both sandboxes (in parallel; ~2-3 s, once).

        The parent's own torch work (comparisons) runs on one thread: on a busy 2-core machine a
        second OpenMP thread makes it 3-5x slower, and the cores belong to the timed workers.
        """
        torch.set_num_threads(1)
        _keep_freed_memory()
        if self._ref_zygote is None or not self._ref_zygote.alive():
            inductor = self.config.cache_dir / "inductor"
            inductor.mkdir(parents=True, exist_ok=True)
            self._ref_zygote = Zygote(self.config.threads, readonly=[self.config.cache_dir], label="reference",
                                      writable=[inductor],  # torch.compile baseline cache, shared across runs
                                      env={"TORCHINDUCTOR_CACHE_DIR": str(inductor)}, mode=self.config.sandbox)
        if self._cand_zygote is None or not self._cand_zygote.alive():
            self._cand_zygote = Zygote(self.config.threads, readonly=[self.config.cache_dir], label="candidate",
                                       mode=self.config.sandbox)
        # launch both from this thread (see Zygote.launch), then wait: they boot in parallel
        pending = [z for z in (self._ref_zygote, self._cand_zygote) if not z.alive()]
        for z in pending:
            z.launch()
        for z in pending:
            z.wait_ready()
        self.backend.start(self.config.sandbox)  # e.g. ascend: locate CANN, claim an NPU
        return self

    def close(self) -> None:
        for ref in self._refs.values():
            ref.handle.close()
        self._refs.clear()
        for z in (self._ref_zygote, self._cand_zygote):
            if z is not None:
                z.close()
        self.backend.close()

    def __enter__(self) -> "Verifier":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def sandbox(self) -> str:
        return self._cand_zygote.mode if self._cand_zygote else "not started"

    # --- the reference ------------------------------------------------------------------------
    def _reference(self, task: Task) -> _Reference:
        key = (task.key, self.config.threads)
        ref = self._refs.get(key)
        if ref is not None:
            if ref.handle.status is None and self._alive(ref.handle):
                self._refs.move_to_end(key)
                return ref
            ref.handle.close()  # its sandbox went away: start a fresh reference
            del self._refs[key]
        ref = _Reference(self._spawn_reference(task), task)
        self._refs[key] = ref
        while len(self._refs) > 4:
            _, old = self._refs.popitem(last=False)
            old.handle.close()
        return ref

    def _prepare_reference(self, task: Task) -> tuple[_Reference, random.Random, int, list[Any]]:
        """The task's reference with its Model built from a fresh secret seed; returns the reference,
        the verdict's secret random stream, the init seed and the constructor arguments."""
        self.start()
        ref = self._reference(task)
        rng = random.Random(self.config.seed if self.config.seed is not None else secrets.randbits(64))
        init_seed = rng.randrange(2**31)
        init_args = self._ref_call(ref, {"op": "init", "seed": init_seed})["init_args"]
        return ref, rng, init_seed, init_args

    def _spawn_reference(self, task: Task) -> WorkerHandle:
        """A fresh reference worker with the task module loaded (TaskError if it does not load)."""
        self.start()
        assert self._ref_zygote is not None
        handle = self._ref_zygote.spawn("reference", self.config.memory_mb * 2, REFERENCE_CPU_S, fsize_mb=4096)
        try:
            reply = handle.call({"op": "load", "source": task.source, "threads": self.config.threads},
                                self.config.load_timeout_s)
        except (WorkerDied, WorkerTimeout) as exc:
            handle.close()
            raise TaskError(f"{task.path}: the task module could not be loaded: {exc}; {handle.stderr_tail()}") from None
        if not reply.get("ok"):
            handle.close()
            raise TaskError(f"{task.path}: the task module failed to load: {reply.get('error')}\n{reply.get('detail', '')}")
        return handle

    @staticmethod
    def _alive(handle: WorkerHandle) -> bool:
        try:
            return bool(handle.call({"op": "ping"}, 10).get("ok"))
        except (WorkerDied, WorkerTimeout, SandboxError, ProtocolError):
            return False

    def _ref_call(self, ref: _Reference, msg: dict[str, Any], timeout: float = 600.0) -> dict[str, Any]:
        try:
            reply = ref.handle.call(msg, timeout)
        except (WorkerDied, WorkerTimeout) as exc:
            ref.handle.close()
            raise TaskError(f"{ref.task.path}: the reference failed ({msg['op']}): {exc}; "
                            f"{ref.handle.stderr_tail()}") from None
        if not reply.get("ok"):
            raise TaskError(f"{ref.task.path}: the reference failed ({msg['op']}): {reply.get('error')}\n"
                            f"{reply.get('detail', '')}")
        return reply

    def _make_inputs(self, ref: _Reference, seed: int, perturb: str) -> list[TensorMeta]:
        for _ in range(8):
            reply = self._ref_call(ref, {"op": "make_inputs", "seed": seed, "perturb": perturb})
            if "need" in reply:
                ref.handle.ensure_capacity(int(reply["need"]) * 2 + (1 << 20))
                continue
            metas = [TensorMeta.from_json(m, ref.handle.capacity) for m in reply["inputs"]]
            ref.input_bytes = align(max((m.offset + m.nbytes for m in metas), default=0))
            return metas
        raise TaskError(f"{ref.task.path}: could not reserve memory for the inputs")

    def _ref_run(self, ref: _Reference, timeout: float = 600.0) -> tuple[list[TensorMeta], dict[str, Any]]:
        for _ in range(8):
            try:
                reply = ref.handle.call({"op": "run", "out_offset": ref.input_bytes}, timeout)
            except (WorkerDied, WorkerTimeout) as exc:
                ref.handle.close()
                raise TaskError(f"{ref.task.path}: the reference crashed: {exc}") from None
            if reply.get("ok"):
                metas = [TensorMeta.from_json(m, ref.handle.capacity) for m in reply["outputs"]]
                ref.output_bytes = max(ref.output_bytes, sum(align(m.nbytes) for m in metas))
                return metas, reply
            if "larger than the space" in str(reply.get("error")):
                ref.handle.ensure_capacity(ref.handle.capacity * 4 + (1 << 20))
                continue
            raise TaskError(f"{ref.task.path}: the reference forward failed: {reply.get('error')}\n{reply.get('detail', '')}")
        raise TaskError(f"{ref.task.path}: the reference output does not fit in memory")

    # --- one verdict --------------------------------------------------------------------------
    def verify(self, task: Task, source: str) -> Verdict:
        """Judge one candidate source for one task. Raises TaskError only for a broken task."""
        t_start = time.perf_counter()
        timings: dict[str, float] = {}
        details: dict[str, Any] = {"tolerance": self.config.tol, "threads": self.config.threads}
        gates: dict[str, bool | None] = {"hack": None, "compile": None, "correctness": None}

        def verdict(gate: str | None, feedback: str, **extra: Any) -> Verdict:
            timings["total"] = time.perf_counter() - t_start
            timings["overhead"] = max(0.0, timings["total"] - sum(
                timings.get(k, 0.0) for k in ("compile", "correctness_trials", "timed_calls")))
            details["sandbox"] = self.sandbox
            return Verdict(feasible=gate is None, failed_gate=gate, feedback=feedback, task=task.name,
                           backend=self.backend.name, gates=gates, timings=timings, details=details, **extra)

        # gate 1a: static rules (before anything runs)
        t0 = time.perf_counter()
        try:
            findings = self.backend.static_check(source) if self.config.static_rules else []
        except SyntaxError as exc:
            gates["hack"] = True
            gates["compile"] = False
            return verdict("compile", f"candidate.py:{exc.lineno}: error: {exc.msg}")
        timings["hack_static"] = time.perf_counter() - t0
        structure = [f for f in findings if f.rule == "structure"]
        findings = [f for f in findings if f.rule != "structure"]
        if findings:
            gates["hack"] = False
            details["findings"] = [str(f) for f in findings]
            return verdict("hack", "The candidate breaks the verifier's rules:\n" +
                           "\n".join(str(f) for f in findings[:12]))
        if structure:  # e.g. no ModelNew: the candidate cannot be built into a model at all
            gates["hack"] = True
            gates["compile"] = False
            return verdict("compile", "\n".join(f.message for f in structure))

        ref, rng, init_seed, init_args = self._prepare_reference(task)

        builds = self._builds = BuildLog()
        if self.backend.timing_mode == "device":  # the backend runs the candidate itself (ascend: on an NPU)
            cand = None
            judge = lambda: self._judge_device(task, source, ref, rng, init_seed, init_args, gates, timings,  # noqa: E731
                                               details)  # noqa: E731
        else:
            assert self._cand_zygote is not None
            t0 = time.perf_counter()
            try:
                cand = self._cand_zygote.spawn("candidate", self.config.memory_mb, self.config.cpu_s)
            except SandboxError:
                self._cand_zygote.close()
                cand = self._cand_zygote.spawn("candidate", self.config.memory_mb, self.config.cpu_s)
            timings["spawn"] = time.perf_counter() - t0
            judge = lambda: self._judge(task, source, ref, cand, rng, init_seed, init_args, gates, timings,  # noqa: E731
                                        details)
        try:
            timing = judge()
        except _Fail as f:
            details.update(f.details)
            if f.gate == "hack":
                gates["hack"] = False
            elif f.gate == "compile":
                gates["compile"] = False
            elif f.gate == "correctness":
                gates["correctness"] = False
            return verdict(f.gate, f.feedback)
        finally:
            timings["compile"] = builds.seconds
            details["native_builds"] = {"count": builds.builds, "cached": builds.cached}
            if cand is not None:
                status = cand.close()
                if status.get("stray_killed"):
                    details["stray_processes_killed"] = status["stray_killed"]
        gates["correctness"] = True
        if timing is None:
            fb = "feasible (timing skipped)"
            if details.get("emulator_warnings"):
                fb += "\nemulator warnings (allowed, but check them):\n" + "\n".join(details["emulator_warnings"][:6])
            return verdict(None, fb)
        extra = dict(latency_ms=timing.candidate_ms, reference_ms=timing.reference_ms, speedup=timing.speedup,
                     noise=timing.noise, speedup_ci=(timing.ci_low, timing.ci_high),
                     compile_baseline_ms=timing.compile_ms, speedup_vs_compile=timing.speedup_vs_compile,
                     latency_kind=timing.kind)
        if timing.kind == "estimate":
            details["timing"] = {"kind": "estimate", "model": f"{self.backend.name} latency model (modelled, not "
                                 "measured): emulator pipe schedule of the kernel vs one NPU kernel per eager "
                                 "ATen operator, same hardware constants"}
            fb = (f"feasible: estimated {timing.candidate_ms * 1e3:.2f} us vs eager estimate "
                  f"{timing.reference_ms * 1e3:.2f} us (modelled speedup {timing.speedup:.2f}x)")
            if details.get("profile"):
                fb += "\nprofile (modelled):\n" + details["profile"]
        elif self.backend.timing_mode == "device":  # _judge_device described its protocol in details["timing"]
            fb = (f"feasible: {timing.candidate_ms:.4f} ms vs eager {timing.reference_ms:.4f} ms on "
                  f"{details.get('ascend', {}).get('device', 'the device')} (measured, speedup {timing.speedup:.2f}x"
                  f", {details['timing'].get('protocol', '')})")
            if details.get("profile"):
                fb += "\nprofile (measured by msprof):\n" + details["profile"]
        else:
            details["timing"] = {"rounds": timing.rounds, "warmup": self.config.warmup, "statistic":
                                 "median of per-round ratios t_eager/t_candidate, interleaved, fresh inputs per round",
                                 "clock": "parent-side round trip (includes copying the output out)"}
            fb = (f"feasible: {timing.candidate_ms:.3f} ms vs eager {timing.reference_ms:.3f} ms "
                  f"(speedup {timing.speedup:.2f}x, noise {timing.noise:.2f})")
        if details.get("emulator_warnings"):
            fb += "\nemulator warnings (allowed, but check them):\n" + "\n".join(details["emulator_warnings"][:6])
        return verdict(None, fb, **extra)

    def _cand_call(self, cand: WorkerHandle, msg: dict[str, Any], timeout: float, where: str,
                   builds: BuildLog | None = None) -> dict[str, Any]:
        """One request to a candidate worker; native builds it asks for are served and logged in
        ``builds`` (default: the log of the verdict in progress)."""
        log = builds if builds is not None else self._builds

        def on_build(req: dict[str, Any]) -> dict[str, Any]:
            return self.backend.handle_build(req, log, self.config.static_rules)

        try:
            reply = cand.call(msg, timeout, on_build)
        except WorkerTimeout:
            cand.kill()
            raise _Fail("timeout", f"the candidate did not finish {where} within {timeout:.1f} s "
                        "(infinite loop or far too slow)") from None
        except WorkerDied as exc:
            raise _classify_death(exc.status, cand.stderr_tail(), where) from None
        except ProtocolError as exc:
            cand.kill()
            raise _Fail("runtime", f"the candidate broke the worker protocol during {where}: {exc}") from None
        self._check_stdout(cand, where)
        return reply

    @staticmethod
    def _check_stdout(cand: WorkerHandle, where: str) -> None:
        size, text = cand.stdout(400)
        if size:
            raise _Fail("runtime", f"the candidate wrote {size} bytes to stdout during {where}: {text!r}. "
                        "Kernels must not print to stdout (write debugging output to stderr)")

    def _judge(self, task: Task, source: str, ref: _Reference, cand: WorkerHandle, rng: random.Random,
               init_seed: int, init_args: list[Any], gates: dict[str, bool | None],
               timings: dict[str, float], details: dict[str, Any]) -> latency.Timing | None:
        cfg = self.config
        builds = self._builds
        # gate 2: compile (native builds happen while the candidate module is imported)
        t0 = time.perf_counter()
        reply = self._cand_call(cand, {"op": "load", "source": source, "threads": cfg.threads,
                                       **self.backend.load_message()}, cfg.load_timeout_s, "import")
        timings["load"] = time.perf_counter() - t0 - builds.seconds
        if builds.hack:
            raise _Fail("hack", "The native source breaks the verifier's rules:\n" + "\n".join(builds.hack[:8]))
        gates["hack"] = None  # the dynamic half is decided during the correctness trials
        if builds.errors:
            raise _Fail("compile", "Native build failed:\n" + builds.errors[-1])
        if not reply.get("ok"):
            msg = f"importing the candidate failed: {reply.get('error')}"
            if reply.get("detail"):
                msg += "\n" + str(reply["detail"])
            raise _Fail("compile", msg)
        gates["compile"] = True

        reply = self._cand_call(cand, {"op": "init", "seed": init_seed, "init_args": init_args},
                                cfg.load_timeout_s, "ModelNew construction")
        if not reply.get("ok"):
            raise _Fail("runtime", f"constructing ModelNew{tuple(init_args)} failed: {reply.get('error')}\n"
                        f"{reply.get('detail', '')}".strip())

        # gate 3: correctness, with the dynamic anti-hack checks on every trial
        self._reports = []
        plan = [("none", rng.randrange(2**31)) for _ in range(cfg.trials)]
        plan += [(p, rng.randrange(2**31)) for p in cfg.perturbations]
        t0 = time.perf_counter()
        ref_s: list[float] = []
        passed, skipped = 0, []
        for i, (perturb, seed) in enumerate(plan):
            label = f"trial {i + 1}" + ("" if perturb == "none" else f" ({perturb}d inputs)")
            in_metas = self._make_inputs(ref, seed, perturb)
            t_ref = time.perf_counter()
            out_metas, _ = self._ref_run(ref)
            ref_s.append(time.perf_counter() - t_ref)
            expected = [_tensor(ref.handle, m) for m in out_metas]
            if any(e.is_floating_point() and not bool(torch.isfinite(e).all()) for e in expected):
                skipped.append(label)
                continue
            inputs = [_tensor(ref.handle, m) for m in in_metas]
            self._check_trial(cand, ref, in_metas, inputs, expected, label, late_check=(i == 0),
                              timeout=cfg.run_timeout_s + 50 * ref_s[-1])
            passed += 1
        timings["correctness_trials"] = time.perf_counter() - t0
        details["trials"] = {"passed": passed, "skipped_nonfinite_reference": skipped}
        if passed == 0:
            raise TaskError(f"{task.path}: the reference output is NaN/Inf on every trial")
        gates["hack"] = True

        warnings = _sim_warnings(self._reports)
        if warnings:
            details["emulator_warnings"] = warnings
        if not cfg.timing:
            return None
        if self.backend.timing_mode == "model":
            return self._model_timing(ref, details, timings)
        t0 = time.perf_counter()
        compiled = self._compiled_baseline(task, init_seed) if cfg.compile_baseline else None
        try:
            timing = self._time(ref, cand, rng, cfg.run_timeout_s + 50 * max(ref_s), timings, compiled)
        finally:
            if compiled is not None:
                compiled.close()
        timings["timing"] = time.perf_counter() - t0
        return timing

    def _place_inputs(self, ref: _Reference, cand: WorkerHandle, in_metas: list[TensorMeta]) -> int:
        """Copy the input bytes into the candidate's region; returns the candidate's output offset."""
        out_offset = ref.input_bytes
        cand.ensure_capacity(out_offset * 2 + 4 * max(ref.output_bytes, 1 << 12) + (1 << 20))
        assert cand.mm is not None and ref.handle.mm is not None
        with memoryview(cand.mm) as dst, memoryview(ref.handle.mm) as src:
            dst[0:out_offset] = src[0:out_offset]  # one memcpy
        return out_offset

    def _check_trial(self, cand: WorkerHandle, ref: _Reference, in_metas: list[TensorMeta],
                     inputs: list[torch.Tensor], expected: list[torch.Tensor], label: str, late_check: bool,
                     timeout: float) -> None:
        out_offset = self._place_inputs(ref, cand, in_metas)
        metas_json = [m.to_json() for m in in_metas]
        reply = self._cand_call(cand, {"op": "set_inputs", "inputs": metas_json}, timeout, label)
        if not reply.get("ok"):
            raise _Fail("runtime", f"{label}: the candidate worker failed to take its inputs: {reply.get('error')}")
        reply = self._cand_call(cand, {"op": "run", "record": True, "return_inputs": True, "out_offset": out_offset},
                                timeout, f"forward ({label})")
        reports = reply.get("native_reports")
        if isinstance(reports, list):
            self._reports.append(reports)
        if not reply.get("ok"):
            gate = "correctness" if reply.get("phase") == "output" else "runtime"
            extra = {"emulator": _sim_summary(reports)} if isinstance(reports, list) and reports else {}
            raise _Fail(gate, f"{label}: forward failed: {reply.get('error')}\n{reply.get('detail', '')}".strip(),
                        **extra)
        if isinstance(reports, list) and reports:
            # the worker raises on a broken rule; the parent judges the reports again all the same
            from evokernel.verifier.backends.ascend_sim.report import judge_report

            broken = [fb for fb in (judge_report(r) for r in reports if isinstance(r, dict)) if fb]
            if broken or not all(isinstance(r, dict) for r in reports):
                raise _Fail("runtime", f"{label}: {broken[0] if broken else 'malformed emulator report'}",
                            emulator=_sim_summary([r for r in reports if isinstance(r, dict)] or [{}]))
        violations = reply.get("violations") or {}
        if violations:
            raise _torch_ops_fail(label, violations, "the native kernel", "native code")
        if not reply.get("native_calls"):
            raise _Fail("hack", f"{label}: no native kernel ran during forward (a decoy kernel, or the output was "
                        "produced without computing); forward must call the compiled code")
        try:
            outs = [TensorMeta.from_json(m, cand.capacity) for m in reply.get("outputs") or []]
            after = [TensorMeta.from_json(m, cand.capacity) for m in reply.get("inputs_after") or []]
        except ProtocolError as exc:
            raise _Fail("runtime", f"{label}: malformed reply from the candidate worker: {exc}") from None
        if len(outs) != len(expected):
            raise _Fail("correctness", f"{label}: forward returned {len(outs)} tensor(s), expected {len(expected)}")
        got = [_tensor(cand, m) for m in outs]
        if late_check:
            snapshot = [cand.read(m) for m in outs]
        if len(after) != len(in_metas) or not all(_same_bytes(cand, a, ref.handle, b) for a, b in zip(after, in_metas)):
            raise _Fail("correctness", f"{label}: {_INPUTS_MODIFIED}")
        self._compare_outputs(label, got, expected, inputs)
        if late_check:
            time.sleep(0.05)
            if any(cand.read(m) != s for m, s in zip(outs, snapshot)):
                raise _Fail("hack", f"{label}: the output kept changing after forward returned (background work); "
                            "forward must finish its computation before returning")

    # --- device backends (ascend): the backend builds and runs the candidate, the parent judges ---------------
    def _judge_device(self, task: Task, source: str, ref: _Reference, rng: random.Random, init_seed: int,
                      init_args: list[Any], gates: dict[str, bool | None], timings: dict[str, float],
                      details: dict[str, Any]) -> latency.Timing | None:
        """Gates 2-4 for a backend that runs candidates on a device (backend.timing_mode == "device").
        The inputs and expected outputs come from the trusted CPU reference worker with the secret seeds,
        as for cpu; the backend's device process returns the candidate's outputs, the inputs after the call,
        its custom-op call counts, the ATen operators it dispatched and its clock evidence; everything is
        judged here. See verifier/backends/ascend/backend.py."""
        from evokernel.verifier.backends.ascend.backend import BuildFailed
        from evokernel.verifier.backends.ascend_sim.project import ProjectError

        cfg, be = self.config, self.backend
        settings = be.settings
        details["ascend"] = {"device": be.device_name, "soc": settings.soc, "sandbox": be.sandbox}
        # gate 2: compile (msopgen, build.sh, install, binding)
        try:
            build = be.build(source)
        except BuildFailed as exc:
            details["ascend"]["build_steps"] = exc.steps
            details["diagnoses"] = [dataclasses.asdict(d) for d in exc.diagnoses]
            raise _Fail("compile", "The operator project did not build:\n" + str(exc)) from None
        except ProjectError as exc:
            raise _Fail("compile", str(exc)) from None
        self._builds.builds, self._builds.cached = 1, int(build.cached)
        self._builds.seconds = build.seconds
        details["ascend"]["build"] = {"dir": str(build.root), "cached": build.cached,
                                      "steps": [{k: st[k] for k in ("name", "rc", "seconds")} for st in build.steps]}
        gates["compile"] = True
        gates["hack"] = None  # the dynamic half is decided with the trials

        # gate 3: correctness, on the secret-seeded inputs of the CPU reference
        plan = [("none", rng.randrange(2**31)) for _ in range(cfg.trials)]
        plan += [(p, rng.randrange(2**31)) for p in cfg.perturbations]
        inputs_t, expected_t, labels, skipped = [], [], [], []
        for i, (perturb, seed) in enumerate(plan):
            label = f"trial {i + 1}" + ("" if perturb == "none" else f" ({perturb}d inputs)")
            in_metas = self._make_inputs(ref, seed, perturb)
            out_metas, _ = self._ref_run(ref)
            expected = [_tensor(ref.handle, m) for m in out_metas]
            if any(e.is_floating_point() and not bool(torch.isfinite(e).all()) for e in expected):
                skipped.append(label)
                continue
            inputs_t.append([_tensor(ref.handle, m) for m in in_metas])
            expected_t.append(expected)
            labels.append(label)
        if not inputs_t:
            raise TaskError(f"{task.path}: the reference output is NaN/Inf on every trial")
        do_time = cfg.timing and settings.timing == "events"
        job = be.new_job()
        try:
            torch.save(inputs_t, job / "inputs.pt")
            req = {"role": "candidate", "model_src": build.project.sources["model_src"],
                   "custom_ops_lib": str(build.module_path), "init_seed": init_seed, "init_args": init_args,
                   "inputs": str(job / "inputs.pt"), "outputs": str(job / "outputs.pt"), "check": True,
                   "timing": "events" if do_time else "none", "warmup": settings.warmup, "calls": settings.calls}
            timeout = cfg.load_timeout_s + len(inputs_t) * cfg.run_timeout_s + (60.0 if do_time else 0.0)
            t0 = time.perf_counter()
            run = be.run_device(req, job, timeout, build, "candidate")
            timings["correctness_trials"] = time.perf_counter() - t0
            details["ascend"]["run_seconds"] = round(run.seconds, 3)
            result = self._device_result(run, timeout, "the checked run")
            self._device_compare(result, job, inputs_t, expected_t, labels)
            details["trials"] = {"passed": len(labels), "skipped_nonfinite_reference": skipped}
            gates["hack"] = True
            gates["correctness"] = True

            profile = None
            if cfg.timing and (settings.profile or settings.timing == "msprof"):
                profile = self._device_profile(build, job, details, cfg.timing and settings.timing == "msprof",
                                               init_seed, init_args)
            if not cfg.timing:
                return None
            t0 = time.perf_counter()
            if settings.timing == "msprof":
                timing = self._device_msprof_timing(task, ref, profile, job, inputs_t, init_seed, details)
            else:
                timing = self._device_event_timing(task, ref, result, job, inputs_t, init_seed, rng, details)
                if profile is not None:  # the events must be consistent with the kernel's own duration
                    dev_ms = profile.task_duration_us / 1e3
                    if timing.candidate_ms < 0.5 * dev_ms:
                        raise _Fail("hack", f"the NPU event timings of ModelNew (median {timing.candidate_ms:.4f} ms) "
                                    f"are far below the kernel's own duration measured by msprof ({dev_ms:.4f} ms): "
                                    "the timing evidence is not credible")
            timings["timed_calls"] = time.perf_counter() - t0
            return timing
        finally:
            be.finish_job(job)

    def _device_result(self, run: Any, timeout: float, what: str) -> dict[str, Any]:
        """A device run's result, or the _Fail its failure means (the result file is untrusted input)."""
        from evokernel.verifier.backends.ascend import feedback
        from evokernel.verifier.backends.ascend.backend import BackendUnavailable

        diags = feedback.analyze_runtime(run.rc, run.output)
        text = feedback.format_feedback(diags) if diags else ""
        fault = "\nThe device was health-checked before the next candidate." if feedback.needs_health_check(diags) \
            or run.timed_out else ""
        if run.timed_out:
            raise _Fail("timeout", f"{what} did not finish on the device within {timeout:.0f} s and was killed (a "
                        f"kernel that hangs: unpaired SetFlag/WaitFlag or EnQue/DeQue, an endless loop){fault}"
                        + (f"\n{text}" if text else ""))
        res = run.result
        if res is None:
            tail = run.output.strip()[-1500:]
            raise _Fail("runtime", f"{what}: the device process died (exit {run.rc}) without a result"
                        + (f"\n{text}" if text else f"\noutput (last lines):\n{tail}") + fault)
        if res.get("ok"):
            return res
        stage, error = str(res.get("stage")), str(res.get("error", ""))[:2000]
        tb = str(res.get("traceback", ""))[-1500:]
        if stage in ("import", "device"):
            diag = res.get("diagnosis") or {}
            what_failed = "import torch_npu" if stage == "import" else "select its NPU"
            raise BackendUnavailable(f"backend ascend: the device process could not {what_failed}: "
                                     f"{diag.get('message') or error}")
        if stage == "load":
            raise _Fail("compile", f"the built operator did not load: {error}" + (f"\n{tb}" if tb else ""))
        if stage == "init":
            raise _Fail("runtime", f"constructing ModelNew failed: {error}" + (f"\n{tb}" if tb else ""))
        if stage in ("run", "timing"):
            raise _Fail("runtime", f"{what}: forward failed on the device: {error}" + (f"\n{text}" if text else "")
                        + (f"\n{tb}" if tb and not text else "") + fault)
        raise RuntimeError(f"the device runner refused its request ({stage}): {error}")

    def _device_compare(self, result: dict[str, Any], job: Path, inputs_t: list[list[torch.Tensor]],
                        expected_t: list[list[torch.Tensor]], labels: list[str]) -> None:
        try:
            data = torch.load(job / "outputs.pt", weights_only=True)
            outputs, after = data["outputs"], data["inputs_after"]
            calls, violations = list(result["native_calls"]), list(result["violations"])
            if not (len(outputs) == len(after) == len(calls) == len(violations) == len(labels)):
                raise ValueError("trial counts differ")
        except Exception as exc:  # noqa: BLE001 - written by the candidate's process
            raise _Fail("runtime", f"the device run's outputs are missing or malformed: {exc}") from None
        for label, outs, aft, ins, exp, n, bad in zip(labels, outputs, after, inputs_t, expected_t, calls, violations):
            if isinstance(bad, dict) and bad:
                raise _torch_ops_fail(label, bad, "the custom operator", "the Ascend C kernel")
            if not isinstance(n, int) or n <= 0:
                raise _Fail("hack", f"{label}: the custom operator was never called during forward (a decoy "
                            "kernel, or the output was produced without computing); forward must call custom_ops_lib")
            if not isinstance(outs, list) or not all(type(o) is torch.Tensor for o in outs):  # noqa: E721
                raise _Fail("correctness", f"{label}: forward must return torch.Tensor(s)")
            if len(outs) != len(exp):
                raise _Fail("correctness", f"{label}: forward returned {len(outs)} tensor(s), expected {len(exp)}")
            if not isinstance(aft, list) or len(aft) != len(ins) or not all(
                    type(a) is torch.Tensor and a.dtype == b.dtype and a.shape == b.shape  # noqa: E721
                    and torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))
                    for a, b in zip(aft, ins)):
                raise _Fail("correctness", f"{label}: {_INPUTS_MODIFIED}")
            self._compare_outputs(label, outs, exp, ins)

    @staticmethod
    def _samples(timing: Any, calls: int) -> list[float]:
        """Event samples (ms) from an untrusted result: finite, positive, as many as asked."""
        samples = timing.get("samples") if isinstance(timing, dict) else None
        if not isinstance(samples, list) or len(samples) != min(calls, 1000) or not all(
                isinstance(x, (int, float)) and 0 < x < 1e7 for x in samples):
            raise _Fail("hack", "the device run's timing evidence is missing or malformed (expected "
                        f"{calls} positive NPU-event samples)")
        return [float(x) for x in samples]

    def _device_event_timing(self, task: Task, ref: _Reference, result: dict[str, Any], job: Path,
                             inputs_t: list[list[torch.Tensor]], init_seed: int, rng: random.Random,
                             details: dict[str, Any]) -> latency.Timing:
        from evokernel.verifier.backends.ascend.backend import bootstrap_ratio_ci

        be, s = self.backend, self.backend.settings
        cand = self._samples(result.get("timing"), s.calls)

        def measure_reference() -> dict[str, Any]:
            timeout = self.config.load_timeout_s + 60.0 + s.calls * self.config.run_timeout_s / 10
            return self._device_reference(
                task, init_seed, inputs_t[0], "reference", "timing the eager reference", "events", s.warmup,
                s.calls, timeout, lambda run, _: {"samples": self._samples(run.result.get("timing"), s.calls)})

        key = _shapes_key(task, inputs_t[0])
        ref_s = be.reference_timing(key, measure_reference)["samples"]
        c_med, r_med = statistics.median(cand), statistics.median(ref_s)
        q1, _, q3 = latency.quartiles(cand)
        lo, hi = bootstrap_ratio_ci(ref_s, cand, rng)
        details["timing"] = {"protocol": f"NPU events, {s.warmup} warm-up + {s.calls} timed calls per side",
                             "statistic": "median per side (ModelNew and the eager reference in separate fresh "
                                          "processes); speedup = median(eager) / median(candidate)",
                             "candidate_ms": {"median": c_med, "min": min(cand), "max": max(cand)},
                             "reference_ms": {"median": r_med, "min": min(ref_s), "max": max(ref_s)}}
        return latency.Timing(candidate_ms=c_med, reference_ms=r_med, speedup=r_med / c_med,
                              noise=(q3 - q1) / c_med if c_med > 0 else float("inf"), ci_low=lo, ci_high=hi,
                              rounds=len(cand), kind="measured")

    def _reference_failed(self, task: Task, run: Any, what: str) -> None:
        """The eager reference (trusted task code) failed on the device: a device fault or hang is the
        machine's problem (BackendUnavailable), anything else the task's (TaskError); never the candidate's."""
        from evokernel.verifier.backends.ascend.backend import BackendUnavailable

        why = (run.result or {}).get("error") or run.output[-800:] or f"exit {run.rc}"
        if run.timed_out or (self.backend.device is not None and self.backend.device.suspect):
            raise BackendUnavailable(f"backend ascend: {what} of {task.name} failed on {self.backend.device_name} "
                                     f"with a device fault or hang: {why}")
        raise TaskError(f"{task.path}: {what} failed on the device: {why}")

    def _device_reference(self, task: Task, init_seed: int, inputs: list[torch.Tensor], name: str, what: str,
                          timing: str, warmup: int, calls: int, timeout: float, read: Any,
                          msprof_launches: int | None = None) -> dict[str, Any]:
        """Run the eager reference on the device (optionally under msprof op, no kernel filter) from a job
        folder of its own, with the trusted inputs written by us (the candidate's folder is writable to it);
        ``read(run, msprof_dir)`` turns the run into the cached measurement."""
        be = self.backend
        ref_job = be.new_job()
        try:
            torch.save([inputs], ref_job / "inputs.pt")
            out_dir = ref_job / "msprof"
            profiler = None
            if msprof_launches is not None:
                out_dir.mkdir()
                profiler = be.msprof_argv(out_dir, msprof_launches, None)
            req = {"role": "reference", "task_source": task.source, "task_path": str(task.path),
                   "init_seed": init_seed, "inputs": str(ref_job / "inputs.pt"), "timing": timing,
                   "warmup": warmup, "calls": calls}
            run = be.run_device(req, ref_job, timeout, None, name, profiler=profiler)
            if not run.ok:
                self._reference_failed(task, run, what)
            return read(run, out_dir)
        finally:
            be.finish_job(ref_job)

    def _device_profile(self, build: Any, job: Path, details: dict[str, Any], required: bool, init_seed: int,
                        init_args: list[Any]) -> Any:
        """msprof op over the candidate's kernel -> PipeProfile; its diagnosis goes to details (the
        bottleneck the refining stage matches on). None (with a note) when msprof is absent or fails,
        unless the timing protocol needs it."""
        from evokernel.verifier.backends.ascend import msprof

        be, s = self.backend, self.backend.settings
        if not be.msprof_available():
            if required:
                raise _Fail("runtime", "EVOKERNEL_ASCEND_TIMING=msprof, but CANN has no msprof on its PATH")
            details["profile_note"] = "msprof not found: no pipe profile"
            return None
        out_dir = job / "msprof_candidate"
        out_dir.mkdir()
        req = {"role": "candidate", "model_src": build.project.sources["model_src"],
               "custom_ops_lib": str(build.module_path), "init_seed": init_seed, "init_args": init_args,
               "inputs": str(job / "inputs.pt"), "check": False, "timing": "loop", "warmup": 0,
               "calls": s.msprof_passes}
        argv = be.msprof_argv(out_dir, s.msprof_passes, build.project.kernel_name)
        timeout = self.config.load_timeout_s + 120.0 + s.msprof_passes * self.config.run_timeout_s
        run = be.run_device(req, job, timeout, build, "profile", profiler=argv)
        try:
            if not run.ok:
                self._device_result(run, timeout, "the profiled run")
            prof = msprof.parse(out_dir, None)
        except (_Fail, msprof.ProfileError) as exc:
            if required:
                raise _Fail("runtime", f"profiling with msprof failed: {exc}") from None
            details["profile_error"] = str(exc)[:1000]
            return None
        diag = msprof.diagnose(prof)
        details["diagnosis"] = diag
        details["profile"] = diag["profile"]
        details["msprof"] = {"task_duration_us": prof.task_duration_us, "launches": prof.launches,
                             "passes": prof.passes, "block_dim": prof.block_dim, "op_names": prof.op_names[:8]}
        return prof

    def _device_msprof_timing(self, task: Task, ref: _Reference, profile: Any, job: Path,
                              inputs_t: list[list[torch.Tensor]], init_seed: int,
                              details: dict[str, Any]) -> latency.Timing:
        """The paper's protocol: latency = mean msprof Task Duration over the profiling passes after warm-up;
        the eager reference = the sum of its kernels' Task Durations per forward (msprof over F forwards)."""
        from evokernel.verifier.backends.ascend import msprof
        from evokernel.verifier.sandboxed.guard import ALLOWED_OPS

        be, s = self.backend, self.backend.settings
        if ref.eager_ops is None:
            ref.eager_ops = self._ref_call(ref, {"op": "record_ops"})["ops"]
        kernels = max(1, sum(1 for o in ref.eager_ops
                             if str(o.get("op", "")).split("::")[-1].split(".")[0] not in ALLOWED_OPS))
        forwards = s.msprof_passes

        def read(run: Any, out_dir: Path) -> dict[str, Any]:
            try:
                prof = msprof.parse(out_dir, None)
            except msprof.ProfileError as exc:
                raise TaskError(f"{task.path}: the reference's msprof output is unreadable: {exc}") from None
            return {"us": sum(prof.task_durations_us) / forwards, "launches": prof.launches}

        def measure_reference() -> dict[str, Any]:
            return self._device_reference(task, init_seed, inputs_t[0], "reference_profile",
                                          "profiling the eager reference", "loop", 0, forwards,
                                          self.config.load_timeout_s + 180.0, read,
                                          msprof_launches=4 * kernels * forwards)

        key = _shapes_key(task, inputs_t[0])
        r = be.reference_timing(key, measure_reference)
        cand_ms, ref_ms = profile.task_duration_us / 1e3, r["us"] / 1e3
        durs = profile.task_durations_us
        spread = (statistics.pstdev(durs) / statistics.fmean(durs)) if len(durs) > 1 and statistics.fmean(durs) else 0.0
        details["timing"] = {"protocol": f"msprof op, mean Task Duration over {profile.launches} profiled launch(es) "
                                         f"after {s.msprof_warmup} warm-up",
                             "statistic": "candidate: mean Task Duration of its kernel; eager reference: sum of the "
                                          f"Task Durations of its kernels per forward ({r['launches']} launches over "
                                          f"{forwards} forwards)",
                             "reference_kernels_per_forward_recorded": kernels}
        speedup = ref_ms / cand_ms if cand_ms > 0 else float("inf")
        return latency.Timing(candidate_ms=cand_ms, reference_ms=ref_ms, speedup=speedup, noise=spread,
                              ci_low=speedup, ci_high=speedup, rounds=profile.launches, kind="measured")

    def _compare_outputs(self, label: str, got: list[torch.Tensor], expected: list[torch.Tensor],
                         inputs: list[torch.Tensor]) -> None:
        """Each output against the reference's, at the configured tolerance (correctness gate)."""
        for k, (g, e) in enumerate(zip(got, expected)):
            cmp = correctness.compare(g, e, inputs, self.config.tol, "output" if len(got) == 1 else f"output {k}")
            if not cmp.ok:
                raise _Fail("correctness", f"{label}: {cmp.message}", max_abs_err=cmp.max_abs_err,
                            max_rel_err=cmp.max_rel_err)

    def _model_timing(self, ref: _Reference, details: dict[str, Any], timings: dict[str, float]) -> latency.Timing:
        """timing_mode "model": estimates for the kernel (from the first trial's emulator reports) and
        for the eager reference (from its recorded operators), on the same hardware constants."""
        t0 = time.perf_counter()
        reports = self._reports[0] if self._reports else []
        if not reports:
            raise _Fail("hack", "no emulated operator ran during forward; forward must call custom_ops_lib")
        if ref.eager_ops is None:
            ref.eager_ops = self._ref_call(ref, {"op": "record_ops"})["ops"]
        try:
            est = self.backend.estimate(reports, ref.eager_ops)
        except (KeyError, TypeError, ValueError) as exc:
            raise _Fail("runtime", f"the emulator's report could not be read by the latency model: {exc}") from None
        timings["timing"] = time.perf_counter() - t0
        kernel_ms, eager_ms = est["kernel_us"] / 1e3, est["eager_us"] / 1e3
        speedup = eager_ms / kernel_ms if kernel_ms > 0 else float("inf")
        details["estimate"] = est
        details["profile"] = est.get("profile", "")
        return latency.Timing(candidate_ms=kernel_ms, reference_ms=eager_ms, speedup=speedup, noise=0.0,
                              ci_low=speedup, ci_high=speedup, rounds=0, kind="estimate")

    def _compiled_baseline(self, task: Task, init_seed: int) -> WorkerHandle:
        """A reference worker running torch.compile(Model) (inductor), with the candidate's weights."""
        handle = self._spawn_reference(task)
        for msg in ({"op": "init", "seed": init_seed}, {"op": "compile"}):
            try:
                reply = handle.call(msg, self.config.load_timeout_s)
            except (WorkerDied, WorkerTimeout) as exc:
                handle.close()
                raise TaskError(f"{task.path}: the torch.compile baseline failed: {exc}") from None
            if not reply.get("ok"):
                handle.close()
                raise TaskError(f"{task.path}: the torch.compile baseline failed: {str(reply.get('error'))[-1500:]}")
        return handle

    def _time(self, ref: _Reference, cand: WorkerHandle, rng: random.Random, timeout: float,
              timings: dict[str, float], compiled: WorkerHandle | None = None) -> latency.Timing:
        cfg = self.config
        cand_s: list[float] = []
        ref_s: list[float] = []
        comp_s: list[float] = []
        measured = 0.0
        rounds = 0
        base = self._make_inputs(ref, rng.randrange(2**31), "none")
        started = time.perf_counter()
        while True:
            warm = rounds < cfg.warmup
            reply = self._ref_call(ref, {"op": "next_inputs", "seed": rng.randrange(2**31)})
            in_metas = [TensorMeta.from_json(m, ref.handle.capacity) for m in reply["inputs"]]
            assert [m.nbytes for m in in_metas] == [m.nbytes for m in base]
            out_offset = self._place_inputs(ref, cand, in_metas)
            metas_json = [m.to_json() for m in in_metas]
            if compiled is not None:
                self._place_inputs(ref, compiled, in_metas)
            times: dict[str, float] = {}
            order = ["ref", "cand"] + (["compiled"] if compiled is not None else [])
            rng.shuffle(order)
            cand_reply: dict[str, Any] = {}
            ref_metas: list[TensorMeta] = []
            for side in order:
                # each side copies its inputs into private tensors right before its own timed call,
                # so every side starts from the same cache state (otherwise the side prepared last
                # runs on cache-hot inputs: a 1.3x bias measured in the A/A test)
                if side == "ref":
                    self._ref_call(ref, {"op": "set_inputs", "inputs": metas_json})
                    t = time.perf_counter()
                    ref_metas, _ = self._ref_run(ref, timeout)
                    times["ref"] = time.perf_counter() - t
                elif side == "compiled":
                    assert compiled is not None
                    r = compiled.call({"op": "set_inputs", "inputs": metas_json}, timeout)
                    if not r.get("ok"):
                        raise TaskError(f"torch.compile baseline: {r.get('error')}")
                    # the first call compiles (seconds, cold); warm-up rounds absorb it
                    t = time.perf_counter()
                    r = compiled.call({"op": "run", "out_offset": out_offset}, timeout + (600 if warm else 0))
                    times["compiled"] = time.perf_counter() - t
                    if not r.get("ok"):
                        raise TaskError(f"torch.compile baseline failed: {str(r.get('error'))[-1500:]}")
                else:
                    r = self._cand_call(cand, {"op": "set_inputs", "inputs": metas_json}, timeout, "timing")
                    if not r.get("ok"):
                        raise _Fail("runtime", f"timing: the candidate worker failed to take its inputs: "
                                    f"{r.get('error')}")
                    t = time.perf_counter()
                    cand_reply = self._cand_call(cand, {"op": "run", "out_offset": out_offset}, timeout,
                                                 "a timed call")
                    times["cand"] = time.perf_counter() - t
            if not cand_reply.get("ok"):
                raise _Fail("runtime", f"a timed call failed: {cand_reply.get('error')}")
            if not cand_reply.get("native_calls"):
                raise _Fail("hack", "a timed call ran no native kernel (behaviour differs between checked and timed calls)")
            # every timed output is checked against the reference output of the same round
            outs = [TensorMeta.from_json(m, cand.capacity) for m in cand_reply.get("outputs") or []]
            expected = [_tensor(ref.handle, m) for m in ref_metas]
            if len(outs) != len(expected):
                raise _Fail("correctness", "a timed call returned a different number of outputs")
            for g, e in zip((_tensor(cand, m) for m in outs), expected):
                if correctness.quick_match(g, e, self.config.tol):
                    continue
                if e.is_floating_point() and not bool(torch.isfinite(e).all()):
                    continue  # the reference itself is NaN/Inf on these inputs: nothing to judge
                cmp = correctness.compare(g, e, [], self.config.tol, "timed output")
                if not cmp.ok:
                    raise _Fail("correctness", f"a timed call gave a wrong result (checked and timed calls must "
                                f"agree): {cmp.message}")
            rounds += 1
            if warm:
                continue
            cand_s.append(times["cand"])
            ref_s.append(times["ref"])
            if compiled is not None:
                comp_s.append(times["compiled"])
            measured += times["cand"] + times["ref"]
            n = len(cand_s)
            spent = time.perf_counter() - started
            if n >= cfg.max_rounds or (n >= cfg.min_rounds and (measured >= cfg.timing_budget_s or
                                                                spent >= cfg.timing_wall_budget_s)):
                break
        timings["timed_calls"] = measured
        return latency.summarize(cand_s, ref_s, rng, comp_s or None)

    # --- A/A: the timing noise of a kernel timed against itself ----------------------------------
    def timing_noise(self, task: Task, source: str, rounds: int = 40) -> dict[str, float]:
        """Time two fresh workers running the same candidate, interleaved exactly like a verdict's
        timing, and return the spread of the per-round ratios (ideal: median 1, IQR 0)."""
        ref, rng, init_seed, init_args = self._prepare_reference(task)
        assert self._cand_zygote is not None
        workers = [self._cand_zygote.spawn("candidate", self.config.memory_mb, self.config.cpu_s) for _ in range(2)]
        try:
            for w in workers:
                builds = BuildLog()
                for msg in ({"op": "load", "source": source, "threads": self.config.threads},
                            {"op": "init", "seed": init_seed, "init_args": init_args}):
                    r = self._cand_call(w, msg, self.config.load_timeout_s, msg["op"], builds)
                    if not r.get("ok"):
                        raise ValueError(f"the candidate does not load: {r.get('error')}")
            self._make_inputs(ref, rng.randrange(2**31), "none")
            self._ref_run(ref)
            ratios: list[float] = []
            for k in range(rounds + self.config.warmup):
                reply = self._ref_call(ref, {"op": "next_inputs", "seed": rng.randrange(2**31)})
                metas = [TensorMeta.from_json(m, ref.handle.capacity) for m in reply["inputs"]]
                times = {}
                for w in workers:
                    off = self._place_inputs(ref, w, metas)
                order = [0, 1]
                rng.shuffle(order)
                for i in order:
                    self._cand_call(workers[i], {"op": "set_inputs", "inputs": [m.to_json() for m in metas]}, 60,
                                    "inputs", builds)
                    t = time.perf_counter()
                    self._cand_call(workers[i], {"op": "run", "out_offset": off}, 60, "a timed call", builds)
                    times[i] = time.perf_counter() - t
                if k >= self.config.warmup:
                    ratios.append(times[0] / times[1])
        finally:
            for w in workers:
                w.close()
        q1, med, q3 = latency.quartiles(ratios)
        return {"rounds": len(ratios), "median_ratio": med, "iqr": q3 - q1, "p05": sorted(ratios)[int(0.05 * len(ratios))],
                "p95": sorted(ratios)[int(0.95 * len(ratios)) - 1], "noise": (q3 - q1) / med}
