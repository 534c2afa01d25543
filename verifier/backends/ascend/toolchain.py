"""The CANN command sequence for one Ascend C candidate (trusted side; issue 6, work in progress).

    locate CANN -> write <op>.json -> msopgen gen -> write the project's sources -> ./build.sh
    (ASCEND_CUSTOM_OPP_PATH unset) -> build_out/custom_opp_*.run --install-path=<candidate dir>
    -> the environment a device-side process needs to find the installed op

Every step is a subprocess in the candidate's own working directory, with a timeout that kills its
process group, and its argv, return code, output and duration are kept (`Step`) so a failure becomes
feedback (`feedback.py`) and a test can assert the exact sequence. Nothing here imports torch_npu:
importing it without CANN ends the process, so only the device-side runner does.

Recorded behaviour this follows: /work/shared/reference/ascend-toolchain.md §1.1 (MultiKernelBench's
flow), §2 (project layout, installer flags), §4 (failure texts). NOT yet run on a real CANN machine.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from evokernel.verifier.backends.ascend_sim.project import Project

DEFAULT_SOC = "Ascend910B2"  # msopgen's -c ai_core-<soc>; MultiKernelBench builds for ai_core-Ascend910B2
SET_ENV_CANDIDATES = ("/usr/local/Ascend/ascend-toolkit/set_env.sh",
                      "/usr/local/Ascend/ascend-toolkit/latest/set_env.sh")
ENV_KEYS = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH", "ASCEND_AICPU_PATH", "LD_LIBRARY_PATH",
            "PATH", "PYTHONPATH", "ASCEND_CUSTOM_OPP_PATH", "TOOLCHAIN_HOME", "ASCEND_GLOBAL_LOG_LEVEL")


class CannNotFound(RuntimeError):
    """No usable CANN installation (the message says where we looked and what to do)."""


@dataclass
class Step:
    name: str
    argv: list[str]
    cwd: str
    rc: int | None  # None: timed out (process group killed)
    output: str
    seconds: float

    @property
    def ok(self) -> bool:
        return self.rc == 0


@dataclass
class CannEnv:
    home: Path
    env: dict[str, str]  # the environment set_env.sh produces (or the caller's, when already sourced)


def _source(set_env: Path, base: dict[str, str]) -> dict[str, str]:
    """The environment after `source set_env.sh` (bash, NUL-separated `env -0`)."""
    out = subprocess.run(["bash", "-c", f'source "{set_env}" >/dev/null 2>&1 && env -0'], env=base,
                         capture_output=True, timeout=60)
    if out.returncode != 0:
        raise CannNotFound(f"sourcing {set_env} failed (exit {out.returncode})")
    env = {}
    for item in out.stdout.split(b"\0"):
        if b"=" in item:
            k, v = item.split(b"=", 1)
            env[k.decode()] = v.decode(errors="replace")
    return env


def locate_cann(environ: dict[str, str] | None = None) -> CannEnv:
    """CANN from ASCEND_HOME_PATH / ASCEND_TOOLKIT_HOME (an already-sourced shell), else set_env.sh at
    ASCEND_SET_ENV or the default install locations. CannNotFound says what is missing."""
    base = dict(os.environ if environ is None else environ)
    home = base.get("ASCEND_HOME_PATH") or base.get("ASCEND_TOOLKIT_HOME")
    if home and Path(home).is_dir():
        return CannEnv(Path(home), base)
    tried = [base["ASCEND_SET_ENV"]] if base.get("ASCEND_SET_ENV") else []
    tried += list(SET_ENV_CANDIDATES)
    for cand in tried:
        p = Path(cand)
        if p.is_file():
            env = _source(p, base)
            home = env.get("ASCEND_HOME_PATH") or env.get("ASCEND_TOOLKIT_HOME")
            if not home:
                raise CannNotFound(f"{p} did not set ASCEND_HOME_PATH")
            return CannEnv(Path(home), env)
    raise CannNotFound("no CANN toolkit found: ASCEND_HOME_PATH is not set and no set_env.sh at "
                       + ", ".join(tried) + ". Install CANN and `source <cann>/set_env.sh`, or set ASCEND_SET_ENV "
                       "to its path (the ascend-sim backend needs no CANN)")


Runner = Callable[[list[str], Path, dict[str, str], float], tuple[int | None, str]]


def run_step(argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int | None, str]:
    """Run one tool in its own process group; on timeout kill the whole group (build.sh spawns make,
    cmake, compilers). Output is stdout and stderr together, decoded leniently (logs hold binary bytes)."""
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out.decode(errors="replace")
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, _ = proc.communicate()
        return None, (out or b"").decode(errors="replace")


@dataclass
class BuildPlan:
    """Where one candidate's project lives and what the steps produced."""
    project: Project
    workdir: Path
    soc: str = DEFAULT_SOC
    steps: list[Step] = field(default_factory=list)
    install_dir: Path | None = None
    run_file: Path | None = None

    @property
    def op_dir(self) -> Path:
        return self.workdir / self.project.op_type

    @property
    def vendor_dir(self) -> Path:
        assert self.install_dir is not None
        return self.install_dir / "vendors" / "customize"


