"""The emulator's C ABI (include/evk_sim/runtime.h) as ctypes structures, and the conversions both of its
callers need: the candidate worker (sandboxed/ascend_ops.py: kernels) and the host process (sandboxed/ascend_host.py:
TilingFunc and InferShape). Pure ctypes, no torch: the host process starts without it."""
from __future__ import annotations

import ctypes
from typing import Any

# ge::DataType codes of the dtype names the protocol uses (torch's names)
GE_CODE = {"float32": 0, "float16": 1, "int8": 2, "int32": 3, "uint8": 4, "int16": 6, "int64": 9, "float64": 11,
           "bool": 12, "bfloat16": 27}
ELEMENT_BYTES = {"float32": 4, "float16": 2, "int8": 1, "int32": 4, "uint8": 1, "int16": 2, "int64": 8,
                 "float64": 8, "bool": 1, "bfloat16": 2}
ATTR_KIND = {"int": 1, "float": 2, "bool": 3, "str": 4, "list_int": 5, "list_float": 6}
# where each library's GM window goes in a process (evk_sim_set_window): library k at 2^45 + (2k+1) * 512 GiB (a
# window is 512 GiB: runtime.cpp kWindowBytes), so the windows and the guards between them lie in
# [2^45, 2^45 + 2^44) (sandboxed/ascend_seccomp.py forbids mapping changes there). 16 libraries: one per dtype
# combination, all loaded before the seccomp layer (community projects declare up to 9: JasperXzy's Fmax)
SUPER_WINDOW = (1 << 45, 1 << 44)
WINDOW_BYTES = 1 << 39
MAX_LIBRARIES = 16


def window_base(k: int) -> int:
    if not 0 <= k < MAX_LIBRARIES:
        raise ValueError(f"at most {MAX_LIBRARIES} emulator libraries per process")
    return SUPER_WINDOW[0] + (2 * k + 1) * WINDOW_BYTES


class Tensor(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("dims", ctypes.POINTER(ctypes.c_int64)), ("data", ctypes.c_void_p), ("nbytes", ctypes.c_uint64)]


class Attr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("kind", ctypes.c_int32), ("i", ctypes.c_int64), ("f", ctypes.c_double),
                ("s", ctypes.c_char_p), ("n", ctypes.c_int32), ("ints", ctypes.POINTER(ctypes.c_int64)),
                ("floats", ctypes.POINTER(ctypes.c_double))]


class Options(ctypes.Structure):
    _fields_ = [("core_num_aiv", ctypes.c_uint32), ("ub_size", ctypes.c_uint64),
                ("half_overflow_saturate", ctypes.c_int32), ("keep_outputs", ctypes.c_int32),
                ("max_instructions", ctypes.c_uint64), ("max_violations", ctypes.c_int32),
                ("hw_model_json", ctypes.c_char_p)]


class RunConfig(ctypes.Structure):
    _fields_ = [("op_type", ctypes.c_char_p), ("kernel", ctypes.c_void_p), ("n_inputs", ctypes.c_int32),
                ("inputs", ctypes.POINTER(Tensor)), ("n_outputs", ctypes.c_int32),
                ("outputs", ctypes.POINTER(Tensor)), ("n_attrs", ctypes.c_int32), ("attrs", ctypes.POINTER(Attr)),
                ("report_path", ctypes.c_char_p), ("options", Options)]


class Tiling(ctypes.Structure):
    _fields_ = [("block_dim", ctypes.c_uint32), ("tiling_key", ctypes.c_uint64), ("schedule_mode", ctypes.c_uint32),
                ("data", ctypes.POINTER(ctypes.c_uint8)), ("size", ctypes.c_uint64), ("n_workspace", ctypes.c_int32),
                ("workspace_sizes", ctypes.POINTER(ctypes.c_uint64))]


