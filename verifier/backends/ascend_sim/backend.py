"""The `ascend-sim` backend (trusted side): Ascend C operator projects on the CPU emulator.

* static check: the six strings are read from the candidate's syntax tree (the file never runs);
  model_src gets the Python rules (plus `custom_ops_lib`/`torch_npu` imports), the kernel, host and
  tiling sources the native rules for Ascend C;
* builds: the sandboxed worker asks for one kernel library per dtype combination (`kind: "ascend"`); this
  process re-reads the project from the candidate source it judged and builds it in a throw-away sandbox
  (`build.py`), cached by content, with the project's host library beside it; both are judged as binaries
  (`judge.py`) and the worker only ever receives the kernel library;
* host code: TilingFunc, InferShape and the OpDef run in a host process of their own on shapes, dtypes and
  attributes (`host.py`); the worker asks for a tiling (`kind: "ascend_tiling"`) and gets its bytes, block
  count, key and workspace sizes, cached per verdict;
* latency: modelled, not measured (`timing_mode = "model"`): the emulator's per-block pipe schedule
  and counters of a checked run give the kernel's estimate, the reference's recorded ATen operators
  give the eager estimate on the same hardware constants (`hardware.py`, `latency_model.py`); `audit`
  checks first that the reports claim no less than the data requires (`audit.py`).
"""
from __future__ import annotations

import json
import os
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from evokernel.cpu import CompileError
from evokernel.verifier.backends.base import Backend, BuildLog
from evokernel.verifier.trusted import native_rules
from evokernel.verifier.trusted.ast_allowlist import ASCEND_NATIVE, check_glue
from evokernel.verifier.trusted.findings import Finding
from evokernel.verifier.backends.cpu import build_limits

from . import abi, audit, build, host, judge, report_size
from .project import FIELDS, Project, ProjectError, parse_candidate
from . import report as report_text
from .report import judge_report

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


# a small integer input the OpDef declares ValueDepend reaches TilingFunc with its values, as on CANN (an axis, a
# shape); larger or floating ones do not (a TilingFunc would compute on the data the kernel should)
VALUE_DEPEND_MAX = 64
_INT_DTYPES = {"int8", "uint8", "int16", "int32", "int64", "bool"}
MAX_TILINGS = 32  # distinct calls per verdict (each starts a host process; repeats are answered from the cache)


@dataclass
class _VerdictState:
    """What the backend keeps for one verdict (one BuildLog): the project it built, its host library and OpDef,
    and the tilings the host process computed (requested by the worker, served to it, audited against)."""
    source: str = ""
    project: Project | None = None
    host_lib: Path | None = None
    opdef: dict[str, Any] | None = None
    tilings: dict[str, dict[str, Any]] = field(default_factory=dict)  # request key -> answer
    served: dict[str, dict[str, Any]] = field(default_factory=dict)  # tiling id -> tiling
    host_seconds: float = 0.0  # wall time of this verdict's host processes (tilings), against the budget below
    host_calls: int = 0


# One verdict's host processes together: a TilingFunc takes milliseconds and a process starts in about a second,
# so this leaves room for many shapes on a loaded machine; a TilingFunc that spins just under the per-process CPU
# limit on shape after shape (red-team round 2: 8 shapes, 200 s, feasible) is stopped by it.
HOST_VERDICT_BASE_S, HOST_VERDICT_PER_CALL_S = 60.0, 5.0