class ToolchainError(RuntimeError):
    def __init__(self, step: Step, message: str, steps: list[Step] | None = None):
        super().__init__(message)
        self.step, self.message = step, message
        self.steps = steps if steps is not None else [step]  # every step that ran, the failing one last


def build_project(project: Project, workdir: Path, cann: CannEnv, soc: str = DEFAULT_SOC,
                  runner: Runner = run_step, timeout: float = 900.0) -> BuildPlan:
    """Steps 1-5 of the flow for one candidate in its own ``workdir`` (created fresh). Raises
    ToolchainError at the first failing step; BuildPlan.steps has every step that ran."""
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    plan = BuildPlan(project, workdir, soc)
    env = {k: v for k, v in cann.env.items() if k != "ASCEND_CUSTOM_OPP_PATH"}  # it perturbs the build

    def step(name: str, argv: list[str], cwd: Path, t: float = timeout) -> Step:
        t0 = time.perf_counter()
        rc, out = runner(argv, cwd, env, t)
        s = Step(name, argv, str(cwd), rc, out, time.perf_counter() - t0)
        plan.steps.append(s)
        if rc is None:
            raise ToolchainError(s, f"{name} timed out after {t:.0f} s", plan.steps)
        if rc != 0:
            raise ToolchainError(s, f"{name} failed (exit {rc})", plan.steps)
        return s

    snake, op_type = project.snake, project.op_type
    desc = workdir / f"{snake}.json"
    desc.write_text(project.sources["project_json_src"])
    step("msopgen", ["msopgen", "gen", "-i", str(desc), "-c", f"ai_core-{soc}", "-lan", "cpp", "-out", op_type],
         workdir, 300)
    if not (plan.op_dir / "build.sh").is_file():
        raise ToolchainError(plan.steps[-1], f"msopgen produced no {op_type}/build.sh", plan.steps)
    # overwrite the generated sources with the candidate's (msopgen names them after the op)
    (plan.op_dir / "op_host").mkdir(exist_ok=True)
    (plan.op_dir / "op_kernel").mkdir(exist_ok=True)
    (plan.op_dir / "op_host" / f"{snake}.cpp").write_text(project.sources["host_operator_src"])
    (plan.op_dir / "op_host" / Path(project.tiling_header).name).write_text(project.sources["host_tiling_src"])
    (plan.op_dir / "op_kernel" / f"{snake}.cpp").write_text(project.sources["kernel_src"])
    step("build", ["./build.sh"], plan.op_dir)  # as msopgen made it (its shebang decides)
    runs = sorted((plan.op_dir / "build_out").glob("custom_opp_*.run"))
    if not runs:
        raise ToolchainError(plan.steps[-1], "build.sh succeeded but produced no build_out/custom_opp_*.run",
                             plan.steps)
    plan.run_file = runs[0]
    plan.install_dir = workdir / "opp"
    step("install", [str(plan.run_file), f"--install-path={plan.install_dir}"], workdir, 300)
    lib = plan.vendor_dir / "op_api" / "lib" / "libcust_opapi.so"
    if not lib.is_file():
        raise ToolchainError(plan.steps[-1], f"the installer left no {lib.relative_to(workdir)}", plan.steps)
    return plan


def device_env(plan: BuildPlan, cann: CannEnv) -> dict[str, str]:
    """The environment of the device-side process: the installed op found through ASCEND_CUSTOM_OPP_PATH
    and its op_api/lib on LD_LIBRARY_PATH (per candidate: no global OPP install, parallel-safe)."""
    env = dict(cann.env)
    env["ASCEND_CUSTOM_OPP_PATH"] = str(plan.vendor_dir)
    lib = str(plan.vendor_dir / "op_api" / "lib")
    env["LD_LIBRARY_PATH"] = lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env