def declare(dll: ctypes.CDLL) -> ctypes.CDLL:
    """Argument and result types of the entry points a library may be called through."""
    dll.evk_sim_last_error.restype = ctypes.c_char_p
    dll.evk_sim_set_window.argtypes = [ctypes.c_uint64]
    dll.evk_sim_set_window.restype = ctypes.c_int
    for name in ("evk_sim_run", "evk_sim_tiling"):
        getattr(dll, name).argtypes = [ctypes.POINTER(RunConfig)]
        getattr(dll, name).restype = ctypes.c_int
    dll.evk_sim_run_kernel.argtypes = [ctypes.POINTER(RunConfig), ctypes.POINTER(Tiling)]
    dll.evk_sim_run_kernel.restype = ctypes.c_int
    dll.evk_sim_describe_op.argtypes = [ctypes.c_char_p]
    dll.evk_sim_describe_op.restype = ctypes.c_char_p
    return dll


class Keep:
    """Builds ctypes arguments and keeps every buffer they point to alive until the call returns."""

    def __init__(self) -> None:
        self.alive: list[Any] = []

    def tensors(self, items: list[tuple[str, str, list[int], int | None, int]]) -> Any:
        """(name, dtype, dims, data address or None, nbytes) -> an array of Tensor."""
        arr = (Tensor * max(1, len(items)))()
        for k, (name, dtype, dims, data, nbytes) in enumerate(items):
            cdims = (ctypes.c_int64 * max(1, len(dims)))(*dims)
            cname = name.encode()
            self.alive += [cdims, cname]
            arr[k] = Tensor(cname, GE_CODE[dtype], len(dims), cdims, data, nbytes)
        return arr

    def attrs(self, values: list[Any], declared: list[dict[str, Any]], op: str) -> Any:
        """The binding's attribute values, matched to the OpDef's Attr list in order (ValueError says what is wrong)."""
        if len(values) > len(declared):
            raise ValueError(f"EXEC_NPU_CMD passes {len(values)} attribute value(s); the OpDef of {op} declares "
                             f"{len(declared)} attribute(s)")
        arr = (Attr * max(1, len(values)))()
        for k, (value, decl) in enumerate(zip(values, declared)):
            name = str(decl["name"]).encode()
            self.alive.append(name)
            kind = ATTR_KIND.get(decl.get("type"), 0)
            if kind == 0 or (kind in (5, 6)) != isinstance(value, list) or (kind == 4) != isinstance(value, str):
                raise ValueError(f"EXEC_NPU_CMD passes {value!r} for attribute '{decl['name']}' of type "
                                 f"{decl.get('type')}; the binding can pass numbers (int, float, bool attributes), "
                                 "strings (str attributes) and lists of numbers (list_int, list_float attributes)")
            a = Attr(name, kind, 0, 0.0, None, 0, None, None)
            if kind == 4:  # a string attribute (CANN's Attr(...).String): the bytes stay alive with the call
                sval = value.encode()
                self.alive.append(sval)
                a.s = sval
            elif kind in (1, 3):
                a.i = int(value)
            elif kind == 2:
                a.f = float(value)
            else:
                a.n = len(value)
                if kind == 5:
                    buf = (ctypes.c_int64 * max(1, len(value)))(*[int(v) for v in value])
                    a.ints = buf
                else:
                    buf = (ctypes.c_double * max(1, len(value)))(*[float(v) for v in value])
                    a.floats = buf
                self.alive.append(buf)
            arr[k] = a
        return arr

    def tiling(self, t: dict[str, Any]) -> Tiling:
        data = bytes.fromhex(t["data_hex"])
        buf = (ctypes.c_uint8 * max(1, len(data))).from_buffer_copy(data.ljust(1, b"\0"))
        ws = (ctypes.c_uint64 * max(1, len(t["workspace_sizes"])))(*t["workspace_sizes"])
        self.alive += [buf, ws]
        return Tiling(int(t["block_dim"]), int(t["tiling_key"]), int(t["schedule_mode"]), buf, len(data),
                      len(t["workspace_sizes"]), ws)


def options(settings: dict[str, Any]) -> Options:
    hw = settings.get("hw_model_json")
    return Options(int(settings.get("core_num_aiv", 0)), int(settings.get("ub_size", 0)), 0, 1,
                   int(settings.get("max_instructions", 0)), 0, hw.encode() if hw else None)
