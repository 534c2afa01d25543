"""The conv family's cube lowering (``ascend/conv/implicit_gemm.py``): dense convolutions as an implicit GEMM (im2col on the
vector cores into a GM workspace, SyncAll, the cube template's batched GEMM, the padded C copied out), drafted by
default where it applies, checked against the PyTorch reference through the real ascend-sim verifier, and broken
variants of the generated kernel that the verifier must refuse."""
import dataclasses
import shutil

import pytest

from evokernel.generators.base import ContextItem, GenerationRequest
from evokernel.generators.template import TemplateGenerator
from evokernel.generators.template.ascend import schedules as AS
from evokernel.generators.template.ascend.conv import implicit_gemm as CC
from evokernel.generators.template.front.search import canonical, knobs_of
from evokernel.generators.template.generator import ascend_op_for

from template_cases import draft as _draft
from template_cases import transform_variants, write_tasks
from verdicts import unexplained_warnings

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed by the ascend-sim emulator")

DENSE = ["npu_l1/36_conv2d_3x3.py", "npu_l1/37_conv2d_pointwise.py", "npu_l1/39_conv1d.py"]

TASK = '''"""{doc}"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = {module}

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [{inputs}]


def get_init_inputs():
    return []
'''

CASES = {  # name -> (module, input, what the cube kernel's shape takes)
    # stride 2 along H (other input rows), dilation 2, asymmetric padding, 80 output channels (two M tiles of 64)
    "stride_h_dilated": ("nn.Conv2d(6, 80, (3, 3), stride=(2, 1), padding=(3, 2), dilation=(2, 2))",
                         "torch.randn(2, 6, 21, 27)", "copy-out"),
    # no bias: the plain weights as A, no ones row
    "no_bias_5x5": ("nn.Conv2d(3, 16, 5, padding=2, bias=False)", "torch.randn(3, 3, 17, 19)", "copy-out"),
    # Ho*Wo = 256: the Fixpipe writes straight into the NCHW output (no copy-out)
    "direct_out": ("nn.Conv2d(4, 24, 3, padding=1)", "torch.randn(2, 4, 16, 16)", "direct"),
    # pointwise, Ho*Wo = 16 * 12: x[n] is col[n]; a cube-only batched matmul
    "pointwise_no_im2col": ("nn.Conv2d(20, 36, 1, bias=False)", "torch.randn(3, 20, 16, 12)", "aic-only"),
    # pointwise with a bias: the im2col (a copy) for the ones row
    "pointwise_bias": ("nn.Conv2d(20, 36, 1)", "torch.randn(3, 20, 16, 12)", "direct"),
    # rows longer than a chunk of the UB: two chunks of output rows per (n, ci, tap)
    "two_row_chunks": ("nn.Conv2d(2, 8, 3, padding=1)", "torch.randn(1, 2, 80, 600)", "direct"),
    # 1-D: a tap whose input span is all padding (w = 4, dilation 4, padding 4), one image
    "conv1d_tap_in_padding": ("nn.Conv1d(3, 16, 3, padding=4, dilation=4)", "torch.randn(1, 3, 4)", "copy-out"),
    # 1-D, many input channels per copy, in two chunks (rows of 9000)
    "conv1d_long_rows": ("nn.Conv1d(8, 40, 3, padding=1)", "torch.randn(2, 8, 9000)", "copy-out"),
    # Ho*Wo = 8094 (N = 8096): a band of B is 16 * N floats apart, beyond Nd2NzParams' 16-bit srcNdMatrixStride
    "conv1d_wide_n": ("nn.Conv1d(11, 16, 3, bias=False)", "torch.randn(1, 11, 8096)", "copy-out"),
    # strides along W: each output row's input span copied, every STRIDE_W-th value gathered (Gather per row)
    "stride_w2": ("nn.Conv2d(4, 8, 3, stride=2, padding=1)", "torch.randn(2, 4, 32, 33)", "direct"),
    "conv1d_stride3_dilated": ("nn.Conv1d(6, 12, 4, stride=3, padding=3, dilation=2)", "torch.randn(3, 6, 500)",
                               "copy-out"),
    # 1-D valid convolution: kernel 7, no padding, no bias
    "conv1d_valid": ("nn.Conv1d(6, 10, 7, bias=False)", "torch.randn(3, 6, 301)", "copy-out"),
}


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    specs = {k: dict(doc=k, module=m, inputs=i) for k, (m, i, _) in CASES.items()}
    return write_tasks(tmp_path_factory.mktemp("conv-cube-tasks"), TASK, specs, {})


@pytest.fixture(scope="module")
def gen():
    return TemplateGenerator()


