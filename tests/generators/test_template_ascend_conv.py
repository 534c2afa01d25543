"""The template generator's conv family (``ascend_conv``), its vector lowering: direct convolutions on the vector
cores (DataCopyPad with left padding per kernel tap, Axpy per output channel) whose verdicts come from the
ascend-sim emulator -- the npu_l1 conv tasks (36-39) written with ``lowering = vector`` and refined, drafts of the
grouped / strided cases the cube lowering does not take, what is refused by name, and broken variants of the
vector kernel that the verifier must reject. The cube lowering (the draft's for dense convolutions):
test_template_ascend_conv_cube.py."""
import shutil

import pytest

from evokernel.generators.base import ContextItem, GenerationError, GenerationRequest
from evokernel.generators.template import TemplateGenerator
from evokernel.generators.template.ascend import schedules as AS
from evokernel.generators.template.ascend.conv import direct as CONV
from evokernel.generators.template.front.search import canonical, knobs_of
from evokernel.generators.template.generator import ascend_op_for
from evokernel.tasks.load import load_task

from template_cases import draft, write_tasks

from kernelbench_files import KB, needs_kernelbench
from verdicts import unexplained_warnings

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed by the ascend-sim emulator")

SUITE = ["npu_l1/36_conv2d_3x3.py", "npu_l1/37_conv2d_pointwise.py", "npu_l1/38_conv2d_depthwise.py",
         "npu_l1/39_conv1d.py"]

TASK = '''"""{doc}"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = {module}

    def forward(self, x):
        return {expr}


def get_inputs():
    return [{inputs}]


def get_init_inputs():
    return []
'''

CASES = {  # beyond the suite: grouped (2 groups, 2 passes of 8 channels), stride 2 along H, asymmetric kernel
    "grouped_strided_h": dict(doc="grouped conv2d, stride (2, 1), kernel (3, 5), padding (1, 2)",
                              module="nn.Conv2d(8, 16, (3, 5), stride=(2, 1), padding=(1, 2), groups=2)",
                              expr="self.conv(x)", inputs="torch.randn(2, 8, 21, 37)"),
    # rows longer than the UB holds for 16 channels: the host cuts them into chunks of woTile columns
    "conv1d_long_rows": dict(doc="conv1d over rows of 9000", module="nn.Conv1d(8, 40, 3, padding=1)",
                             expr="self.conv(x)", inputs="torch.randn(2, 8, 9000)"),
    # strides along W: each tap's input span loaded once, every STRIDE_W-th value gathered (Gather)
    "stride_w2": dict(doc="conv2d, stride 2, padding 1", module="nn.Conv2d(4, 8, 3, stride=2, padding=1)",
                      expr="self.conv(x)", inputs="torch.randn(2, 4, 32, 33)"),
    "conv1d_stride3_dilated": dict(doc="conv1d, stride 3, dilation 2, padding 3",
                                   module="nn.Conv1d(6, 12, 4, stride=3, padding=3, dilation=2)", expr="self.conv(x)",
                                   inputs="torch.randn(3, 6, 500)"),
    # no padding, bias off, a tap range that needs a shorter count on the right only
    "conv1d_valid": dict(doc="conv1d, kernel 7, no padding, no bias", module="nn.Conv1d(6, 10, 7, bias=False)",
                         expr="self.conv(x)", inputs="torch.randn(3, 6, 301)"),
}
REFUSED = {
    "transposed": (dict(doc="transposed conv2d", module="nn.ConvTranspose2d(4, 8, 3)", expr="self.conv(x)",
                        inputs="torch.randn(2, 4, 16, 16)"), "transposed convolution"),
    "conv3d": (dict(doc="conv3d", module="nn.Conv3d(4, 8, 3)", expr="self.conv(x)",
                    inputs="torch.randn(2, 4, 8, 8, 8)"), "3-D convolution"),
    "fp16": (dict(doc="conv2d in float16", module="nn.Conv2d(4, 8, 3, dtype=torch.float16)", expr="self.conv(x)",
                  inputs="torch.randn(2, 4, 16, 16, dtype=torch.float16)"), "float16 convolution"),
    "fused_relu": (dict(doc="relu(conv2d)", module="nn.Conv2d(4, 8, 3)", expr="torch.relu(self.conv(x))",
                        inputs="torch.randn(2, 4, 16, 16)"), "fused epilogue"),
    "wide_padding": (dict(doc="padding 9 along W", module="nn.Conv2d(4, 8, (1, 19), padding=(0, 9))",
                          expr="self.conv(x)", inputs="torch.randn(2, 4, 8, 40)"), "32-byte left padding"),
}


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    return write_tasks(tmp_path_factory.mktemp("conv-tasks"), TASK, CASES, REFUSED)


