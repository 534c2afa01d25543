"""The `ascend` backend: Ascend C operator projects built with CANN and run on a real Ascend NPU.

Same candidate file and same static rules as `ascend-sim`; what differs is where the operator runs.
The trusted parent (this module, called by trusted/verifier.py) does, per candidate:

    build    toolchain.build_project: msopgen gen -> the candidate's sources -> ./build.sh (ASCEND_CUSTOM_OPP_PATH
             unset) -> build_out/custom_opp_*.run --install-path=<the candidate's own directory>, then
             binding_build.build_binding (python setup.py build_ext --inplace). Each tool runs in the sandbox
             (opbuild executes the candidate's host code at build time), in its own process group, with a
             timeout. Builds are cached by content (builds/<sha256>/, renamed into place when complete, so
             parallel workers never see half a build).
    run      device_runner.py in a FRESH sandboxed process with the installed op's environment and the
             NPU's device nodes: the candidate's outputs for the verifier's secret-seeded inputs, the
             inputs after the call, custom-op call counts, ATen operators recorded during forward, and NPU
             event timings. The parent compares (the runner decides nothing).
    time     "events" (default; MultiKernelBench/AscendKernelBench): warm-up + timed calls between NPU
             events for ModelNew and, in a separate process, the eager reference Model; speedup = ratio of
             medians. "msprof" (the paper's protocol): both under `msprof op`, latency = mean msprof Task
             Duration over the profiling passes after warm-up (the reference: the sum of its kernels').
    profile  `msprof op --aic-metrics=PipeUtilization,...` on the candidate -> msprof.parse -> a bottleneck
             diagnosis (details["diagnosis"], same shape as the ascend-sim estimate; details["profile"] is
             the text refining reads). Skipped with a note when msprof is absent.
    devices  each Verifier holds one NPU (a lock file per device under the cache), so N workers use N
             NPUs. A timeout or device fault marks the device suspect: a health check runs before its next
             job; a device that stays unhealthy is marked bad and the Verifier moves to another free one, or
             raises DeviceUnavailable (never an infeasible verdict for a later candidate).

Settings come from the environment (AscendSettings.from_env; docs/ascend.md lists them). NOT run on an NPU
or a real CANN: built to the recorded tool behaviour (/work/shared/reference/ascend-toolchain.md) and tested
against the fake toolchain and fake torch_npu in tests/verifier/ascend/.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import random
import shutil
import statistics
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evokernel.verifier.backends.ascend import feedback, msprof
from evokernel.verifier.backends.ascend.binding_build import (HelperMissing, binding_diagnoses, build_binding,
                                                              find_helper)
from evokernel.verifier.backends.ascend.feedback import Diagnosis
from evokernel.verifier.backends.ascend.toolchain import (DEFAULT_SOC, BuildPlan, CannEnv, CannNotFound,
                                                          ToolchainError, device_env, locate_cann)
from evokernel.verifier.backends.ascend_sim.backend import static_check_project
from evokernel.verifier.backends.ascend_sim.project import Project, parse_candidate
from evokernel.verifier.backends.base import Backend, BuildLog
from evokernel.verifier.trusted.findings import Finding
from evokernel.verifier.trusted.launcher import Limits, SandboxError, SandboxSpec

RUNNER_MODULE = "evokernel.verifier.sandboxed.device_runner"
BUILD_FORMAT = 1  # bump when the build steps change (invalidates the build cache)
DEVICE_NODES = ("davinci_manager", "devmm_svm", "hisi_hdc")
PASS_PREFIXES = ("ASCEND_",)
PASS_KEYS = ("PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "TOOLCHAIN_HOME", "ASCEND_TOOLKIT_HOME")
MSPROF_METRICS = "PipeUtilization,Memory,ResourceConflictRatio"  # the paper's three profiling passes


class BackendUnavailable(SandboxError):
    """The backend cannot run on this machine as configured (no CANN, no helper header, no torch_npu...).
    Not a verdict: the message says what is missing."""


class DeviceUnavailable(BackendUnavailable):
    """No healthy NPU is left for this verifier (after faults); later candidates are not judged on it."""


class BuildFailed(Exception):
    def __init__(self, diagnoses: list[Diagnosis], steps: list[dict[str, Any]]):
        super().__init__(feedback.format_feedback(diagnoses))
        self.diagnoses, self.steps = diagnoses, steps


def _env_list(value: str | None) -> list[int] | None:
    if not value:
        return None
    return [int(v) for v in value.replace(" ", "").split(",") if v != ""]


@dataclass
class AscendSettings:
    soc: str = DEFAULT_SOC  # msopgen -c ai_core-<soc>
    python: str = sys.executable  # the interpreter with torch + torch_npu (device runner, binding build)
    pythonpath: str = ""  # prepended to PYTHONPATH of the tools and device processes only (e.g. torch_npu's home)
    devices: list[int] | None = None  # NPU ids this machine may use; None: ASCEND_RT_VISIBLE_DEVICES count or [0]
    device_type: str = "npu"  # torch device type of the runner ("cpu" only with the tests' fake torch_npu)
    timing: str = "events"  # "events" | "msprof" (the paper's protocol)
    warmup: int = 3
    calls: int = 100  # timed calls per side (events)
    profile: bool = True  # msprof op PipeUtilization for the bottleneck diagnosis (when msprof exists)
    msprof_passes: int = 3  # profiled forwards (msprof mode and the profile)
    msprof_warmup: int = 5  # msprof op --warm-up
    helper: str | None = None  # pytorch_npu_helper.hpp (default: binding_build.find_helper)
    pass_env: tuple[str, ...] = ()  # extra variable names handed to the tools and the device process
    keep: bool = False  # keep each job's directory (inputs, outputs, request, result) for debugging
    health_waits: tuple[float, ...] = (0.0, 5.0, 20.0)  # seconds before each health check of a suspect device

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None, **overrides: Any) -> "AscendSettings":
        env = os.environ if environ is None else environ
        s = cls(
            soc=env.get("EVOKERNEL_ASCEND_SOC", DEFAULT_SOC),
            python=env.get("EVOKERNEL_NPU_PYTHON", sys.executable),
            pythonpath=env.get("EVOKERNEL_NPU_PYTHONPATH", ""),
            devices=_env_list(env.get("EVOKERNEL_NPU_DEVICES")),
            device_type=env.get("EVOKERNEL_ASCEND_DEVICE_TYPE", "npu"),
            timing=env.get("EVOKERNEL_ASCEND_TIMING", "events"),
            warmup=int(env.get("EVOKERNEL_ASCEND_WARMUP", "3")),
            calls=int(env.get("EVOKERNEL_ASCEND_CALLS", "100")),
            profile=env.get("EVOKERNEL_ASCEND_PROFILE", "1") != "0",
            helper=env.get("EVOKERNEL_NPU_HELPER") or None,
            pass_env=tuple(v for v in env.get("EVOKERNEL_ASCEND_PASS_ENV", "").split(",") if v),
            keep=env.get("EVOKERNEL_ASCEND_KEEP", "0") == "1",
        )
        for k, v in overrides.items():
            setattr(s, k, v)
        if s.timing not in ("events", "msprof"):
            raise BackendUnavailable(f"EVOKERNEL_ASCEND_TIMING must be 'events' or 'msprof', not {s.timing!r}")
        return s


@dataclass
class Build:
    """A complete, installed candidate build (content-addressed directory)."""
    root: Path
    project: Project
    module_path: Path
    vendor_dir: Path
    steps: list[dict[str, Any]]
    cached: bool = False
    seconds: float = 0.0


@dataclass
class DeviceRun:
    """One device-runner process: its result JSON (untrusted: written by the candidate's process) and output."""
    rc: int | None  # None: killed at the deadline
    result: dict[str, Any] | None
    output: str
    seconds: float
    job: Path
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.rc == 0 and bool(self.result and self.result.get("ok"))


@dataclass
class _Device:
    index: int
    lock: Any = None
    suspect: str = ""  # why a health check is due ("" = healthy as far as we know)
    faults: list[str] = field(default_factory=list)


class AscendBackend(Backend):
    name = "ascend"
    timing_mode = "device"  # the backend runs candidates itself (on the NPU), not the sandboxed worker

    def __init__(self, cache_dir: Path, build_timeout_s: float = 900.0, settings: AscendSettings | None = None,
                 environ: dict[str, str] | None = None):
        self.cache_dir = Path(cache_dir)
        self.build_timeout_s = build_timeout_s
        self.environ = dict(os.environ if environ is None else environ)
        self.settings = settings or AscendSettings.from_env(self.environ)
        self.root = self.cache_dir / "ascend"
        self.cann: CannEnv | None = None
        self.helper: Path | None = None
        self.device: _Device | None = None
        self.sandbox = "rlimits"
        self._ref_timing: dict[tuple[Any, ...], dict[str, Any]] = {}
        self.health_checks = 0

    # --- lifecycle -----------------------------------------------------------------------------------
    def start(self, sandbox: str | None = None) -> None:
        """Locate CANN and the helper header, claim an NPU. BackendUnavailable says what is missing."""
        from evokernel.verifier.trusted.launcher import sandbox_mode

        self.sandbox = sandbox or sandbox_mode()
        if self.cann is None:
            try:
                self.cann = locate_cann(self.environ)
            except CannNotFound as exc:
                raise BackendUnavailable(f"backend ascend: {exc}") from None
            if not shutil.which("msopgen", path=self.cann.env.get("PATH", "")):
                raise BackendUnavailable(f"backend ascend: CANN at {self.cann.home} has no msopgen on its PATH "
                                         "(is the toolkit, not only the runtime, installed?)")
            try:
                self.helper = find_helper(self.settings.helper, self.environ)
            except HelperMissing as exc:
                raise BackendUnavailable(f"backend ascend: {exc}") from None
        for d in ("builds", "jobs", "devices"):
            (self.root / d).mkdir(parents=True, exist_ok=True)
        if self.device is None:
            self.device = self._claim_device()

    def close(self) -> None:
        if self.device is not None and self.device.lock is not None:
            self.device.lock.close()  # releases the flock
        self.device = None

    def _device_ids(self) -> list[int]:
        if self.settings.devices is not None:
            return list(self.settings.devices)
        visible = self.cann.env.get("ASCEND_RT_VISIBLE_DEVICES") if self.cann else None
        if visible:
            return list(range(len([v for v in visible.split(",") if v.strip()])))
        return [0]

    def _bad(self, index: int) -> Path:
        return self.root / "devices" / f"npu{index}.bad"

    def _claim_device(self, exclude: tuple[int, ...] = ()) -> _Device:
        """The first free NPU (one lock file each; waits while all are held by other workers)."""
        ids = [i for i in self._device_ids() if i not in exclude and not self._bad(i).exists()]
        if not ids:
            raise DeviceUnavailable("backend ascend: no usable NPU left (" + ", ".join(
                f"npu:{i}: {self._bad(i).read_text().strip()}" for i in self._device_ids() if self._bad(i).exists())
                + "); check the devices (npu-smi info), remove the .bad files under "
                f"{self.root / 'devices'} and start again")
        waited = 0.0
        while True:
            for i in ids:
                f = open(self.root / "devices" / f"npu{i}.lock", "a+")
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    f.close()
                    continue
                f.seek(0)
                f.truncate()
                f.write(f"{os.getpid()}\n")
                f.flush()
                return _Device(i, f)
            if waited == 0.0:
                print(f"[ascend] all {len(ids)} NPU(s) are held by other workers; waiting for one", file=sys.stderr)
            time.sleep(1.0)
            waited += 1.0

    @property
    def device_name(self) -> str:
        return f"npu:{self.device.index}" if self.device else "none"

    # --- gate 1: static rules (shared with ascend-sim) --------------------------------------------------
    def static_check(self, source: str) -> list[Finding]:
        return static_check_project(source)

    def handle_build(self, request: dict[str, Any], log: BuildLog, rules: bool = True) -> dict[str, Any]:
        return {"ok": False, "error": "the ascend backend builds with CANN in the parent, not on request"}

    # --- environment and sandbox -------------------------------------------------------------------------
    def tool_env(self) -> dict[str, str]:
        """What the tools and the device process see: CANN's variables and the configured extras only (the
        caller's environment may hold secrets such as API keys)."""
        assert self.cann is not None
        env = {k: v for k, v in self.cann.env.items()
               if k in PASS_KEYS or k.startswith(PASS_PREFIXES) or k in self.settings.pass_env}
        for k in self.settings.pass_env:
            if k in self.environ:
                env[k] = self.environ[k]
        if self.settings.pythonpath:
            env["PYTHONPATH"] = ":".join(p for p in (self.settings.pythonpath, env.get("PYTHONPATH")) if p)
        return env

    def _device_nodes(self) -> list[Path]:
        dev = Path("/dev")
        nodes = [dev / n for n in DEVICE_NODES if (dev / n).exists()]
        if self.device is not None and (dev / f"davinci{self.device.index}").exists():
            nodes.append(dev / f"davinci{self.device.index}")
        return nodes

    def _spec(self, env: dict[str, str], cwd: Path, writable: list[Path], readonly: list[Path],
              cpu_s: int, devices: bool = False) -> SandboxSpec:
        assert self.cann is not None
        ro = [self.cann.home, *readonly]
        # the sandbox root is minimal (launcher._root_binds): every directory CANN's environment points at
        # (driver libraries, tools, python paths) and its install record are bound read-only
        # (PATH is not: it also holds the caller's own tool directories, pyenv shims and the like, which
        # the sandbox has no business seeing; CANN's tools live under its home, bound above)
        for key in ("PYTHONPATH", "LD_LIBRARY_PATH", "ASCEND_OPP_PATH", "ASCEND_AICPU_PATH",
                    "ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH"):
            ro += [Path(p) for p in env.get(key, "").split(":") if p and Path(p).is_dir()
                   and not Path(p).resolve().is_relative_to(Path("/usr"))]
        ro += [p for p in (Path("/etc/ascend_install.info"), Path("/usr/local/Ascend/driver")) if p.exists()]
        spec = SandboxSpec(threads=2, writable=writable, readonly=ro, env=env,
                           limits=Limits(cpu_s=cpu_s, fsize_mb=4096, nofile=4096), cwd=cwd)
        if devices:
            spec.devices = self._device_nodes()
        return spec

    def _run(self, argv: list[str], spec: SandboxSpec, timeout: float) -> tuple[int | None, str]:
        """A tool or the device runner in the sandbox; process group killed at the deadline."""
        from evokernel.verifier.trusted.launcher import run_sandboxed

        return run_sandboxed(argv, spec, timeout, mode=self.sandbox)

    # --- gate 2: build --------------------------------------------------------------------------------------
    def build_key(self, project: Project) -> str:
        assert self.cann is not None and self.helper is not None
        h = hashlib.sha256()
        for part in (str(BUILD_FORMAT), self.settings.soc, str(self.cann.home), self.settings.python,
                     self.helper.read_text(errors="replace"),
                     *(project.sources[k] for k in sorted(project.sources))):
            h.update(part.encode())
            h.update(b"\0")
        return h.hexdigest()[:24]

    def build(self, source: str) -> Build:
        """The candidate's operator installed and its binding built, cached by content. The build happens in
        its final directory (built artefacts may hold absolute paths) under a per-build lock, and build.json
        is written last: a worker sees a complete build or builds it itself. Raises BuildFailed."""
        assert self.cann is not None
        project = parse_candidate(source)
        key = self.build_key(project)
        work = self.root / "builds" / key
        t0 = time.perf_counter()
        with open(self.root / "builds" / f"{key}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            if (work / "build.json").is_file():
                meta = json.loads((work / "build.json").read_text())
                return Build(work, project, work / meta["module"], work / meta["vendor"], meta["steps"],
                             cached=True, seconds=time.perf_counter() - t0)
            env = self.tool_env()

            def runner(argv: list[str], cwd: Path, step_env: dict[str, str], timeout: float
                       ) -> tuple[int | None, str]:
                return self._run(argv, self._spec(step_env, cwd, [work], [], int(timeout) * 2 + 30), timeout)

            from evokernel.verifier.backends.ascend.toolchain import build_project

            try:
                try:
                    plan = build_project(project, work, CannEnv(self.cann.home, env), self.settings.soc, runner,
                                         self.build_timeout_s)
                except ToolchainError as exc:
                    raise BuildFailed(_build_diagnoses(exc), [_step_json(st) for st in exc.steps]) from None
                steps = [_step_json(st) for st in plan.steps]
                denv = device_env(plan, CannEnv(self.cann.home, env))
                try:
                    b = build_binding(project, work, denv, self.helper, self.settings.python, runner,
                                      self.build_timeout_s)
                except ToolchainError as exc:
                    imp = feedback.analyze_import(exc.step.output)
                    if imp is not None:  # torch_npu itself does not load: the machine, not the candidate
                        raise BackendUnavailable(f"backend ascend: building the binding needs torch_npu, which "
                                                 f"does not import: {imp.message}") from None
                    raise BuildFailed(binding_diagnoses(exc), steps + [_step_json(exc.step)]) from None
            except (BuildFailed, BackendUnavailable):
                shutil.rmtree(work, ignore_errors=True)  # failures are not cached
                raise
            steps += [_step_json(st) for st in b.steps]
            assert b.module_path is not None
            meta = {"module": str(b.module_path.relative_to(work)), "vendor": str(plan.vendor_dir.relative_to(work)),
                    "op_type": project.op_type, "soc": self.settings.soc, "steps": steps}
            (work / "build.json").write_text(json.dumps(meta, indent=1))
            return Build(work, project, b.module_path, plan.vendor_dir, steps, seconds=time.perf_counter() - t0)

    # --- the device ---------------------------------------------------------------------------------------
    def new_job(self) -> Path:
        job = self.root / "jobs" / f"{os.getpid()}-{uuid.uuid4().hex[:10]}"
        job.mkdir(parents=True)
        return job

    def finish_job(self, job: Path) -> None:
        if not self.settings.keep:
            shutil.rmtree(job, ignore_errors=True)

    def run_device(self, request: dict[str, Any], job: Path, timeout: float, build: Build | None = None,
                   name: str = "run", profiler: list[str] | None = None) -> DeviceRun:
        """device_runner.py for ``request`` in a fresh sandboxed process on this verifier's NPU (optionally
        under ``profiler`` argv, e.g. msprof op ...). A timeout or a device fault makes the device suspect."""
        assert self.cann is not None and self.device is not None
        self.ensure_healthy()
        req = {"device": f"{self.settings.device_type}:{self.device.index}", "device_id": self.device.index,
               **request}
        (job / f"{name}.req.json").write_text(json.dumps(req))
        res_path = job / f"{name}.res.json"
        env = self.tool_env()
        if build is not None:  # tool_env plus the installed op (ASCEND_CUSTOM_OPP_PATH, its op_api/lib)
            env = device_env(_plan_for(build), CannEnv(self.cann.home, env))
        argv = [self.settings.python, "-m", RUNNER_MODULE, str(job / f"{name}.req.json"), str(res_path)]
        if profiler:
            argv = profiler + argv
        readonly = [build.root] if build is not None else []
        spec = self._spec(env, job, [job], readonly, int(timeout) * 4 + 60, devices=True)  # CPU s: all threads
        t0 = time.perf_counter()
        rc, out = self._run(argv, spec, timeout)
        seconds = time.perf_counter() - t0
        result = None
        if rc is not None and res_path.is_file():
            try:
                result = json.loads(res_path.read_text())
                if not isinstance(result, dict):
                    result = None
            except (OSError, ValueError):
                result = None
        run = DeviceRun(rc, result, out, seconds, job, timed_out=rc is None)
        if run.timed_out:
            self.mark_suspect(f"{name} timed out after {timeout:.0f} s")
        elif feedback.needs_health_check(feedback.analyze_runtime(rc, out)):
            self.mark_suspect(f"{name}: device fault")
        return run

    def mark_suspect(self, why: str) -> None:
        if self.device is not None:
            self.device.suspect = why
            self.device.faults.append(why)

    def ensure_healthy(self) -> None:
        """After a fault: a health check (fresh process, trivial computation) before the device is used again;
        a device that stays unhealthy is marked bad and another free one is claimed (DeviceUnavailable when
        none is left)."""
        assert self.device is not None
        if not self.device.suspect:
            return
        last = ""
        for wait in self.settings.health_waits:
            time.sleep(wait)
            ok, last = self.health_check()
            if ok:
                self.device.suspect = ""
                return
        bad = self.device.index
        self._bad(bad).write_text(f"unhealthy after {self.device.suspect}: {last[:300]}\n")
        print(f"[ascend] npu:{bad} is unhealthy after {self.device.suspect}; marked bad", file=sys.stderr)
        self.close()
        self.device = self._claim_device(exclude=(bad,))

    def health_check(self) -> tuple[bool, str]:
        assert self.cann is not None and self.device is not None
        self.health_checks += 1
        job = self.new_job()
        try:
            (job / "health.req.json").write_text(json.dumps(
                {"role": "health", "device": f"{self.settings.device_type}:{self.device.index}",
                 "device_id": self.device.index}))
            argv = [self.settings.python, "-m", RUNNER_MODULE, str(job / "health.req.json"), str(job / "health.res.json")]
            rc, out = self._run(argv, self._spec(self.tool_env(), job, [job], [], 300, devices=True), 120.0)
            try:
                res = json.loads((job / "health.res.json").read_text())
            except (OSError, ValueError):
                res = {}
            return (rc == 0 and bool(res.get("ok"))), (res.get("error") or out[-300:] or f"exit {rc}")
        finally:
            shutil.rmtree(job, ignore_errors=True)

    # --- profiling ---------------------------------------------------------------------------------------
    def msprof_available(self) -> bool:
        return self.cann is not None and bool(shutil.which("msprof", path=self.cann.env.get("PATH", "")))

    def msprof_argv(self, out_dir: Path, launch_count: int, kernel_name: str | None) -> list[str]:
        argv = ["msprof", "op", f"--output={out_dir}", f"--launch-count={max(1, min(5000, launch_count))}",
                f"--warm-up={self.settings.msprof_warmup}", f"--aic-metrics={MSPROF_METRICS}"]
        if kernel_name:
            argv.insert(2, f"--kernel-name={kernel_name}")
        return argv

    def reference_timing(self, key: tuple[Any, ...], make: Any) -> dict[str, Any]:
        """The eager reference's timing, measured once per (task, shapes, device, protocol) and reused."""
        full = (*key, self.device_name, self.settings.timing)
        if full not in self._ref_timing:
            self._ref_timing[full] = make()
        return self._ref_timing[full]


# ---------------------------------------------------------------------------------------------------------
def _step_json(step: Any) -> dict[str, Any]:
    return {"name": step.name, "argv": step.argv, "rc": step.rc, "seconds": round(step.seconds, 3),
            "output_tail": step.output[-2000:]}


def _build_diagnoses(exc: ToolchainError) -> list[Diagnosis]:
    step = exc.step
    if step.rc is None:
        return [feedback.timeout_diagnosis("build" if step.name != "install" else "install", step.seconds)]
    if step.rc == 0:  # the step "succeeded" but left no artefact
        stage = "install" if step.name == "install" else "build"
        return [Diagnosis(stage, "missing_artifact", exc.message, feedback._tail(step.output, 8))]
    diags = feedback.analyze_build(step.rc, step.output, "", stage="install" if step.name == "install" else "build")
    if step.name == "msopgen" and not any(d.kind != "build_failed" for d in diags):
        diags = [Diagnosis("build", "msopgen_failed", "msopgen rejected the op description (project_json_src): "
                           "check the op name (PascalCase), inputs/outputs and dtype lists",
                           feedback._tail(step.output, 10))]
    return diags


def _plan_for(build: Build) -> BuildPlan:
    plan = BuildPlan(build.project, build.root)
    plan.install_dir = build.vendor_dir.parent.parent
    return plan


def bootstrap_ratio_ci(ref: list[float], cand: list[float], rng: random.Random,
                       resamples: int = 1000) -> tuple[float, float]:
    """95% bootstrap interval of median(ref) / median(cand), the two samples resampled independently
    (the events protocol times the sides in separate processes, so there are no per-round pairs)."""
    if len(ref) < 3 or len(cand) < 3:
        s = statistics.median(ref) / statistics.median(cand)
        return s, s
    vals = sorted(statistics.median(rng.choices(ref, k=len(ref))) / statistics.median(rng.choices(cand, k=len(cand)))
                  for _ in range(resamples))
    return vals[int(0.025 * resamples)], vals[int(0.975 * resamples) - 1]