def draft(gen, task):
    """The draft on this lowering (the GM im2col): where the draft takes the LoadData-3D kernel instead
    (``conv_algo = l1_img2col``, tests/generators/test_template_ascend_conv_l1.py), the modelled base block rendered
    with ``conv_algo = gm_img2col``."""
    d = _draft(gen, task)
    if d.schedule.get("conv_algo") != "l1_img2col":
        return d
    block = {k: v for k, v in AS.draft_knobs(ascend_op_for(task)).items() if k != "conv_algo"}
    sched = AS.make_schedule("ascend_conv", {**AS.CONSERVATIVE, **block, "conv_algo": "gm_img2col"}, "x")
    source, _, _ = gen.render_ascend(task, ascend_op_for(task), sched)
    return dataclasses.replace(d, source=source, schedule=sched)


def _feasible(ascend_verifier, task, source):
    v = ascend_verifier.verify(task, source)
    assert v.feasible, v.feedback
    assert not unexplained_warnings(v), unexplained_warnings(v)
    return v


def _render(gen, task, **knobs):
    op = ascend_op_for(task)
    return gen.render_ascend(task, op, AS.make_schedule("ascend_conv", {**AS.CONSERVATIVE, **knobs}, "x"))


@pytest.mark.parametrize("path", DENSE)
def test_dense_suite_convs_draft_on_the_cube_faster_and_refine_feasible(gen, suite_task, ascend_verifier, path):
    task = suite_task(path)
    d = draft(gen, task)
    assert d.schedule["family"] == "ascend_conv" and d.schedule["lowering"] == "cube"
    assert "Mmad(" in d.source and "SyncAll<false>();" in d.source and "Axpy(" not in d.source
    assert "KERNEL_TYPE_MIX_AIC_1_2" in d.source  # im2col on the vector cores, the GEMM on the cube cores
    cube = _feasible(ascend_verifier, task, d.source)
    vector = _feasible(ascend_verifier, task, _render(gen, task, lowering="vector")[0])
    assert cube.latency_ms * 2 < vector.latency_ms, (cube.latency_ms, vector.latency_ms)
    start = ContextItem(id="d", kind="trace", text=d.source, meta={"schedule": d.schedule, "feasible": True})
    r = gen.generate(GenerationRequest(task=task, stage="refine", backend="ascend-sim", seed=0, start_point=start,
                                       children=[]))
    assert r.schedule["transform"] in AS.TRANSFORM_NAMES and canonical(r.schedule) != canonical(d.schedule)
    _feasible(ascend_verifier, task, r.source)


@pytest.mark.parametrize("knobs", [{"base_m": 128, "base_n": 128, "base_k": 64, "buffer_num": 2},
                                   {"base_m": 128, "base_n": 64, "base_k": 128, "buffer_num": 1}])
def test_cube_tiling_knobs_stay_feasible(gen, suite_task, ascend_verifier, knobs):
    task = suite_task("npu_l1/36_conv2d_3x3.py")
    source, _, geo = _render(gen, task, **knobs)
    assert geo is not None and geo["lowering"] == "cube" and geo["baseK"] == knobs["base_k"]
    _feasible(ascend_verifier, task, source)


def test_every_transform_of_a_cube_conv_is_feasible(gen, suite_task, ascend_verifier):
    """Every refinement step from the draft and from a tuned start (the cube's tile knobs, the switch to the
    vector lowering) gives a kernel the verifier accepts."""
    task = suite_task("npu_l1/37_conv2d_pointwise.py")
    variants = transform_variants(gen, task, "ascend_conv", {"buffer_num": 2, "base_m": 128, "base_k": 64})
    for _, source, _ in variants:
        _feasible(ascend_verifier, task, source)
    assert len(variants) >= 6 and {geo["lowering"] for _, _, geo in variants} == {"cube", "vector"}


def test_depthwise_stays_on_the_vector_lowering(gen, suite_task, ascend_verifier):
    task = suite_task("npu_l1/38_conv2d_depthwise.py")
    d = draft(gen, task)
    assert d.schedule["lowering"] == "cube"  # the knob asks for the cube; the lowering does not apply
    assert "Axpy(" in d.source and "Mmad(" not in d.source and "'lowering': 'vector'" in d.source
    _feasible(ascend_verifier, task, d.source)
    assert CC.applies(ascend_op_for(task)).startswith("a grouped")


@pytest.mark.parametrize("name", sorted(CASES))
def test_strides_dilation_padding_bias_and_1d_match_the_reference(gen, tasks, ascend_verifier, name):
    task = tasks[name]
    d = draft(gen, task)
    assert "Mmad(" in d.source, name
    kind = CASES[name][2]
    geo = CC.geometry(ascend_op_for(task), knobs_of(d.schedule))
    assert geo["copyOut"] == (kind == "copy-out") and geo["im2col"] == (kind != "aic-only")
    assert ("KERNEL_TYPE_AIC_ONLY" in d.source) == (kind == "aic-only")
    assert ("Gather(" in d.source) == name.startswith(("stride_w2", "conv1d_stride3"))
    if name in ("two_row_chunks", "conv1d_long_rows"):  # 1-D: a copy's rows are input channels
        assert geo["ohChunks"] >= 2 and geo["rowsPerChunk"] * geo["ohChunks"] >= (80 if name == "two_row_chunks" else 8)
    _feasible(ascend_verifier, task, d.source)


