"""Runs INSIDE the sandbox: an Ascend C candidate's `custom_ops_lib`, backed by the ascend-sim emulator.

The worker reads the candidate's six strings (never running the outer file), asks the trusted parent
to build the project's kernel libraries (one shared library per dtype combination: emulator runtime + kernel;
the host code is never in this process), loads them with ctypes, and executes ``model_src`` with a
`custom_ops_lib` module whose functions do what the binding (python_bind_src) does: allocate the outputs it
allocates, ask the parent for the tiling of the call (the parent runs TilingFunc in a separate host process
on the shapes, dtypes and attributes: backends/ascend_sim/host.py), then run the kernel once per block
through `evk_sim_run_kernel` in EXEC_NPU_CMD's argument order. Each call's JSON report (rule violations,
per-block counters, what the API moved) is kept for the parent, which judges and audits it and derives the
latency estimate. A call whose report has an error or fatal violation, or whose tiling failed, raises
`HardwareRuleError`: on an NPU that kernel would fault, hang or return garbage.

Once the libraries are loaded (each with its own GM window), a second seccomp filter forbids executable
memory and any mapping change inside the windows (sandboxed/ascend_seccomp.py).
"""
from __future__ import annotations

import ctypes
import json
import os
import struct
import sys
import tempfile
import types
from typing import Any, Callable

import torch

import evokernel.cpu as native
from evokernel.verifier.backends.ascend_sim import abi, report_size
from evokernel.verifier.backends.ascend_sim.binding import CallPlan, TensorInfo, plan_call
from evokernel.verifier.backends.ascend_sim.project import Project, ProjectError, parse_candidate
from evokernel.verifier.backends.ascend_sim.report import judge_report
from evokernel.verifier.sandboxed import ascend_seccomp

_TORCH_NAME = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16", torch.int8: "int8",
               torch.int32: "int32", torch.uint8: "uint8", torch.int16: "int16", torch.int64: "int64",
               torch.bool: "bool", torch.float64: "float64"}
_TORCH_DTYPE = {v: k for k, v in _TORCH_NAME.items()}
MAX_REPORTS = 64  # per forward; a model calling the op more often keeps the first ones
# the values of small integer inputs go with a tiling request: the parent hands them to TilingFunc if the OpDef
# declares the input ValueDepend (as CANN does), and drops them otherwise
_VALUE_DTYPES = {"int8": "b", "uint8": "B", "int16": "h", "int32": "i", "int64": "q", "bool": "?"}
VALUE_DEPEND_MAX = 64


class HardwareRuleError(RuntimeError):
    """The emulator found violations of the NPU's rules, or the host code failed (the message is the LLM-facing
    feedback)."""


class _Library:
    """One kernel library (a dtype combination), with its own GM window."""

    def __init__(self, path: str, project: Project, index: int):
        self.dll = abi.declare(ctypes.CDLL(path))
        try:
            self.kernel = ctypes.cast(getattr(self.dll, project.kernel_symbol), ctypes.c_void_p).value
        except AttributeError:
            raise ProjectError(f"the built library has no kernel symbol {project.kernel_symbol}") from None
        if self.dll.evk_sim_set_window(abi.window_base(index)) != 0:
            raise ProjectError("the emulator could not place its global memory: "
                               + (self.dll.evk_sim_last_error() or b"").decode(errors="replace"))


class SimSettings:
    """What the parent configures for every run (sent with the load request)."""

    def __init__(self, msg: dict[str, Any]):
        self.core_num_aiv = int(msg.get("core_num_aiv", 0))
        self.ub_size = int(msg.get("ub_size", 0))
        self.max_instructions = int(msg.get("max_instructions", 0))
        self.hw_model_json = msg.get("hw_model_json")

    def options(self) -> abi.Options:
        return abi.options({"core_num_aiv": self.core_num_aiv, "ub_size": self.ub_size,
                            "max_instructions": self.max_instructions, "hw_model_json": self.hw_model_json})


def op_function(lib: "CustomOpsLib", py_name: str) -> Callable[..., Any]:
    """custom_ops_lib.<name>: the binding function, run on the emulator. A closure, so model_src (which
    may not touch dunder attributes) cannot reach the library object and its reports through it."""
    binding = lib.project.bindings[py_name]

    def call(*args: Any) -> Any:
        return _call(lib, py_name, binding, args)

    call.__name__ = call.__qualname__ = py_name
    return call


