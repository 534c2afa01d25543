"""The template generator's cube family (``ascend_cube``): matmul tasks become cube-unit operators (ND2NZ
copies, LoadData, Mmad, Fixpipe) whose verdicts come from the ascend-sim emulator -- a @ b in float16,
a @ b.T and a @ b in float32, nn.Linear with bias and ReLU -- plus what it refuses and why, and its schedules."""
import shutil
from pathlib import Path

import pytest

from evokernel.generators.base import GenerationError, GenerationRequest
from evokernel.generators.template import TemplateGenerator
from evokernel.generators.template.ascend import schedules as AS
from evokernel.generators.template.ascend.cube.geometry import geometry as cube_geometry
from evokernel.generators.template.front.search import canonical
from evokernel.generators.template.generator import ascend_op_for
from evokernel.tasks.load import load_task

from template_cases import draft, transform_variants, write_tasks

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed by the ascend-sim emulator")

TASK = '''"""{doc}"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self{init_args}):
        super().__init__()
{init_body}

    def forward(self, {args}):
        return {expr}


def get_inputs():
    return [{inputs}]


def get_init_inputs():
    return [{init_inputs}]
'''

CASES = {
    # float32, B given transposed: no fractal transpose needed (tails in M, K; two N tiles)
    "mm_bt_f32": dict(doc="a @ b.T in float32", init_args="", init_body="        pass", args="a, b",
                      expr="a @ b.T", inputs="torch.randn(150, 200), torch.randn(96, 200)", init_inputs=""),
    # nn.Linear (weight N x K, bias) + ReLU in float32: bias through the bias table, ReLU in the Fixpipe
    "linear_relu_f32": dict(doc="relu(linear(x)) in float32", init_args="",
                            init_body="        self.fc = nn.Linear(136, 80)", args="x",
                            expr="torch.relu(self.fc(x))", inputs="torch.randn(70, 136)", init_inputs=""),
    # MIX: the vector cores run the epilogue (KernelBench level 2, 9 and 86 in kind): (Linear - 2) * 1.5, ReLU
    "linear_sub_mul_relu_mix": dict(doc="relu((linear(x) - 2) * 1.5)", init_args="",
                                    init_body="        self.fc = nn.Linear(72, 48)", args="x",
                                    expr="torch.relu((self.fc(x) - 2.0) * 1.5)", inputs="torch.randn(100, 72)",
                                    init_inputs=""),
    # MIX in float16 with two tiles per AI core's slot in turn: tanh-GELU of a @ b, then / 2
    "mm_gelu_f16_mix": dict(doc="gelu_tanh(a @ b) / 2 in float16", init_args="", init_body="        pass",
                            args="a, b", expr="torch.nn.functional.gelu(a @ b, approximate='tanh') / 2.0",
                            inputs="torch.randn(300, 64, dtype=torch.float16), torch.randn(64, 320, "
                                   "dtype=torch.float16)", init_inputs=""),
    # float16 a @ b + a bias parameter: B transposed fractal by fractal on its way to L0B
    "mm_bias_f16": dict(doc="a @ b + bias in float16", init_args="",
                        init_body="        self.bias = nn.Parameter(torch.randn(48, dtype=torch.float16))",
                        args="a, b", expr="a @ b + self.bias",
                        inputs="torch.randn(40, 72, dtype=torch.float16), torch.randn(72, 48, dtype=torch.float16)",
                        init_inputs=""),
    # float32 with B as K x N: 16-row bands of B, LoadDataWithTranspose of 32-bit squares into L0B (tails in M, K)
    "mm_f32": dict(doc="a @ b in float32", init_args="", init_body="        pass", args="a, b", expr="a @ b",
                   inputs="torch.randn(150, 200), torch.randn(200, 96)", init_inputs=""),
    # the same with N > 4095: a band stride of 16 N no longer fits Nd2NzParams' 16-bit srcNdMatrixStride
    "mm_f32_wide_n": dict(doc="a @ b in float32, N = 4112", init_args="", init_body="        pass", args="a, b",
                          expr="a @ b", inputs="torch.randn(24, 40), torch.randn(40, 4112)", init_inputs=""),
    # batched float32 with a K tail (K % 16 != 0): every band of B, the tail's too, from the entry's matrix
    "bmm_f32_k_tail": dict(doc="torch.bmm in float32, K = 40", init_args="", init_body="        pass",
                           args="a, b", expr="torch.bmm(a, b)",
                           inputs="torch.randn(3, 24, 40), torch.randn(3, 40, 32)", init_inputs=""),
}
REFUSED = {
    "mm_n_tail": (dict(doc="N not a multiple of 16", init_args="", init_body="        pass", args="a, b",
                       expr="a @ b", inputs="torch.randn(32, 32, dtype=torch.float16), "
                                        "torch.randn(32, 40, dtype=torch.float16)", init_inputs=""),
                  "not a multiple of 16"),
    "mm_twice": (dict(doc="the same matmul written twice: two gemms in the graph", init_args="",
                      init_body="        pass", args="a, b", expr="(a @ b.T) * torch.sigmoid(a @ b.T)",
                      inputs="torch.randn(32, 32), torch.randn(32, 32)", init_inputs=""), "2 matmuls"),
}


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    return write_tasks(tmp_path_factory.mktemp("cube-tasks"), TASK, CASES, REFUSED)


