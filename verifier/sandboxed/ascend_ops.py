"""Runs INSIDE the sandbox: an Ascend C candidate's `custom_ops_lib`, backed by the ascend-sim emulator.

The worker reads the candidate's six strings (never running the outer file), asks the trusted parent
to build the project (one shared library per dtype combination: emulator runtime + kernel + host),
loads the libraries with ctypes, and executes ``model_src`` with a `custom_ops_lib` module whose
functions do what the binding (python_bind_src) does: allocate the outputs it allocates, then run the
registered operator through `evk_sim_run` (TilingFunc on the real shapes and attributes, then the
kernel once per block) in EXEC_NPU_CMD's argument order. Each call's JSON report (rule violations,
per-block counters) is kept for the parent, which judges it and derives the latency estimate.
A call whose report has an error or fatal violation raises `HardwareRuleError`: on an NPU that kernel
would fault, hang or return garbage.
"""
from __future__ import annotations

import ctypes
import json
import os
import sys
import tempfile
import types
from typing import Any, Callable

import torch

import evokernel.cpu as native
from evokernel.verifier.backends.ascend_sim.binding import CallPlan, TensorInfo, plan_call
from evokernel.verifier.backends.ascend_sim.project import Project, ProjectError, parse_candidate
from evokernel.verifier.backends.ascend_sim.report import judge_report

_TORCH_NAME = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16", torch.int8: "int8",
               torch.int32: "int32", torch.uint8: "uint8", torch.int16: "int16", torch.int64: "int64",
               torch.bool: "bool", torch.float64: "float64"}
_TORCH_DTYPE = {v: k for k, v in _TORCH_NAME.items()}
_GE_CODE = {"float32": 0, "float16": 1, "int8": 2, "int32": 3, "uint8": 4, "int16": 6, "int64": 9,
            "float64": 11, "bool": 12, "bfloat16": 27}
MAX_REPORTS = 64  # per forward; a model calling the op more often keeps the first ones


class HardwareRuleError(RuntimeError):
    """The emulator found violations of the NPU's rules (the message is the LLM-facing feedback)."""


# --- the C ABI (include/evk_sim/runtime.h) ---------------------------------------------------------

class _Tensor(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("dims", ctypes.POINTER(ctypes.c_int64)), ("data", ctypes.c_void_p), ("nbytes", ctypes.c_uint64)]


class _Attr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("kind", ctypes.c_int32), ("i", ctypes.c_int64), ("f", ctypes.c_double),
                ("s", ctypes.c_char_p), ("n", ctypes.c_int32), ("ints", ctypes.POINTER(ctypes.c_int64)),
                ("floats", ctypes.POINTER(ctypes.c_double))]


class _Options(ctypes.Structure):
    _fields_ = [("core_num_aiv", ctypes.c_uint32), ("ub_size", ctypes.c_uint64),
                ("half_overflow_saturate", ctypes.c_int32), ("keep_outputs", ctypes.c_int32),
                ("max_instructions", ctypes.c_uint64), ("max_violations", ctypes.c_int32),
                ("hw_model_json", ctypes.c_char_p)]


class _RunConfig(ctypes.Structure):
    _fields_ = [("op_type", ctypes.c_char_p), ("kernel", ctypes.c_void_p), ("n_inputs", ctypes.c_int32),
                ("inputs", ctypes.POINTER(_Tensor)), ("n_outputs", ctypes.c_int32),
                ("outputs", ctypes.POINTER(_Tensor)), ("n_attrs", ctypes.c_int32), ("attrs", ctypes.POINTER(_Attr)),
                ("report_path", ctypes.c_char_p), ("options", _Options)]


_ATTR_KIND = {"int": 1, "float": 2, "bool": 3, "str": 4, "list_int": 5, "list_float": 6}


class _Library:
    def __init__(self, path: str, project: Project):
        self.dll = ctypes.CDLL(path)
        self.dll.evk_sim_run.argtypes = [ctypes.POINTER(_RunConfig)]
        self.dll.evk_sim_run.restype = ctypes.c_int
        self.dll.evk_sim_last_error.restype = ctypes.c_char_p
        self.dll.evk_sim_describe_op.argtypes = [ctypes.c_char_p]
        self.dll.evk_sim_describe_op.restype = ctypes.c_char_p
        try:
            self.kernel = ctypes.cast(getattr(self.dll, project.kernel_symbol), ctypes.c_void_p).value
        except AttributeError:
            raise ProjectError(f"the built library has no kernel symbol {project.kernel_symbol}") from None
        raw = self.dll.evk_sim_describe_op(project.op_type.encode())
        if raw is None:
            raise ProjectError(f"host_operator_src registers no OpDef named {project.op_type} (the op in "
                               f"project_json_src); add `OP_ADD({project.op_type});` in namespace ops")
        self.opdef = json.loads(raw.decode())


class SimSettings:
    """What the parent configures for every run (sent with the load request)."""

    def __init__(self, msg: dict[str, Any]):
        self.core_num_aiv = int(msg.get("core_num_aiv", 0))
        self.ub_size = int(msg.get("ub_size", 0))
        self.max_instructions = int(msg.get("max_instructions", 0))
        self.hw_model_json = msg.get("hw_model_json")


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
    native._native_calls += 1
    return lib.run(plan, list(args))