@pytest.fixture(scope="module")
def gen():
    return TemplateGenerator()


_draft = draft


def _feasible(ascend_verifier, task, source):
    v = ascend_verifier.verify(task, source)
    assert v.feasible, v.feedback
    assert not unexplained_warnings(v), unexplained_warnings(v)
    return v


VECTOR = {**AS.CONSERVATIVE, "lowering": "vector"}


def _vector(gen, task, **knobs):
    """The vector lowering's kernel (the draft's schedule with lowering = vector)."""
    sched = AS.make_schedule("ascend_conv", {**VECTOR, **knobs}, "draft")
    source, _, geo = gen.render_ascend(task, ascend_op_for(task), sched)
    return sched, source, geo


@pytest.mark.parametrize("path", SUITE)
def test_every_suite_conv_vector_lowering_feasible_and_refines_feasible(gen, suite_task, ascend_verifier, path):
    task = suite_task(path)
    sched, source, geo = _vector(gen, task)
    assert sched["family"] == "ascend_conv" and geo["lowering"] == "vector"
    assert "Axpy(" in source and "DataCopyPad(xr, xGm[src], copy, pad)" in source and "Mmad(" not in source
    _feasible(ascend_verifier, task, source)
    start = ContextItem(id="d", kind="trace", text=source, meta={"schedule": sched, "feasible": True})
    # the refinement may switch to the cube lowering (lowering_cube) or tune the vector knobs: either stays feasible
    r = gen.generate(GenerationRequest(task=task, stage="refine", backend="ascend-sim", seed=0, start_point=start,
                                       children=[]))
    assert r.schedule["family"] == "ascend_conv" and r.schedule["transform"] in AS.TRANSFORM_NAMES
    assert canonical(r.schedule) != canonical(sched)
    _feasible(ascend_verifier, task, r.source)


@pytest.mark.parametrize("knobs", [{"co_tile": 64, "buffer_num": 2, "w_mode": "ub", "blocks": "all"},
                                   {"co_tile": 8, "buffer_num": 1, "w_mode": "gm", "blocks": "half"}])
def test_other_knobs_stay_feasible_and_weights_in_ub_pay_off(gen, suite_task, ascend_verifier, knobs):
    task = suite_task("npu_l1/36_conv2d_3x3.py")
    op = ascend_op_for(task)
    sched = AS.make_schedule("ascend_conv", {**VECTOR, **knobs}, "x")
    assert knobs_of(sched) == {**knobs_of(sched), **knobs}
    source, _, geo = gen.render_ascend(task, op, sched)
    assert geo is not None and geo["coTile"] == min(knobs["co_tile"], 32)
    v = _feasible(ascend_verifier, task, source)
    base = _feasible(ascend_verifier, task, _vector(gen, task)[1])
    if knobs["w_mode"] == "ub":  # the scalar unit reads weights from UB: several times faster than from GM
        assert v.latency_ms * 3 < base.latency_ms, (v.latency_ms, base.latency_ms)


@pytest.mark.parametrize("name", sorted(CASES))
def test_grouped_strided_and_unpadded_convs_are_feasible(gen, tasks, ascend_verifier, name):
    g = _draft(gen, tasks[name])
    assert g.schedule["family"] == "ascend_conv"
    _feasible(ascend_verifier, tasks[name], g.source)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_the_conv_template_refuses_it_names(tasks, name):
    with pytest.raises(GenerationError, match=REFUSED[name][1]):
        ascend_op_for(tasks[name])


