"""The `ascend-sim` backend (trusted side): Ascend C operator projects on the CPU emulator.

* static check: the six strings are read from the candidate's syntax tree (the file never runs);
  model_src gets the Python rules (plus `custom_ops_lib`/`torch_npu` imports), the kernel, host and
  tiling sources the native rules for Ascend C;
* builds: the sandboxed worker asks for one library per dtype combination (`kind: "ascend"`); this
  process re-reads the project from the candidate source it judged and builds it in a throw-away
  sandbox (`build.py`), cached by content;
* latency: modelled, not measured (`timing_mode = "model"`): the emulator's per-block pipe schedule
  and counters of a checked run give the kernel's estimate, the reference's recorded ATen operators
  give the eager estimate on the same hardware constants (`hardware.py`, `latency_model.py`).
"""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from evokernel.cpu import CompileError
from evokernel.verifier.backends.base import Backend, BuildLog
from evokernel.verifier.trusted import native_rules
from evokernel.verifier.trusted.ast_allowlist import ASCEND_NATIVE, check_glue
from evokernel.verifier.trusted.findings import Finding
from evokernel.verifier.backends.cpu import build_limits
from evokernel.verifier.trusted.launcher import SandboxSpec, run_sandboxed

from . import build
from .project import FIELDS, ProjectError, parse_candidate

NATIVE_FIELDS = ("host_tiling_src", "host_operator_src", "kernel_src")
# per emulated block: stops a kernel that loops for ever while calling the API (a timeout would also
# catch it, but this names the cause)
MAX_INSTRUCTIONS = 20_000_000


def _line_of(source: str, field: str) -> int:
    for i, line in enumerate(source.splitlines(), 1):
        if line.lstrip().startswith(field):
            return i
    return 0


# What the emulator's build defines per native source (build.kernel_prelude: the kernel is built as CANN's
# CPU-debug build builds it; the host sources get only what they define themselves): the rules then skip the
# branches that build never compiles (native_rules.active_code). None: a device build (the ascend backend).
SIM_DEFINED = {"kernel_src": native_rules.CPU_DEBUG_MACROS, "host_operator_src": frozenset(),
               "host_tiling_src": frozenset()}


def native_findings(project, sim: bool) -> list[tuple[str, Finding]]:
    """(field, finding) of the native rules over the three native sources."""
    return [(field, f) for field in NATIVE_FIELDS
            for f in native_rules.check_native(project.sources[field], "ascend" if field == "kernel_src" else "ascend-host",
                                               SIM_DEFINED[field] if sim else None)]


def static_check_project(source: str, sim: bool = False) -> list[Finding]:
    """The static rules of an Ascend C candidate (ascend-sim with ``sim``, and ascend): the outer file is read,
    never run; model_src gets the Python rules and may only call the binding's exported functions; the native
    sources get the native rules plus Ascend C includes only (for ascend-sim, over the code its build
    compiles)."""
    try:
        project = parse_candidate(source)
    except ProjectError as exc:
        if str(exc).startswith("candidate.py:") and ": error: " in str(exc):
            raise SyntaxError(str(exc).split(": error: ", 1)[1]) from None
        return [Finding("structure", 0, str(exc))]
    findings: list[Finding] = []
    model = project.sources["model_src"]
    try:
        for f in check_glue(model, "model_src.py", native_modules=ASCEND_NATIVE, exported=set(project.bindings)):
            findings.append(Finding(f.rule, f.line, f"model_src: {f.message}"))
    except SyntaxError as exc:
        return [Finding("structure", exc.lineno or 0, f"model_src.py:{exc.lineno}: error: {exc.msg}")]
    if "custom_ops_lib" not in model:
        findings.append(Finding("structure", 0, "model_src must call the operator through "
                                     f"custom_ops_lib.{next(iter(project.bindings))}(...)"))
    for field, f in native_findings(project, sim):
        findings.append(Finding(f.rule, f.line, f"{field}: {f.message}"))
    for f in native_rules.check_native(project.sources["python_bind_src"], "binding"):
        findings.append(Finding(f.rule, f.line, f"python_bind_src: {f.message}"))
    return findings