@pytest.fixture(scope="module")
def gen():
    return TemplateGenerator()


_draft = draft


@pytest.mark.parametrize("name", sorted(CASES))
def test_cube_templates_are_feasible_on_the_emulator(gen, tasks, ascend_verifier, name):
    g = _draft(gen, tasks[name])
    assert g.schedule["family"] == "ascend_cube"
    mix = name.endswith("_mix")
    assert "Mmad(" in g.source and ("KERNEL_TYPE_MIX_AIC_1_2" if mix else "KERNEL_TYPE_AIC_ONLY") in g.source
    if mix:
        assert "CrossCoreSetFlag<2, PIPE_FIX>(0)" in g.source and "CrossCoreWaitFlag(1)" in g.source
    v = ascend_verifier.verify(tasks[name], g.source)
    assert v.feasible, v.feedback
    # no warning but a half overflow the heavy-input trial causes (|x| > 65504 in a half result, as on the 910B)
    warnings = [w for w in v.details.get("emulator_warnings") or [] if "half_overflow" not in w]
    assert not warnings, warnings


def test_the_suite_matmul_drafts_and_refines_to_feasible_variants(gen, suite_task, ascend_verifier):
    from evokernel.generators.base import ContextItem

    task = suite_task("npu_l1/31_matmul_fp16.py")
    draft = _draft(gen, task)
    v = ascend_verifier.verify(task, draft.source)
    assert v.feasible, v.feedback
    start = ContextItem(id="d", kind="trace", text=draft.source, meta={"schedule": draft.schedule, "feasible": True})
    seen = {canonical(draft.schedule)}
    for seed in range(3):
        r = gen.generate(GenerationRequest(task=task, stage="refine", backend="ascend-sim", seed=seed,
                                           start_point=start, children=[]))
        assert r.schedule["family"] == "ascend_cube" and r.schedule["transform"] in AS.TRANSFORM_NAMES
        assert canonical(r.schedule) not in seen or seed
        seen.add(canonical(r.schedule))
        vr = ascend_verifier.verify(task, r.source)
        assert vr.feasible, (r.schedule, vr.feedback)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_the_cube_template_refuses_it_names(tasks, name):
    with pytest.raises(GenerationError, match=REFUSED[name][1]):
        ascend_op_for(tasks[name])


def test_schedules_that_overflow_the_cube_buffers_have_no_geometry(tasks):
    op = ascend_op_for(tasks["mm_bias_f16"])
    assert cube_geometry(op, {"base_m": 256, "base_n": 256, "base_k": 32, "buffer_num": 1}) is None  # L0C 256 KiB
    assert cube_geometry(op, {"base_m": 256, "base_n": 64, "base_k": 128, "buffer_num": 1}) is not None  # 64 KiB: fits
    assert cube_geometry(op, {"base_m": 256, "base_n": 64, "base_k": 128, "buffer_num": 2}) is None  # L0A: 2 x 64 KiB
    geo = cube_geometry(op, {"base_m": 64, "base_n": 64, "base_k": 64, "buffer_num": 2})
    assert geo == {"baseM": 64, "baseN": 64, "baseK": 64, "tilesM": 1, "tilesN": 1, "blockDim": 1, "kSteps": 2}


@pytest.mark.parametrize("name", ["mm_bias_f16", "mm_bt_f32", "mm_gelu_f16_mix", "mm_f32"])
def test_every_cube_transform_is_feasible(gen, tasks, ascend_verifier, name):
    task = tasks[name]
    variants = transform_variants(gen, task, "ascend_cube", {"buffer_num": 2, "base_m": 128, "base_n": 128,
                                                             "base_k": 128})
    for sched, source, _ in variants:
        v = ascend_verifier.verify(task, source)
        assert v.feasible, (sched, v.feedback)
    assert len(variants) >= 8


KERNELBENCH = Path(__file__).resolve().parents[2].parent / "shared" / "benchmarks" / "kernelbench" / "level2"


@pytest.mark.skipif(not KERNELBENCH.is_dir(), reason="KernelBench's files are not here (../shared/benchmarks)")
@pytest.mark.parametrize("name", ["9_Matmul_Subtract_Multiply_ReLU", "86_Matmul_Divide_GELU"])
def test_kernelbench_matmul_fusions_as_mix_kernels(gen, ascend_verifier, name):
    """KernelBench's own level-2 files (read in place, fitted to the emulator): Linear, then an elementwise chain
    on the vector cores of a MIX kernel."""
    task = load_task(KERNELBENCH / f"{name}.py", fit="auto", backend="ascend-sim")
    g = _draft(gen, task)
    assert "KERNEL_TYPE_MIX_AIC_1_2" in g.source
    v = ascend_verifier.verify(task, g.source)
    assert v.feasible, v.feedback
    # no warning but a half overflow the heavy-input trial causes (|x| > 65504 in a half result, as on the 910B)
    warnings = [w for w in v.details.get("emulator_warnings") or [] if "half_overflow" not in w]
    assert not warnings, warnings
