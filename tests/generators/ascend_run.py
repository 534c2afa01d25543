"""Test helper: build an Ascend C candidate (six strings) with the emulator's test harness and run its
ModelNew against the task's reference Model, with ``custom_ops_lib.<op>`` backed by the emulator.

Independent of the ascend-sim backend (which may not exist yet on this branch): the kernel, host and
tiling sources are compiled by ``tests/verifier/ascend_sim/ascend_sim_harness.py``; ModelNew is executed
with stand-in ``torch_npu`` and ``custom_ops_lib`` modules, so the parameter order and the RNG order of
the generated ``__init__`` are checked as well.
"""
from __future__ import annotations

import json
import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

HARNESS_DIR = Path(__file__).resolve().parents[1] / "verifier" / "ascend_sim"
if str(HARNESS_DIR) not in sys.path:
    sys.path.insert(0, str(HARNESS_DIR))

from ascend_sim_harness import Result, Sim  # noqa: E402

PARTS = ("project_json_src", "host_tiling_src", "host_operator_src", "kernel_src", "python_bind_src", "model_src")


def parse(source: str) -> dict[str, str]:
    ns: dict = {}
    exec(compile(source, "<candidate>", "exec"), ns)
    return {k: ns[k] for k in PARTS}


def _snake(pascal: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", pascal).lower()


@dataclass
class Run:
    out: torch.Tensor
    ref: torch.Tensor
    result: Result  # the emulator's last run (report, violations)

    def max_err(self) -> float:
        return float((self.out.double() - self.ref.double()).abs().max())


def build(sim: Sim, d: Path, parts: dict[str, str]):
    desc = json.loads(parts["project_json_src"])[0]
    op = desc["op"]
    kernel = _snake(op)
    ctype = {"float": "float", "float16": "half"}
    dtypes = {x["name"]: ctype[x["type"][0]] for x in desc["input_desc"] + desc["output_desc"]}
    exe = sim.op_project(d, op=op, kernel_name=kernel, kernel_src=parts["kernel_src"],
                         host_src=parts["host_operator_src"], tiling_src=parts["host_tiling_src"],
                         tiling_header=f"{kernel}_tiling.h", dtypes=dtypes,
                         label=f"template {op}")
    return exe, desc, kernel


def run(sim: Sim, d: Path, task, source: str, seed: int = 0, options: dict | None = None) -> Run:
    """Build ``source`` in ``d``, run ModelNew and the reference on the task's inputs."""
    parts = parse(source)
    exe, desc, kernel = build(sim, d, parts)
    module = types.ModuleType("evk_task")
    exec(compile(task.source, str(task.path), "exec"), module.__dict__)
    init = module.get_init_inputs()
    torch.manual_seed(seed)
    ref_model = module.Model(*init)
    torch.manual_seed(seed)
    inputs = module.get_inputs()
    with torch.no_grad():
        ref = ref_model(*inputs)

    last: dict = {}

    def custom_op(*tensors):
        ins = [(x["name"], t.detach().contiguous().numpy()) for x, t in zip(desc["input_desc"], tensors)]
        assert len(ins) == len(desc["input_desc"]), "argument count differs from the OpDef"
        out_dt = np.float16 if ref.dtype == torch.float16 else np.float32
        opts = dict(options or {})
        if "at::zeros" in parts["python_bind_src"]:
            opts.setdefault("keep_outputs", 1)  # the binding zero-fills the output (the emulator would poison it)
        res = sim.run_op(exe, d, desc["op"], ins, [("out", tuple(ref.shape), out_dt)], options=opts)
        last["result"] = res
        return torch.from_numpy(res.outputs["out"].copy()) if "out" in res.outputs else torch.full(ref.shape, float("nan"))

    fake_lib = types.ModuleType("custom_ops_lib")
    setattr(fake_lib, kernel, custom_op)
    saved = {k: sys.modules.get(k) for k in ("custom_ops_lib", "torch_npu")}
    sys.modules["custom_ops_lib"] = fake_lib
    sys.modules["torch_npu"] = types.ModuleType("torch_npu")
    try:
        ns: dict = {}
        exec(compile(parts["model_src"], "<model_src>", "exec"), ns)
        torch.manual_seed(seed)
        new_model = ns["ModelNew"](*init)
        with torch.no_grad():
            out = new_model(*inputs)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return Run(out, ref, last["result"])