def _call(lib: "CustomOpsLib", py_name: str, binding: Any, args: tuple[Any, ...]) -> Any:
    project = lib.project
    infos: list[Any] = []
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor):
            if a.dtype not in _TORCH_NAME:
                raise TypeError(f"custom_ops_lib.{py_name}: argument {i + 1} has unsupported dtype {a.dtype}")
            infos.append(TensorInfo(tuple(a.shape), _TORCH_NAME[a.dtype]))
        elif isinstance(a, (bool, int, float, str)):
            infos.append(a)
        elif isinstance(a, (list, tuple)) and all(isinstance(x, (int, float)) for x in a):
            infos.append(list(a))
        else:
            raise TypeError(f"custom_ops_lib.{py_name}: argument {i + 1} is a {type(a).__name__}; pass "
                            "tensors, numbers and strings")
    plan = plan_call(binding, infos)
    expect = f"aclnn{project.op_type}"
    if plan.aclnn != expect:
        raise ProjectError(f"python_bind_src: EXEC_NPU_CMD calls {plan.aclnn}, but the project's op is "
                           f"{project.op_type} (expected {expect})")
    native.note_native_call(args)
    return lib.run(plan, list(args))


class CustomOpsLib:
    """The worker's side of an Ascend C candidate: its kernel libraries, the tilings the parent served, and the
    reports of its runs. model_src never sees this object, only `facade()`: a module holding the binding's
    functions."""

    def __init__(self, project: Project, ask_build: Callable[[int], str], settings: SimSettings,
                 ask_tiling: Callable[[dict[str, Any]], dict[str, Any]]):
        self.project, self._ask_build, self.settings, self._ask_tiling = project, ask_build, settings, ask_tiling
        self._libs: dict[int, _Library] = {}
        self._tilings: dict[str, dict[str, Any]] = {}
        self.reports: list[dict[str, Any]] = []
        self._report_bytes = 0  # the JSON size of `reports`

    def facade(self) -> types.ModuleType:
        module = types.ModuleType("custom_ops_lib", "the operator project's binding, run on the ascend-sim emulator")
        for name in self.project.bindings:
            setattr(module, name, op_function(self, name))
        return module

    def library(self, combo: int) -> _Library:
        if combo not in self._libs:
            self._libs[combo] = _Library(self._ask_build(combo), self.project, combo)
        return self._libs[combo]

    def take_reports(self) -> list[dict[str, Any]]:
        out, self.reports, self._report_bytes = self.reports, [], 0
        return out

    def tiling(self, call: dict[str, Any]) -> dict[str, Any]:
        """The parent's answer for one call's shapes, dtypes and attributes (asked once per distinct call)."""
        key = json.dumps(call, sort_keys=True)
        if key not in self._tilings:
            answer = self._ask_tiling({"kind": "ascend_tiling", **call})
            self._tilings[key] = answer if isinstance(answer, dict) else {"ok": False, "error": "no answer"}
        return self._tilings[key]

    def run(self, plan: CallPlan, args: list[Any]) -> Any:
        project = self.project
        ins = [args[t.arg] for t in plan.inputs]  # type: ignore[index]
        ins = [x if x.is_contiguous() else x.contiguous() for x in ins]
        dtypes = [_TORCH_NAME[x.dtype] for x in ins]
        combo = project.combo_for(dtypes)
        if combo is None:
            declared = ", ".join("(" + ", ".join(project.combo_types(k)[p.name] for p in project.inputs) + ")"
                                 for k in range(project.combos))
            raise ProjectError(f"project_json_src declares input dtypes {declared}, but the op was called with "
                               f"({', '.join(dtypes)})")
        lib = self.library(combo)
        if len(ins) != len(project.inputs) or len(plan.outputs) != len(project.outputs):
            raise ProjectError(f"EXEC_NPU_CMD passes {len(ins)} input(s) and {len(plan.outputs)} output(s); the op "
                               f"{project.op_type} declares {len(project.inputs)} and {len(project.outputs)}")
        outs_by_alloc: dict[int, torch.Tensor] = {}
        for k, a in enumerate(plan.allocs):
            t = torch.empty(a.shape, dtype=_TORCH_DTYPE[a.dtype])
            _fill(t, a.fill)
            outs_by_alloc[k] = t
        outs = [outs_by_alloc[t.alloc] for t in plan.outputs]  # type: ignore[index]

        # the host half: the parent runs TilingFunc on what the call is, never on what the tensors hold
        call = {"combo": combo, "inputs": [_describe(x, values=True) for x in ins],
                "outputs": [_describe(x, values=False) for x in outs], "attrs": list(plan.attrs)}
        answer = self.tiling(call)
        if not answer.get("ok"):
            raise HardwareRuleError(str(answer.get("error") or "the host code produced no tiling"))

        keep = abi.Keep()
        fd, report_path = tempfile.mkstemp(prefix="evk-report-", suffix=".json")
        os.close(fd)
        cfg = abi.RunConfig(project.op_type.encode(), lib.kernel, len(ins),
                            keep.tensors([(p.name, _TORCH_NAME[x.dtype], list(x.shape), x.data_ptr(),
                                           x.numel() * x.element_size()) for x, p in zip(ins, project.inputs)]),
                            len(outs),
                            keep.tensors([(p.name, _TORCH_NAME[x.dtype], list(x.shape), x.data_ptr(),
                                           x.numel() * x.element_size()) for x, p in zip(outs, project.outputs)]),
                            0, None, report_path.encode(), self.settings.options())
        tiling = keep.tiling(answer["tiling"])
        try:
            sys.stderr.flush()
            rc = lib.dll.evk_sim_run_kernel(ctypes.byref(cfg), ctypes.byref(tiling))
            if rc == 1:
                err = (lib.dll.evk_sim_last_error() or b"").decode(errors="replace")
                raise ProjectError(f"the emulator refused the launch of {project.op_type}: {err}")
            try:
                with open(report_path) as f:
                    report = json.load(f)
            except (OSError, json.JSONDecodeError) as exc:
                raise RuntimeError(f"the emulator wrote no readable report (rc {rc}): {exc}") from None
        finally:
            try:
                os.unlink(report_path)
            except OSError:
                pass
        # the host half's warnings (InferShape, the tiling's size) belong to this call's report
        report["violations"] = list(answer.get("host_violations") or []) + list(report.get("violations") or [])
        report["call"] = {"op": project.op_type, "inputs": [list(x.shape) for x in ins],
                          "dtypes": dtypes, "attrs": plan.attrs}
        # bounded before it is kept: all reports of a reply fit the message limit (report_size.py)
        report = report_size.compact(report, report_size.budget_for(self._report_bytes, len(self.reports),
                                                                    MAX_REPORTS))
        if len(self.reports) < MAX_REPORTS:
            self.reports.append(report)
            self._report_bytes += report_size.size(report)
        feedback = judge_report(report)
        if feedback:
            raise HardwareRuleError(feedback)
        rets = [outs_by_alloc[t.alloc] if t.alloc is not None else args[t.arg] for t in plan.returns]  # type: ignore
        return rets[0] if len(rets) == 1 else tuple(rets)


