"""Gates 2-4 for a backend that runs candidates on a device itself (``backend.timing_mode == "device"``:
the ascend backend on a real NPU).

The backend builds the operator project (CANN) and runs it in a fresh sandboxed device process; the
inputs and expected outputs come from the trusted CPU reference worker with the secret seeds, as for
the cpu backend; the device process returns the candidate's outputs, the inputs after the call, its
custom-op call counts, the ATen operators it dispatched and its clock evidence, and everything is
judged here (see verifier/backends/ascend/backend.py and docs/ascend.md).
It lives beside the backend it judges: the verifier reaches it through the registry row's `device_judge`.
"""
from __future__ import annotations

import dataclasses
import random
import statistics
import time
from pathlib import Path
from typing import Any

import torch

from evokernel.tasks.task import Task, TaskError
from evokernel.verifier.backends.ascend.backend import BuildFailed
from evokernel.verifier.backends.ascend_sim.project import ProjectError
from evokernel.verifier.trusted import correctness, latency, regions
from evokernel.verifier.trusted.failures import INPUTS_MODIFIED, Fail, torch_ops_fail
from evokernel.verifier.trusted.reference import Reference
from evokernel.verifier.trusted.trials import TIES, Truth, compare_outputs, reductions, reference_trial, trial_plan

# device memory for the timed calls' fresh input sets and their outputs (the number of timed calls is capped
# by it, so that no call repeats inputs)
TIMED_SET_BYTES = 2 * 1024**3


def shapes_key(task: Task, inputs: list[torch.Tensor]) -> tuple[Any, ...]:
    """What a reference measurement depends on: the task and its input shapes and dtypes."""
    return task.key, tuple(tuple(t.shape) for t in inputs), tuple(str(t.dtype) for t in inputs)