class AscendSimBackend(Backend):
    name = "ascend-sim"
    timing_mode = "model"
    load_options = {"loader": "ascend"}

    def __init__(self, cache_dir: Path, build_timeout_s: float = 600.0):
        self.cache_dir = cache_dir
        self.build_timeout_s = build_timeout_s

    # --- gate 1: static rules ----------------------------------------------------------------------
    def static_check(self, source: str) -> list[Finding]:
        return static_check_project(source, sim=True)

    # --- gate 2: builds ----------------------------------------------------------------------------
    def _runner(self, argv: list[str], cwd: Path, timeout: float, writable: Path) -> tuple[int | None, str]:
        # the emulator's sources and its compiled runtime (trusted builds), the build's own folder, nothing else
        runtime = self.cache_dir / "ascend_sim" / "runtime"
        runtime.mkdir(parents=True, exist_ok=True)
        spec = SandboxSpec(threads=2, writable=[writable], readonly=[build.SIM_DIR, runtime],
                           limits=build_limits(timeout), cwd=cwd, seccomp="build", name="build")
        return run_sandboxed(argv, spec, timeout)

    def handle_build(self, request: dict[str, Any], log: BuildLog, rules: bool = True) -> dict[str, Any]:
        log.requests += 1
        if log.requests > log.MAX_REQUESTS:
            message = f"too many native builds requested (more than {log.MAX_REQUESTS})"
            log.errors.append(message)
            return {"ok": False, "error": message}
        if request.get("kind") != "ascend":
            return {"ok": False, "error": f"the ascend-sim backend builds operator projects, not {request.get('kind')!r}"}
        try:
            project = parse_candidate(str(request.get("source", "")))
            combo = int(request.get("combo", 0))
            if not 0 <= combo < project.combos:
                raise ProjectError(f"no dtype combination {combo}")
            if rules:
                findings = [f"{fld}: {f}" for fld, f in native_findings(project, sim=True)]
                if findings:
                    log.hack += [f"native source {f}" for f in findings]
                    return {"ok": False, "error": "rejected by the verifier's native-code rules"}
            result = build.build_project(project, combo, self.cache_dir, self._runner, self.build_timeout_s)
        except (ProjectError, ValueError) as exc:
            log.errors.append(str(exc))
            return {"ok": False, "error": str(exc)}
        except CompileError as exc:
            log.errors.append(exc.diagnostics)
            return {"ok": False, "error": exc.diagnostics}
        log.builds += 1
        log.cached += int(result.cached)
        log.seconds += result.seconds
        return {"ok": True, "path": str(result.path)}

    # --- what the worker needs to run the emulator -------------------------------------------------
    def load_message(self) -> dict[str, Any]:
        from .hardware import Ascend910B

        hw = Ascend910B()
        return {**self.load_options, "sim": {"core_num_aiv": hw.aiv_cores, "max_instructions": MAX_INSTRUCTIONS,
                                             "hw_model_json": hw.runtime_json()}}

    # --- latency: the model --------------------------------------------------------------------------
    def estimate(self, reports: list[dict[str, Any]], eager_ops: list[dict[str, Any]]) -> dict[str, Any]:
        """Kernel and eager estimates for one forward (its emulator reports and the reference's ops)."""
        from . import latency_model
        from .hardware import Ascend910B

        hw = Ascend910B()
        kernels = [latency_model.estimate_kernel(r, hw) for r in reports]
        eager = latency_model.estimate_eager(eager_ops, hw)
        kernel_us = sum(k.us for k in kernels)
        return {
            "kernel_us": kernel_us,
            "eager_us": eager.us,
            "kernels": [k.to_json() for k in kernels],
            "eager": eager.to_json(),
            "profile": "\n".join(k.profile_text() for k in kernels),
            "hardware": asdict(hw),
            "label": "modelled estimate (ascend-sim latency model), not a measurement",
        }


__all__ = ["AscendSimBackend", "FIELDS"]