def _describe(x: torch.Tensor, values: bool) -> dict[str, Any]:
    """A tensor as the host sees it: dtype and dims (and the values of a small integer input)."""
    d: dict[str, Any] = {"dtype": _TORCH_NAME[x.dtype], "dims": list(x.shape)}
    code = _VALUE_DTYPES.get(d["dtype"])
    if values and code and x.numel() <= VALUE_DEPEND_MAX:
        raw = ctypes.string_at(x.data_ptr(), x.numel() * x.element_size()) if x.numel() else b""
        d["values"] = [int(v) for v in struct.unpack("<" + code * x.numel(), raw)]
    return d


def _fill(t: torch.Tensor, value: float | None) -> None:
    """Fill without a torch operator (forward may only allocate): NaN bytes for at::empty, else value."""
    n = t.numel() * t.element_size()
    if n == 0:
        return
    if value is None:
        ctypes.memset(t.data_ptr(), 0xFF, n)
    elif value == 0:
        ctypes.memset(t.data_ptr(), 0, n)
    else:
        ctypes.memmove(t.data_ptr(), _scalar_bytes(value, t.dtype) * t.numel(), n)


def _scalar_bytes(value: float, dtype: torch.dtype) -> bytes:
    if dtype == torch.bfloat16:
        return struct.pack("<f", value)[2:]
    fmt = {torch.float32: "<f", torch.float16: "<e", torch.float64: "<d", torch.int32: "<i", torch.int64: "<q",
           torch.int16: "<h", torch.int8: "<b", torch.uint8: "<B", torch.bool: "<?"}[dtype]
    return struct.pack(fmt, value if fmt in ("<f", "<e", "<d") else int(value))


def load(source: str, ask_build: Callable[[dict[str, Any]], str], settings: SimSettings,
         ask_parent: Callable[[dict[str, Any]], dict[str, Any]]) -> tuple[types.ModuleType, CustomOpsLib]:
    """Build the candidate's kernel libraries (through the parent), forbid mapping changes in their GM windows
    and executable memory from then on, and execute its model_src; returns the module holding ModelNew and the
    worker's private library object (with the reports). Raises ProjectError for a malformed project,
    native.CompileError for a failed build."""
    project = parse_candidate(source)
    if project.combos > abi.MAX_LIBRARIES:
        raise ProjectError(f"project_json_src declares {project.combos} dtype combinations; at most "
                           f"{abi.MAX_LIBRARIES} are emulated")
    lib = CustomOpsLib(project, lambda combo: ask_build({"kind": "ascend", "source": source, "combo": combo}),
                       settings, ask_parent)
    for k in range(project.combos):  # build every declared dtype combination now (the compile gate)
        lib.library(k)
    ascend_seccomp.install(abi.SUPER_WINDOW)
    facade = lib.facade()
    sys.modules["custom_ops_lib"] = facade
    if "torch_npu" not in sys.modules:
        sys.modules["torch_npu"] = types.ModuleType("torch_npu")  # the device runtime; nothing to do on the CPU
    module = types.ModuleType("model_src")
    module.__file__ = "model_src.py"
    module.custom_ops_lib = facade  # type: ignore[attr-defined]
    code = compile(project.sources["model_src"], "model_src.py", "exec")
    exec(code, module.__dict__)
    return module, lib