class DeviceJudge:
    """Judges one candidate on the backend's device for the verifier ``v``."""

    def __init__(self, v: Any, task: Task, source: str, ref: Reference, rng: random.Random, init_seed: int,
                 init_args: list[Any]):
        self.v, self.cfg, self.backend = v, v.config, v.backend
        self.task, self.source, self.ref, self.rng = task, source, ref, rng
        # contiguous trial inputs on a device: the device process moves them to the NPU as they are, and views there
        # were never tried on a device (the cpu and ascend-sim trials pass views: trial_inputs.STRIDED_IN)
        ref.strided = False
        self.init_seed, self.init_args = init_seed, init_args
        self.timed_sets: list[tuple[list[torch.Tensor], list[torch.Tensor]]] = []
        self.timed_seeds: list[int] = []
        self.trial_keys: list[tuple[int, str]] = []

    def judge(self, gates: dict[str, bool | None], timings: dict[str, float],
              details: dict[str, Any]) -> latency.Timing | None:
        """Gates 2-4 for a backend that runs candidates on a device (backend.timing_mode == "device").
        The inputs and expected outputs come from the trusted CPU reference worker with the secret seeds,
        as for cpu; the backend's device process returns the candidate's outputs, the inputs after the call,
        its custom-op call counts, the ATen operators it dispatched and its clock evidence; everything is
        judged here. See verifier/backends/ascend/backend.py."""
        cfg, be = self.cfg, self.backend
        task, source, ref, rng = self.task, self.source, self.ref, self.rng
        init_seed, init_args = self.init_seed, self.init_args
        settings = be.settings
        details["ascend"] = {"device": be.device_name, "soc": settings.soc, "sandbox": be.sandbox}
        # gate 2: compile (msopgen, build.sh, install, binding)
        try:
            build = be.build(source)
        except BuildFailed as exc:
            details["ascend"]["build_steps"] = exc.steps
            details["diagnoses"] = [dataclasses.asdict(d) for d in exc.diagnoses]
            raise Fail("compile", "The operator project did not build:\n" + str(exc)) from None
        except ProjectError as exc:
            raise Fail("compile", str(exc)) from None
        self.v._builds.builds, self.v._builds.cached = 1, int(build.cached)
        self.v._builds.seconds = build.seconds
        details["ascend"]["build"] = {"dir": str(build.root), "cached": build.cached,
                                      "steps": [{k: st[k] for k in ("name", "rc", "seconds")} for st in build.steps]}
        gates["compile"] = True
        gates["hack"] = None  # the dynamic half is decided with the trials

        # gate 3: correctness, on the secret-seeded inputs of the CPU reference
        inputs_t, expected_t, labels, notes = [], [], [], []
        self.trial_keys: list[tuple[int, str]] = []
        for label, perturb, seed in trial_plan(cfg, rng):  # a NaN/Inf reference: drawn again, then judged masked
            seed, in_metas, out_metas, _, note = reference_trial(ref, rng, seed, perturb)
            if note is not None:
                notes.append({"trial": label, **note})
            inputs_t.append([regions.tensor(ref.handle, m) for m in in_metas])
            expected_t.append([regions.tensor(ref.handle, m) for m in out_metas])
            labels.append(label)
            self.trial_keys.append((seed, perturb))
        if len(notes) == len(labels) and all(n["nonfinite_elements"] == n["elements"] for n in notes):
            raise TaskError(f"{task.path}: the reference output is NaN/Inf in every element on every trial")
        do_time = cfg.timing and settings.timing == "events"
        job = be.new_job()
        try:
            torch.save(inputs_t, job / "inputs.pt")
            req = {"role": "candidate", "model_src": build.project.sources["model_src"],
                   "custom_ops_lib": str(build.module_path), "init_seed": init_seed, "init_args": init_args,
                   "inputs": str(job / "inputs.pt"), "outputs": str(job / "outputs.pt"), "check": True,
                   "timing": "events" if do_time else "none", "warmup": settings.warmup, "calls": settings.calls}
            if do_time:  # one fresh input set per timed call, every timed output checked (event_timing)
                self.timed_sets = self.draw_timed_sets(inputs_t[0], expected_t[0])
                torch.save([i for i, _ in self.timed_sets], job / "timed_inputs.pt")
                req.update(timed_inputs=str(job / "timed_inputs.pt"), timed_outputs=str(job / "timed_outputs.pt"),
                           calls=len(self.timed_sets))
            timeout = cfg.load_timeout_s + len(inputs_t) * cfg.run_timeout_s + (60.0 if do_time else 0.0)
            t0 = time.perf_counter()
            run = be.run_device(req, job, timeout, build, "candidate")
            timings["correctness_trials"] = time.perf_counter() - t0
            details["ascend"]["run_seconds"] = round(run.seconds, 3)
            result = self.device_result(run, timeout, "the checked run")
            self.device_compare(result, job, inputs_t, expected_t, labels)
            details["trials"] = {"passed": len(labels), "nonfinite_reference": notes}
            gates["hack"] = True
            gates["correctness"] = True

            profile = None
            if cfg.timing and (settings.profile or settings.timing == "msprof"):
                profile = self.device_profile(build, job, details, cfg.timing and settings.timing == "msprof",
                                               init_seed, init_args)
            if not cfg.timing:
                return None
            t0 = time.perf_counter()
            if settings.timing == "msprof":
                timing = self.msprof_timing(task, ref, profile, job, inputs_t, init_seed, details)
            else:
                timing = self.event_timing(task, ref, result, job, init_seed, rng, details)
                if profile is not None:  # the events must be consistent with the kernel's own duration
                    dev_ms = profile.task_duration_us / 1e3
                    if timing.candidate_ms < 0.5 * dev_ms:
                        raise Fail("hack", f"the NPU event timings of ModelNew (median {timing.candidate_ms:.4f} ms) "
                                    f"are far below the kernel's own duration measured by msprof ({dev_ms:.4f} ms): "
                                    "the timing evidence is not credible")
            timings["timed_calls"] = time.perf_counter() - t0
            return timing
        finally:
            be.finish_job(job)

    def device_result(self, run: Any, timeout: float, what: str) -> dict[str, Any]:
        """A device run's result, or the _Fail its failure means (the result file is untrusted input)."""
        from evokernel.verifier.backends.ascend import feedback
        from evokernel.verifier.backends.ascend.backend import BackendUnavailable

        diags = feedback.analyze_runtime(run.rc, run.output)
        text = feedback.format_feedback(diags) if diags else ""
        fault = "\nThe device was health-checked before the next candidate." if feedback.needs_health_check(diags) \
            or run.timed_out else ""
        if run.timed_out:
            raise Fail("timeout", f"{what} did not finish on the device within {timeout:.0f} s and was killed (a "
                        f"kernel that hangs: unpaired SetFlag/WaitFlag or EnQue/DeQue, an endless loop){fault}"
                        + (f"\n{text}" if text else ""))
        res = run.result
        if res is None:
            tail = run.output.strip()[-1500:]
            raise Fail("runtime", f"{what}: the device process died (exit {run.rc}) without a result"
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
            raise Fail("compile", f"the built operator did not load: {error}" + (f"\n{tb}" if tb else ""))
        if stage == "init":
            raise Fail("runtime", f"constructing ModelNew failed: {error}" + (f"\n{tb}" if tb else ""))
        if stage in ("run", "timing"):
            raise Fail("runtime", f"{what}: forward failed on the device: {error}" + (f"\n{text}" if text else "")
                        + (f"\n{tb}" if tb and not text else "") + fault)
        raise RuntimeError(f"the device runner refused its request ({stage}): {error}")

    def device_compare(self, result: dict[str, Any], job: Path, inputs_t: list[list[torch.Tensor]],
                        expected_t: list[list[torch.Tensor]], labels: list[str]) -> None:
        try:
            data = torch.load(job / "outputs.pt", weights_only=True)
            outputs, after = data["outputs"], data["inputs_after"]
            calls, violations = list(result["native_calls"]), list(result["violations"])
            if not (len(outputs) == len(after) == len(calls) == len(violations) == len(labels)):
                raise ValueError("trial counts differ")
        except Exception as exc:  # noqa: BLE001 - written by the candidate's process
            raise Fail("runtime", f"the device run's outputs are missing or malformed: {exc}") from None
        for label, outs, aft, ins, exp, n, bad, (seed, perturb) in zip(labels, outputs, after, inputs_t, expected_t,
                                                                       calls, violations, self.trial_keys):
            if isinstance(bad, dict) and bad:
                raise torch_ops_fail(label, bad, "the custom operator", "the Ascend C kernel")
            if not isinstance(n, int) or n <= 0:
                raise Fail("hack", f"{label}: the custom operator was never called during forward (a decoy "
                            "kernel, or the output was produced without computing); forward must call custom_ops_lib")
            if not isinstance(outs, list) or not all(type(o) is torch.Tensor for o in outs):  # noqa: E721
                raise Fail("correctness", f"{label}: forward must return torch.Tensor(s)")
            if len(outs) != len(exp):
                raise Fail("correctness", f"{label}: forward returned {len(outs)} tensor(s), expected {len(exp)}")
            if not isinstance(aft, list) or len(aft) != len(ins) or not all(
                    type(a) is torch.Tensor and a.dtype == b.dtype and a.shape == b.shape  # noqa: E721
                    and torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))
                    for a, b in zip(aft, ins)):
                raise Fail("correctness", f"{label}: {INPUTS_MODIFIED}")
            compare_outputs(label, outs, exp, ins, self.cfg.tol,
                            lambda seed=seed, perturb=perturb: self.ref.truth(seed, perturb),
                            ties=perturb in TIES)  # as the cpu/ascend-sim trials: index outputs on constant rows

    @staticmethod
    def samples(timing: Any, calls: int) -> list[float]:
        """Event samples (ms) from an untrusted result: finite, positive, as many as asked."""
        samples = timing.get("samples") if isinstance(timing, dict) else None
        if not isinstance(samples, list) or len(samples) != min(calls, 1000) or not all(
                isinstance(x, (int, float)) and 0 < x < 1e7 for x in samples):
            raise Fail("hack", "the device run's timing evidence is missing or malformed (expected "
                        f"{calls} positive NPU-event samples)")
        return [float(x) for x in samples]

    def draw_timed_sets(self, inputs: list[torch.Tensor], expected: list[torch.Tensor]
                        ) -> list[tuple[list[torch.Tensor], list[torch.Tensor]]]:
        """Fresh (inputs, expected outputs) pairs from secret seeds, one per timed call: as many as the
        settings ask, within a device-memory budget (nothing repeats, so nothing can be replayed)."""
        per_set = sum(t.numel() * t.element_size() for t in [*inputs, *expected]) or 1
        n = max(1, min(self.backend.settings.calls, TIMED_SET_BYTES // per_set))
        sets = []
        self.timed_seeds = [self.rng.randrange(2**31) for _ in range(n)]
        for seed in self.timed_seeds:
            in_metas = self.ref.make_inputs(seed, "none")
            out_metas, _ = self.ref.run()
            sets.append(([regions.tensor(self.ref.handle, m) for m in in_metas],
                         [regions.tensor(self.ref.handle, m) for m in out_metas]))
        return sets

    def check_timed_outputs(self, job: Path) -> None:
        """The candidate's output of every timed call against the reference's for that call's inputs."""
        try:
            outs = torch.load(job / "timed_outputs.pt", weights_only=True)
            if not isinstance(outs, list) or len(outs) != len(self.timed_sets):
                raise ValueError(f"{len(outs) if isinstance(outs, list) else 'no'} timed outputs for "
                                 f"{len(self.timed_sets)} timed calls")
        except Exception as exc:  # noqa: BLE001 - written by the candidate's process
            raise Fail("runtime", f"the device run's timed outputs are missing or malformed: {exc}") from None
        for k, (got, (ins, exp)) in enumerate(zip(outs, self.timed_sets)):
            if not isinstance(got, list) or len(got) != len(exp) or not all(type(g) is torch.Tensor for g in got):  # noqa: E721
                raise Fail("correctness", f"timed call {k + 1} returned a different number or kind of outputs")
            flags = reductions(exp, sum(t.numel() for t in ins))
            exact = Truth(lambda seed=self.timed_seeds[k]: self.ref.truth(seed, "none"))
            for j, (g, e) in enumerate(zip(got, exp)):
                if correctness.quick_match(g, e, self.cfg.tol, flags[j]):
                    continue
                cmp = correctness.compare(g, e, [], self.cfg.tol, f"timed call {k + 1}", reduction=flags[j],
                                          truth=exact.of(j))
                if not cmp.ok:
                    raise Fail("correctness", f"a timed call gave a wrong result (checked and timed calls must "
                               f"agree): {cmp.message}")

    def event_timing(self, task: Task, ref: Reference, result: dict[str, Any], job: Path, init_seed: int,
                     rng: random.Random, details: dict[str, Any]) -> latency.Timing:
        from evokernel.verifier.backends.ascend.backend import bootstrap_ratio_ci

        be, s = self.backend, self.backend.settings
        calls = len(self.timed_sets)
        cand = self.samples(result.get("timing"), calls)
        self.check_timed_outputs(job)
        timed_inputs = [i for i, _ in self.timed_sets]

        def measure_reference() -> dict[str, Any]:
            timeout = self.cfg.load_timeout_s + 60.0 + calls * self.cfg.run_timeout_s / 10
            return self.device_reference(
                task, init_seed, timed_inputs[0], "reference", "timing the eager reference", "events", s.warmup,
                calls, timeout, lambda run, _: {"samples": self.samples(run.result.get("timing"), calls)},
                timed_inputs=timed_inputs)

        key = shapes_key(task, timed_inputs[0])
        ref_s = be.reference_timing(key, measure_reference)["samples"]
        c_med, r_med = statistics.median(cand), statistics.median(ref_s)
        q1, _, q3 = latency.quartiles(cand)
        lo, hi = bootstrap_ratio_ci(ref_s, cand, rng)
        details["timing"] = {"protocol": f"NPU events, {s.warmup} warm-up + {calls} timed calls per side, each on "
                                         "fresh secret-seeded inputs, every timed output checked",
                             "statistic": "median per side (ModelNew and the eager reference in separate fresh "
                                          "processes); speedup = median(eager) / median(candidate)",
                             "candidate_ms": {"median": c_med, "min": min(cand), "max": max(cand)},
                             "reference_ms": {"median": r_med, "min": min(ref_s), "max": max(ref_s)}}
        return latency.Timing(candidate_ms=c_med, reference_ms=r_med, speedup=r_med / c_med,
                              noise=(q3 - q1) / c_med if c_med > 0 else float("inf"), ci_low=lo, ci_high=hi,
                              rounds=len(cand), kind="measured")

    def reference_failed(self, task: Task, run: Any, what: str) -> None:
        """The eager reference (trusted task code) failed on the device: a device fault or hang is the
        machine's problem (BackendUnavailable), anything else the task's (TaskError); never the candidate's."""
        from evokernel.verifier.backends.ascend.backend import BackendUnavailable

        why = (run.result or {}).get("error") or run.output[-800:] or f"exit {run.rc}"
        if run.timed_out or (self.backend.device is not None and self.backend.device.suspect):
            raise BackendUnavailable(f"backend ascend: {what} of {task.name} failed on {self.backend.device_name} "
                                     f"with a device fault or hang: {why}")
        raise TaskError(f"{task.path}: {what} failed on the device: {why}")

    def device_reference(self, task: Task, init_seed: int, inputs: list[torch.Tensor], name: str, what: str,
                          timing: str, warmup: int, calls: int, timeout: float, read: Any,
                          msprof_launches: int | None = None,
                          timed_inputs: list[list[torch.Tensor]] | None = None) -> dict[str, Any]:
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
            if timed_inputs is not None:  # the same fresh sets as the candidate's timed calls
                torch.save(timed_inputs, ref_job / "timed_inputs.pt")
                req["timed_inputs"] = str(ref_job / "timed_inputs.pt")
            run = be.run_device(req, ref_job, timeout, None, name, profiler=profiler)
            if not run.ok:
                self.reference_failed(task, run, what)
            return read(run, out_dir)
        finally:
            be.finish_job(ref_job)

    def device_profile(self, build: Any, job: Path, details: dict[str, Any], required: bool, init_seed: int,
                        init_args: list[Any]) -> Any:
        """msprof op over the candidate's kernel -> PipeProfile; its diagnosis goes to details (the
        bottleneck the refining stage matches on). None (with a note) when msprof is absent or fails,
        unless the timing protocol needs it."""
        from evokernel.verifier.backends.ascend import msprof

        be, s = self.backend, self.backend.settings
        if not be.msprof_available():
            if required:
                raise Fail("runtime", "EVOKERNEL_ASCEND_TIMING=msprof, but CANN has no msprof on its PATH")
            details["profile_note"] = "msprof not found: no pipe profile"
            return None
        out_dir = job / "msprof_candidate"
        out_dir.mkdir()
        req = {"role": "candidate", "model_src": build.project.sources["model_src"],
               "custom_ops_lib": str(build.module_path), "init_seed": init_seed, "init_args": init_args,
               "inputs": str(job / "inputs.pt"), "check": False, "timing": "loop", "warmup": 0,
               "calls": s.msprof_passes}
        argv = be.msprof_argv(out_dir, s.msprof_passes, build.project.kernel_name)
        timeout = self.cfg.load_timeout_s + 120.0 + s.msprof_passes * self.cfg.run_timeout_s
        run = be.run_device(req, job, timeout, build, "profile", profiler=argv)
        try:
            if not run.ok:
                self.device_result(run, timeout, "the profiled run")
            prof = msprof.parse(out_dir, None)
        except (Fail, msprof.ProfileError) as exc:
            if required:
                raise Fail("runtime", f"profiling with msprof failed: {exc}") from None
            details["profile_error"] = str(exc)[:1000]
            return None
        diag = msprof.diagnose(prof)
        details["diagnosis"] = diag
        details["profile"] = diag["profile"]
        details["msprof"] = {"task_duration_us": prof.task_duration_us, "launches": prof.launches,
                             "passes": prof.passes, "block_dim": prof.block_dim, "op_names": prof.op_names[:8]}
        return prof

    def msprof_timing(self, task: Task, ref: Reference, profile: Any, job: Path,
                              inputs_t: list[list[torch.Tensor]], init_seed: int,
                              details: dict[str, Any]) -> latency.Timing:
        """The paper's protocol: latency = mean msprof Task Duration over the profiling passes after warm-up;
        the eager reference = the sum of its kernels' Task Durations per forward (msprof over F forwards)."""
        from evokernel.verifier.backends.ascend import msprof
        from evokernel.verifier.sandboxed.op_recorder import ALLOWED_OPS

        be, s = self.backend, self.backend.settings
        kernels = max(1, sum(1 for o in ref.recorded_ops()
                             if str(o.get("op", "")).split("::")[-1].split(".")[0] not in ALLOWED_OPS))
        forwards = s.msprof_passes

        def read(run: Any, out_dir: Path) -> dict[str, Any]:
            try:
                prof = msprof.parse(out_dir, None)
            except msprof.ProfileError as exc:
                raise TaskError(f"{task.path}: the reference's msprof output is unreadable: {exc}") from None
            return {"us": sum(prof.task_durations_us) / forwards, "launches": prof.launches}

        def measure_reference() -> dict[str, Any]:
            return self.device_reference(task, init_seed, inputs_t[0], "reference_profile",
                                          "profiling the eager reference", "loop", 0, forwards,
                                          self.cfg.load_timeout_s + 180.0, read,
                                          msprof_launches=4 * kernels * forwards)

        key = shapes_key(task, inputs_t[0])
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