def test_geometry_is_none_when_the_cube_or_the_ub_overflows(suite_task, tmp_path):
    op = ascend_op_for(suite_task("npu_l1/36_conv2d_3x3.py"))
    assert CC.geometry(op, {**AS.CONSERVATIVE, "base_m": 256, "base_n": 256, "base_k": 256, "buffer_num": 2}) is None
    long = ascend_op_for(suite_task("npu_l1/39_conv1d.py", length=60000))  # one row of 60000 floats > the UB
    assert CC.geometry(long, dict(AS.CONSERVATIVE)) is None


# ------------------------------------------------------------------------------ broken kernels

BROKEN = {  # name -> (task, [(old, new)]): each a kernel an engineer could write, each must be refused
    # the cube cores multiply before the vector cores have written col (no barrier on either side)
    "cube_does_not_wait_for_im2col": ("npu_l1/36_conv2d_3x3.py", [
        ("        SyncAll<false>();  // col (and W') written by the vector cores\n", ""),
        ("        SyncAll<false>();  // col is complete: the cube cores may multiply\n", "")]),
    # the vector cores copy C out before the cube cores have written it
    "copy_out_before_the_gemm": ("npu_l1/36_conv2d_3x3.py", [
        ("            SyncAll<false>();  // every tile of C is in the workspace\n", ""),
        ("            SyncAll<false>();  // C is complete: copy its rows into the output\n", "")]),
    # only the cube core waits: a barrier the vector cores never reach (the hang the NPU would show)
    "barrier_on_one_side": ("npu_l1/36_conv2d_3x3.py", [
        ("        SyncAll<false>();  // col is complete: the cube cores may multiply\n", "")]),
    # every tap reads the unshifted input row
    "tap_shift_dropped": ("npu_l1/36_conv2d_3x3.py", [
        ("xGm[((n * cin + ci) * h + ih) * w + (lo + off)]", "xGm[((n * cin + ci) * h + ih) * w + lo]")]),
    # the convolution's zero padding filled with ones (DataCopyPad's paddingValue)
    "padding_value_one": ("npu_l1/36_conv2d_3x3.py", [
        ("pad{true, static_cast<uint8_t>(lo), static_cast<uint8_t>(wo - hi), 0.0f}",
         "pad{true, static_cast<uint8_t>(lo), static_cast<uint8_t>(wo - hi), 1.0f}")]),
    # the bias row of col filled with zeros instead of ones
    "bias_row_zero": ("npu_l1/36_conv2d_3x3.py", [("P, ones);", "P, zeros);")]),
    # 1-D: col rows of one tap written packed instead of kw rows apart
    "conv1d_rows_packed": ("npu_l1/39_conv1d.py", [
        ("static_cast<uint32_t>((kw * Np - wo) * sizeof(float)), 0};", "static_cast<uint32_t>((Np - wo) * sizeof(float)), 0};")]),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_cube_conv_kernels_are_refused(gen, suite_task, ascend_verifier, name):
    path, edits = BROKEN[name]
    task = suite_task(path)
    source = draft(gen, task).source
    for old, new in edits:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    v = ascend_verifier.verify(task, source)
    assert not v.feasible, name
    if name == "barrier_on_one_side":
        assert "sync_all" in v.feedback


def test_a_band_stride_truncated_to_16_bits_is_caught(gen, tasks, ascend_verifier):
    """The cube template's one-copy-for-all-bands Nd2Nz of B, kept for N = 8096: its srcNdMatrixStride (16 * N)
    wraps at 16 bits, the second band comes from the wrong rows; the kernel must be refused."""
    task = tasks["conv1d_wide_n"]
    source = draft(gen, task).source
    old = "if (bands > 0 && 16 * N > 65535) {"
    assert source.count(old) == 1
    assert not ascend_verifier.verify(task, source.replace(old, "if (bands > 0 && 16 * N > 4000000) {")).feasible


def test_strided_gather_offsets_that_ignore_the_stride_are_caught(gen, tasks, ascend_verifier):
    task = tasks["stride_w2"]
    source = draft(gen, task).source
    old = "idx.SetValue(i, i * STRIDE_W * sizeof(float));"
    assert source.count(old) == 1 and "Mmad(" in source
    assert not ascend_verifier.verify(task, source.replace(old, "idx.SetValue(i, i * sizeof(float));")).feasible