class AscendSimBackend(Backend):
    name = "ascend-sim"
    timing_mode = "model"
    load_options = {"loader": "ascend"}

    def __init__(self, cache_dir: Path, build_timeout_s: float = 600.0):
        self.cache_dir = cache_dir
        self.build_timeout_s = build_timeout_s
        # builds see only neutral paths: their folder at /build, the emulator at /opt/evk/ascend (build.sandbox)
        self._runner = build.sandbox(build_limits)
        self._verdicts: "weakref.WeakKeyDictionary[BuildLog, _VerdictState]" = weakref.WeakKeyDictionary()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ascend-host-build")

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def judge_report(self, report: dict[str, Any]) -> str:
        return judge_report(report)

    def receive_reports(self, reports: list[Any]) -> list[Any]:
        """Repeated blocks written out again (the worker sends each run of them once: report_size.py)."""
        return report_size.expand(reports)

    def report_warnings(self, trials: list[list[dict[str, Any]]]) -> list[str]:
        return report_text.report_warnings(trials)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ascend-host-build")

    # --- gate 1: static rules ----------------------------------------------------------------------
    def static_check(self, source: str) -> list[Finding]:
        return static_check_project(source, sim=True)

    # --- gate 2: builds ----------------------------------------------------------------------------
    def state(self, log: BuildLog) -> _VerdictState:
        if log not in self._verdicts:
            self._verdicts[log] = _VerdictState()
        return self._verdicts[log]

    def handle_build(self, request: dict[str, Any], log: BuildLog, rules: bool = True) -> dict[str, Any]:
        if request.get("kind") == "ascend_tiling":
            return self.handle_tiling(request, log)
        log.requests += 1
        if log.requests > log.MAX_REQUESTS:
            message = f"too many native builds requested (more than {log.MAX_REQUESTS})"
            log.errors.append(message)
            return {"ok": False, "error": message}
        if request.get("kind") != "ascend":
            return {"ok": False, "error": f"the ascend-sim backend builds operator projects, not {request.get('kind')!r}"}
        st = self.state(log)
        try:
            source = str(request.get("source", ""))
            project = parse_candidate(source)
            combo = int(request.get("combo", 0))
            if not 0 <= combo < project.combos:
                raise ProjectError(f"no dtype combination {combo}")
            if st.project is not None and source != st.source:
                raise ProjectError("one candidate per verdict: the worker asked for another project's build")
            if rules:
                findings = [f"{fld}: {f}" for fld, f in native_findings(project, sim=True)]
                if findings:
                    log.hack += [f"native source {f}" for f in findings]
                    return {"ok": False, "error": "rejected by the verifier's native-code rules"}
            host_build = None
            if st.host_lib is None:  # the host library builds beside the first kernel library (2 cores)
                log.seconds += build.build_runtime(self.cache_dir, self._runner, self.build_timeout_s).seconds
                host_build = self._pool.submit(build.build_host, project, self.cache_dir, self._runner,
                                               log.timeout(self.build_timeout_s), log.budget)
            try:
                result = build.build_kernel(project, combo, self.cache_dir, self._runner,
                                            log.timeout(self.build_timeout_s), log.budget)
            finally:
                hosted = host_build.result() if host_build is not None else None  # a CompileError propagates
            if rules and self._judged(result, log):
                return {"ok": False, "error": "rejected by the verifier's binary judge"}
            if hosted is not None:
                log.builds += 1
                log.cached += int(hosted.cached)
                log.seconds += hosted.seconds
                if rules and self._judged(hosted, log):
                    return {"ok": False, "error": "rejected by the verifier's binary judge"}
                st.opdef = self._describe(hosted.path, project, log)
                st.host_lib, st.project, st.source = hosted.path, project, source
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

    def _judged(self, result: Any, log: BuildLog) -> bool:
        """The binary judge on a kernel or host build; its findings go to the hack gate."""
        runtime = build.build_runtime(self.cache_dir, self._runner, self.build_timeout_s)
        findings = judge.judge(result.facts, judge.policy(str(build.runtime_symbols(runtime))))
        log.hack += [f"built library {f}" for f in findings]
        return bool(findings)

    def _describe(self, host_lib: Path, project: Project, log: BuildLog) -> dict[str, Any]:
        """The OpDef the host library registers (run in the host process once per host build, cached beside it)."""
        cached = host_lib.parent / "opdef.json"
        if cached.is_file():
            opdef = json.loads(cached.read_text())
        else:
            try:
                result = host.run_host(host_lib, {"mode": "describe", "op": project.op_type}, self._scratch())
            except (host.HostError, OSError) as exc:
                raise ProjectError(f"host_operator_src: {exc}") from None
            if not result.get("ok"):
                raise ProjectError(f"host_operator_src: {result.get('error')}")
            opdef = result.get("opdef")
            tmp = cached.with_suffix(".tmp")
            tmp.write_text(json.dumps(opdef))
            os.replace(tmp, cached)
        if opdef is None:
            raise ProjectError(f"host_operator_src registers no OpDef named {project.op_type} (the op in "
                               f"project_json_src); add `OP_ADD({project.op_type});` in namespace ops")
        return opdef

    def _scratch(self) -> Path:
        return self.cache_dir / "ascend_sim" / "host_runs"

    # --- the host process: tilings ------------------------------------------------------------------
    def handle_tiling(self, request: dict[str, Any], log: BuildLog) -> dict[str, Any]:
        """The worker's request for the tiling of one call (shapes, dtypes, attributes): computed by the host
        process, cached for the verdict; the answer carries the tiling, or the feedback that explains its failure."""
        st = self.state(log)
        if st.project is None or st.host_lib is None or st.opdef is None:
            return {"ok": False, "error": "a tiling was requested before the operator project was built"}
        project, opdef = st.project, st.opdef
        try:
            call = self._tiling_call(request, project, opdef)
        except ValueError as exc:
            return {"ok": False, "error": str(exc)}
        key = json.dumps(call, sort_keys=True)
        if key not in st.tilings:
            if len(st.tilings) >= MAX_TILINGS:
                return {"ok": False, "error": f"more than {MAX_TILINGS} distinct operator calls (shapes, dtypes, "
                                              "attributes) in one verification"}
            st.tilings[key] = self._compute_tiling(st, call)
        return st.tilings[key]

    def _tiling_call(self, request: dict[str, Any], project: Project, opdef: dict[str, Any]) -> dict[str, Any]:
        ins, outs = list(request.get("inputs") or []), list(request.get("outputs") or [])
        if len(ins) != len(opdef["inputs"]) or len(outs) != len(opdef["outputs"]):
            raise ValueError(f"EXEC_NPU_CMD passes {len(ins)} input(s) and {len(outs)} output(s); the OpDef of "
                             f"{project.op_type} declares {len(opdef['inputs'])} and {len(opdef['outputs'])}")

        def tensor(t: dict[str, Any], decl: dict[str, Any], is_input: bool) -> dict[str, Any]:
            dtype = str(t.get("dtype"))
            if dtype not in abi.GE_CODE:
                raise ValueError(f"unsupported dtype {dtype!r}")
            out = {"name": str(decl["name"]), "dtype": dtype, "dims": [int(d) for d in t.get("dims") or []]}
            values = t.get("values")
            if is_input and decl.get("value_depend") is True:
                numel = 1
                for d in out["dims"]:
                    numel *= d
                if dtype not in _INT_DTYPES or numel > VALUE_DEPEND_MAX or values is None or len(values) != numel:
                    raise ValueError(f"input '{decl['name']}' is declared ValueDepend: its values reach TilingFunc "
                                     f"only for integer inputs of at most {VALUE_DEPEND_MAX} elements (this one is "
                                     f"{dtype} with {numel}); compute on data in the kernel")
                out["values"] = [int(v) for v in values]
            return out

        attrs = request.get("attrs") or []
        if not isinstance(attrs, list) or not all(
                isinstance(a, (int, float, str)) or (isinstance(a, list) and all(isinstance(x, (int, float)) for x in a))
                for a in attrs):
            raise ValueError("attributes must be numbers, strings or lists of numbers")
        return {"op": project.op_type,
                "inputs": [tensor(t, d, True) for t, d in zip(ins, opdef["inputs"])],
                "outputs": [tensor(t, d, False) for t, d in zip(outs, opdef["outputs"])],
                "attrs": attrs}

    def _compute_tiling(self, st: _VerdictState, call: dict[str, Any]) -> dict[str, Any]:
        assert st.host_lib is not None
        msg = self.load_message()["sim"]
        request = {"mode": "tiling", **call, "sim": {k: msg[k] for k in ("core_num_aiv", "hw_model_json")}}
        allowed = HOST_VERDICT_BASE_S + HOST_VERDICT_PER_CALL_S * (st.host_calls + 1)
        if st.host_seconds > allowed:
            return {"ok": False, "error": f"The host code of {call['op']} used {st.host_seconds:.0f} s over "
                                          f"{st.host_calls} tiling call(s) of this verdict (at most {allowed:.0f} s: "
                                          f"a TilingFunc computes a tiling from shapes in milliseconds)"}
        t0 = time.monotonic()
        try:
            result = host.run_host(st.host_lib, request, self._scratch())
        except host.HostError as exc:
            return {"ok": False, "error": f"The host code of {call['op']} failed: {exc}"}
        except OSError as exc:  # the verifier's own side (scratch folder, sandbox start): no verdict on the candidate
            return {"ok": False, "error": f"the verifier could not run the host process: {exc}"}
        finally:
            st.host_seconds += time.monotonic() - t0
            st.host_calls += 1
        if not result.get("ok"):
            return {"ok": False, "error": f"The host code of {call['op']} failed: {result.get('error')}"}
        report = result.get("report")
        if not isinstance(report, dict):
            return {"ok": False, "error": f"the host process of {call['op']} returned no tiling"}
        report.setdefault("op_type", call["op"])
        feedback = judge_report(report)
        if feedback:
            return {"ok": False, "error": feedback}
        t = report["tiling"]
        tiling = {"block_dim": report["block_dim"], "tiling_key": report["tiling_key"],
                  "schedule_mode": t["schedule_mode"], "data_hex": t["data_hex"], "workspace_sizes": t["workspace_sizes"]}
        tiling["id"] = audit.tiling_id(tiling)
        st.served[tiling["id"]] = tiling
        warnings = [v for v in report.get("violations") or [] if v.get("severity") == "warning"]
        return {"ok": True, "tiling": tiling, "host_violations": warnings[:32], "printed": report.get("kernel_printf", "")}

    # --- the parent's check of what the reports claim ------------------------------------------------
    def audit(self, log: BuildLog, trials: list[list[dict[str, Any]]], io_bytes: tuple[int, int] | None) -> list[str]:
        """Problems with the emulator reports of one verdict (audit.py): each one is a hack."""
        st = self.state(log)
        return audit.audit(trials, st.served, io_bytes, st.project)

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
