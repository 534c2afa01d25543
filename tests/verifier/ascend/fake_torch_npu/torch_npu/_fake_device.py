"""The fake device of the fake torch_npu (tests only): runs INSTALLED operators for custom_ops_lib modules
built by the fake NpuExtension.

`bind(module, op_cpp)` reads the binding the candidate wrote (csrc/op.cpp): the functions PYBIND11_MODULE
exports (`m.def("name", &impl, ...)`) and, in each impl, its parameters, the tensors it allocates
(`at::empty_like(p)` etc.) and its `EXEC_NPU_CMD(aclnn<Op>, args...)`. Each exported function then does
what EXEC_NPU_CMD does on a device, as recorded in ascend-toolchain.md §1.1/§4:
- the op must be installed where ASCEND_CUSTOM_OPP_PATH points (<entry>/op_api/lib/libcust_opapi.so written
  for that op by the fake installer), else the EZ3003 "No supported Ops kernel" text and a RuntimeError;
- the operator "runs": a few op types have semantics here (SEMANTICS, computed with numpy into the
  allocated output, so no ATen compute operator is dispatched, as with a real custom op);
- FAKE_NPU_SCENARIO injects device behaviour: success | wrong_result (output + 0.5) | aivec_fault (the
  EZ9999 / retCode=0x31 / 507035 texts on fd 2 and a RuntimeError) | hang (sleeps, like a kernel that never
  finishes) | crash (abort()) | slow (sleeps FAKE_NPU_SLOW_MS per call: a slower kernel) | aten (computes
  with torch operators, as a binding calling at::add in C++ would: the dispatcher sees them) | replay (computes
  the first FAKE_NPU_REPLAY_AFTER calls, then answers every later call with the first call's result without
  computing: a result cache that is right whenever the timed calls repeat the first checked inputs).
Nothing of the real device is modelled beyond that: no streams, no asynchrony, no memory.
"""
import os
import re
import sys
import time

import numpy as np

from .npu import _log

FAULT = ("[ERROR] RUNTIME: EZ9999: Inner Error!\n"
         "EZ9999: there is an exception of aivec error, core id is 3, The MPU address access is invalid, "
         "retCode=0x31 [vector core exception]\n")
_REPLAY = {"calls": 0, "first": None}
NOT_FOUND = "EZ3003: No supported Ops kernel and engine are found for [aclnn{op}], optype [{op}].\n"

SEMANTICS = {
    "AddCustom": lambda a, b: a + b,
    "ElementwiseAddCustom": lambda a, b: a + b,  # the name the template generator gives the npu-l1 add task
    "SubCustom": lambda a, b: a - b,
    "MulCustom": lambda a, b: a * b,
    "ReluCustom": lambda a: np.maximum(a, 0),
}


def _installed(op):
    for entry in filter(None, os.environ.get("ASCEND_CUSTOM_OPP_PATH", "").split(":")):
        lib = os.path.join(entry, "op_api", "lib", "libcust_opapi.so")
        if os.path.isfile(lib) and op in open(lib).read():
            return True
    return False


def _functions(text):
    """{impl name: (params, body)} of the top-level functions in op.cpp."""
    out = {}
    for m in re.finditer(r"[\w:<>]+\s+(\w+)\s*\(([^)]*)\)\s*\{", text):
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        params = [p.strip().split()[-1].lstrip("&*") for p in m.group(2).split(",") if p.strip()]
        out[m.group(1)] = (params, text[m.end():i - 1])
    return out


def _make(py_name, params, body):
    cmd = re.search(r"EXEC_NPU_CMD\s*\(\s*aclnn(\w+)\s*,([^;]*)\)\s*;", body)
    if not cmd:
        raise ImportError(f"fake device: {py_name} calls no EXEC_NPU_CMD")
    op = cmd.group(1)
    args = [a.strip() for a in cmd.group(2).split(",")]
    allocs = dict(re.findall(r"at::Tensor\s+(\w+)\s*=\s*at::empty_like\(\s*(\w+)\s*\)", body))
    outputs = [a for a in args if a in allocs]
    inputs = [a for a in args if a in params]
    ret = re.search(r"return\s+(\w+)\s*;", body)

    def call(*values):
        import torch

        if len(values) != len(params):
            raise TypeError(f"{py_name}(): expected {len(params)} arguments, got {len(values)}")
        env = dict(zip(params, values))
        for name in outputs:
            env[name] = torch.empty_like(env[allocs[name]])
        _log("exec", f"aclnn{op}")
        if not _installed(op):
            sys.stderr.write(NOT_FOUND.format(op=op))
            sys.stderr.flush()
            raise RuntimeError(f"call aclnn{op} failed, detail:EZ3003: No supported Ops kernel and engine are "
                               f"found for [aclnn{op}]")
        scenario = os.environ.get("FAKE_NPU_SCENARIO", "success")
        if scenario == "aivec_fault":
            os.write(2, FAULT.encode())
            raise RuntimeError("ACL stream synchronize failed, error code:507035")
        if scenario == "hang":
            time.sleep(3600)
        if scenario == "crash":
            os.abort()
        if scenario == "slow":
            time.sleep(float(os.environ.get("FAKE_NPU_SLOW_MS", "5")) / 1e3)
        if scenario == "aten":
            res = torch.add(env[inputs[0]], env[inputs[1]])
            env[outputs[0]].copy_(res)
            return env[ret.group(1)] if ret else env[outputs[0]]
        if scenario == "replay":
            _REPLAY["calls"] += 1
            if _REPLAY["calls"] > int(os.environ.get("FAKE_NPU_REPLAY_AFTER", "1")):
                out = env[outputs[0]]
                out.numpy()[...] = _REPLAY["first"]
                return env[ret.group(1)] if ret else out
        fn = SEMANTICS.get(op)
        if fn is None:
            raise RuntimeError(f"fake device: no semantics for operator {op}")
        res = fn(*[env[a].numpy() for a in inputs])
        if scenario == "wrong_result":
            res = res + 0.5
        if scenario == "replay" and _REPLAY["first"] is None:
            _REPLAY["first"] = res.copy()
        out = env[outputs[0]]
        out.numpy()[...] = res
        return env[ret.group(1)] if ret else out

    call.__name__ = py_name
    return call


def bind(module, op_cpp):
    text = open(op_cpp).read()
    funcs = _functions(text)
    for py_name, impl in re.findall(r'm\.def\(\s*"(\w+)"\s*,\s*&?(\w+)', text):
        if impl not in funcs:
            raise ImportError(f"fake device: {impl} is not defined in {op_cpp}")
        setattr(module, py_name, _make(py_name, *funcs[impl]))
    return module