def test_schedules_that_overflow_the_unified_buffer_have_no_geometry(suite_task):
    op = ascend_op_for(suite_task("npu_l1/39_conv1d.py"))
    whole = CONV.geometry(op, {**VECTOR, "co_tile": 64, "buffer_num": 2, "w_mode": "ub"})
    assert whole is not None and whole["wChunks"] == 1 and whole["woTile"] == 1000
    # a UB of 64 KiB holds 41 rows of 392 floats, not of 1000: rows in chunks
    small = CONV.geometry(op, {**AS.CONSERVATIVE, "co_tile": 64, "buffer_num": 1}, ub=64 * 1024)
    assert small is not None and small["woTile"] == 392 and small["wChunks"] == 3
    # not even 8 columns of 40 channels (or the pass's 40 x 24 x 5 weights) fit 1 KiB
    assert CONV.geometry(op, {**AS.CONSERVATIVE, "co_tile": 64}, ub=1024) is None
    assert CONV.geometry(op, {**AS.CONSERVATIVE, "co_tile": 64, "w_mode": "ub"}, ub=16 * 1024) is None


BROKEN = {  # (what the mutation breaks, old, new) on the drafted kernel of npu_l1 36 (3x3, padding 1)
    "tap_shift_dropped": ("each tap reads the unshifted row", "CopyRow(((n * cin + ci) * h + ih) * w + (lo + off), lo,",
                          "CopyRow(((n * cin + ci) * h + ih) * w, lo,"),
    "padding_rows_read": ("rows above/below the image read out of range", "if (ih < 0 || ih >= static_cast<int32_t>(h)) {",
                          "if (ih < -100) {"),
    "left_padding_garbage": ("the left padding not zeroed", "pad{lo > 0, static_cast<uint8_t>(lo), 0, 0.0f}",
                             "pad{lo > 0, static_cast<uint8_t>(lo), 0, 1.0f}"),
    "bias_skipped": ("the accumulator starts at 0, not the bias", "Duplicate(acc[c * woTile], biasGm.GetValue(co0 + c),",
                     "Duplicate(acc[c * woTile], 0.0f,"),
}


def test_strided_gather_offsets_that_ignore_the_stride_are_caught(gen, tasks, ascend_verifier):
    source = _vector(gen, tasks["stride_w2"])[1]  # the vector lowering's Gather (the cube's: the cube tests)
    old = "idx.SetValue(i, i * STRIDE_W * sizeof(float));"
    assert source.count(old) == 1
    assert not ascend_verifier.verify(tasks["stride_w2"], source.replace(old, "idx.SetValue(i, i * sizeof(float));")).feasible


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_conv_kernels_are_caught(gen, suite_task, ascend_verifier, name):
    task = suite_task("npu_l1/36_conv2d_3x3.py")
    source = _vector(gen, task)[1]
    _, old, new = BROKEN[name]
    assert source.count(old) == 1, old
    v = ascend_verifier.verify(task, source.replace(old, new))
    assert not v.feasible, name



# ------------------------------------------------------------------------------ KernelBench level 1

# level-1 conv files (fitted to the ascend-sim budget) the template refuses, and why; the others draft feasible
KB_REFUSED = {"transposed convolution": [57, 58, 61, 64, 65, 68, 69, 70, 71, 72, 73, 74, 75, 77, 78, 79, 81],
              "3-D convolution": [54, 59, 60, 66], "fused epilogue": [86]}
KB_FEASIBLE = [50, 55, 56, 62, 63, 67, 76, 80, 82, 83, 84, 85, 87]


def _kb_conv(number):
    from evokernel.tasks.fit import fit_task

    path = next((KB / "level1").glob(f"{number}_conv*.py"))
    return fit_task(load_task(path), "ascend-sim")


@needs_kernelbench
def test_kernelbench_level1_convs_are_drafted_or_refused_by_name():
    numbers = sorted(int(p.name.split("_")[0]) for p in (KB / "level1").glob("*_conv*.py"))
    assert numbers == sorted(KB_FEASIBLE + [n for ns in KB_REFUSED.values() for n in ns])
    for why, ns in KB_REFUSED.items():
        for n in ns:
            with pytest.raises(GenerationError, match=why):
                ascend_op_for(_kb_conv(n))
    for n in KB_FEASIBLE:
        assert ascend_op_for(_kb_conv(n)).family == "ascend_conv"


@needs_kernelbench
@pytest.mark.parametrize("number", [50, 56, 67, 76, 84, 87])  # stride 4 (11x11), asymmetric kernel, long 1-D rows,
# stride 3 dilated 1-D, depthwise, pointwise
def test_kernelbench_level1_convs_draft_feasible(gen, ascend_verifier, number):
    task = _kb_conv(number)
    _feasible(ascend_verifier, task, _draft(gen, task).source)