class CustomOpsLib:
    """The worker's side of an Ascend C candidate: its libraries and the reports of its runs.
    model_src never sees this object, only `facade()`: a module holding the binding's functions."""

    def __init__(self, project: Project, ask_build: Callable[[int], str], settings: SimSettings):
        self.project, self._ask_build, self.settings = project, ask_build, settings
        self._libs: dict[int, _Library] = {}
        self.reports: list[dict[str, Any]] = []

    def facade(self) -> types.ModuleType:
        module = types.ModuleType("custom_ops_lib", "the operator project's binding, run on the ascend-sim emulator")
        for name in self.project.bindings:
            setattr(module, name, op_function(self, name))
        return module

    def library(self, combo: int) -> _Library:
        if combo not in self._libs:
            self._libs[combo] = _Library(self._ask_build(combo), self.project)
        return self._libs[combo]

    def take_reports(self) -> list[dict[str, Any]]:
        out, self.reports = self.reports, []
        return out

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
        keep: list[Any] = []  # ctypes buffers alive until the call returns

        def tensors(ts: list[torch.Tensor], params: list[Any]) -> Any:
            arr = (_Tensor * len(ts))()
            for k, (t, p) in enumerate(zip(ts, params)):
                dims = (ctypes.c_int64 * max(1, t.dim()))(*t.shape)
                keep.append(dims)
                name = p.name.encode()
                keep.append(name)
                arr[k] = _Tensor(name, _GE_CODE[_TORCH_NAME[t.dtype]], t.dim(), dims, t.data_ptr(),
                                 t.numel() * t.element_size())
            return arr

        attrs_decl = lib.opdef.get("attrs") or []
        if len(plan.attrs) > len(attrs_decl):
            raise ProjectError(f"EXEC_NPU_CMD passes {len(plan.attrs)} attribute value(s); the OpDef of "
                               f"{project.op_type} declares {len(attrs_decl)} attribute(s)")
        attrs = (_Attr * max(1, len(plan.attrs)))()
        for k, (value, decl) in enumerate(zip(plan.attrs, attrs_decl)):
            name = str(decl["name"]).encode()
            keep.append(name)
            kind = _ATTR_KIND.get(decl.get("type"), 0)
            if kind == 0 or (kind in (5, 6)) != isinstance(value, list) or (kind == 4) != isinstance(value, str):
                raise ProjectError(f"EXEC_NPU_CMD passes {value!r} for attribute '{decl['name']}' of type "
                                   f"{decl.get('type')}; the binding can pass numbers (int, float, bool attributes), "
                                   "strings (str attributes) and lists of numbers (list_int, list_float attributes)")
            a = _Attr(name, kind, 0, 0.0, None, 0, None, None)
            if kind == 4:
                sval = value.encode()
                keep.append(sval)
                a.s = sval
            elif kind in (1, 3):
                a.i = int(value)
            elif kind == 2:
                a.f = float(value)
            elif kind in (5, 6):
                vals = list(value) if isinstance(value, list) else [value]
                a.n = len(vals)
                if kind == 5:
                    buf = (ctypes.c_int64 * max(1, len(vals)))(*[int(v) for v in vals])
                    a.ints = buf
                else:
                    buf = (ctypes.c_double * max(1, len(vals)))(*[float(v) for v in vals])
                    a.floats = buf
                keep.append(buf)
            attrs[k] = a
        fd, report_path = tempfile.mkstemp(prefix="evk-report-", suffix=".json")
        os.close(fd)
        s = self.settings
        hw = s.hw_model_json.encode() if s.hw_model_json else None
        cfg = _RunConfig(project.op_type.encode(), lib.kernel, len(ins), tensors(ins, project.inputs),
                         len(outs), tensors(outs, project.outputs), len(plan.attrs), attrs, report_path.encode(),
                         _Options(s.core_num_aiv, s.ub_size, 0, 1, s.max_instructions, 0, hw))
        try:
            sys.stderr.flush()
            rc = lib.dll.evk_sim_run(ctypes.byref(cfg))
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
        report["call"] = {"op": project.op_type, "inputs": [list(x.shape) for x in ins],
                          "dtypes": dtypes, "attrs": plan.attrs}
        if len(self.reports) < MAX_REPORTS:
            self.reports.append(report)
        feedback = judge_report(report)
        if feedback:
            raise HardwareRuleError(feedback)
        rets = [outs_by_alloc[t.alloc] if t.alloc is not None else args[t.arg] for t in plan.returns]  # type: ignore
        return rets[0] if len(rets) == 1 else tuple(rets)


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
    import struct

    if dtype == torch.bfloat16:
        return struct.pack("<f", value)[2:]
    fmt = {torch.float32: "<f", torch.float16: "<e", torch.float64: "<d", torch.int32: "<i", torch.int64: "<q",
           torch.int16: "<h", torch.int8: "<b", torch.uint8: "<B", torch.bool: "<?"}[dtype]
    return struct.pack(fmt, value if fmt in ("<f", "<e", "<d") else int(value))


def load(source: str, ask_build: Callable[[dict[str, Any]], str],
         settings: SimSettings) -> tuple[types.ModuleType, CustomOpsLib]:
    """Build the candidate's project (through the parent) and execute its model_src; returns the module
    holding ModelNew and the worker's private library object (with the reports). Raises ProjectError for a malformed project, native.CompileError for a failed build."""
    project = parse_candidate(source)
    lib = CustomOpsLib(project, lambda combo: ask_build({"kind": "ascend", "source": source, "combo": combo}),
                       settings)
    for k in range(project.combos):  # build every declared dtype combination now (the compile gate)
        lib.library(k)
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
