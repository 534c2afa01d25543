"""The conv family's LoadData-3D convolution (``ascend/conv/l1_img2col.py``, ``conv_algo = l1_img2col``): the feature
map's band in L1, im2col by LoadData 3D into L0A, the vector cores' layouts before and after, per-AI-core flags
instead of SyncAll. Checked against the PyTorch reference through the real ascend-sim verifier on the cube
lowering's shapes (strides, dilation, padding, bias, 1-D), the draft's modelled choice, and broken variants."""
import dataclasses
import shutil

import pytest

from evokernel.generators.template import TemplateGenerator
from evokernel.generators.template.ascend import schedules as AS
from evokernel.generators.template.ascend.conv import family as CF
from evokernel.generators.template.ascend.conv import l1_img2col as L1
from evokernel.generators.template.generator import ascend_op_for

from template_cases import draft, write_tasks
from test_template_ascend_conv_cube import CASES, TASK
from verdicts import unexplained_warnings

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed by the ascend-sim emulator")


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    specs = {k: dict(doc=k, module=m, inputs=i) for k, (m, i, _) in CASES.items()}
    return write_tasks(tmp_path_factory.mktemp("conv-l1-tasks"), TASK, specs, {})


@pytest.fixture(scope="module")
def gen():
    return TemplateGenerator()


def _render(gen, task, **knobs):
    op = ascend_op_for(task)
    return gen.render_ascend(task, op, AS.make_schedule(
        "ascend_conv", {**AS.CONSERVATIVE, "lowering": "cube", "conv_algo": "l1_img2col", **knobs}, "x"))


def _feasible(ascend_verifier, task, source):
    v = ascend_verifier.verify(task, source)
    assert v.feasible, v.feedback
    assert not unexplained_warnings(v), unexplained_warnings(v)
    return v


@pytest.mark.parametrize("name", sorted(CASES))
def test_l1_img2col_matches_the_reference(gen, tasks, ascend_verifier, name):
    task = tasks[name]
    source, _, geo = _render(gen, task)
    assert geo is not None and geo["conv_algo"] == "l1_img2col", name
    # LoadData 3D from L1, flags between the cores, no GM im2col and no barrier
    assert "LoadData<float, REGS_CFG>(a2, x1, p);" in source and "SetFmatrix(" in source
    assert "SyncAll" not in source and "CrossCoreWaitFlag(F_X + t % 2);" in source
    _feasible(ascend_verifier, task, source)


def test_draft_takes_l1_img2col_where_the_model_says_it_is_faster(gen, suite_task, tasks):
    """npu_l1/36 (3x3, padding, bias): the pipeline models faster than the GM im2col + GEMM + SyncAlls, so the
    draft is the LoadData-3D kernel; a pointwise convolution without bias whose GEMM needs no im2col (a cube-only
    matmul) stays on the GM lowering."""
    task = suite_task("npu_l1/36_conv2d_3x3.py")
    op = ascend_op_for(task)
    knobs = CF.draft_knobs(op)
    g = L1.geometry(op, knobs)
    assert knobs["conv_algo"] == "l1_img2col"
    assert L1.pipeline_cycles(op, g) < L1.gm_im2col_cycles(op, {**CF.DEFAULTS, **knobs})
    assert "SetFmatrix(" in draft(gen, task).source
    pw = ascend_op_for(tasks["pointwise_no_im2col"])
    assert CF.draft_knobs(pw).get("conv_algo") != "l1_img2col"
    assert "KERNEL_TYPE_AIC_ONLY" in draft(gen, tasks["pointwise_no_im2col"]).source


def test_geometry_is_none_where_the_weights_do_not_fit_l0b(suite_task):
    """All of K x Coutp in L0B (no K tiling): 64 KiB; a wider filter falls back to the GM im2col."""
    op = ascend_op_for(suite_task("npu_l1/36_conv2d_3x3.py"))
    assert L1.geometry(op) is not None
    assert L1.geometry(dataclasses.replace(op, w_shape=(256, 16, 3, 3))) is None  # 256 x 144 floats = 144 KiB


BROKEN = {  # name -> (task, [(old, new)]): each must be refused
    # the cube copies band t into L1 without waiting for the vector cores' half-bands
    "cube_does_not_wait_for_the_band": ("npu_l1/36_conv2d_3x3.py", [
        ("            CrossCoreWaitFlag(F_X + t % 2);  // both vector cores wrote their half of the band\n", ""),
        ("        CrossCoreSetFlag<2, PIPE_MTE3>(F_X + t % 2);\n", "")]),
    # the vector cores read tile t out of its slot without waiting for the cube's Fixpipe
    "tile_read_before_written": ("npu_l1/36_conv2d_3x3.py", [
        ("            CrossCoreWaitFlag(F_Y);  // tile t is in its yT slot\n", ""),
        ("            CrossCoreSetFlag<2, PIPE_FIX>(F_Y);\n", "")]),
    # one flag id for both parities: a vector core a band ahead completes the AIC's tally alone
    "one_flag_for_both_parities": ("npu_l1/36_conv2d_3x3.py", [
        ("CrossCoreSetFlag<2, PIPE_MTE3>(F_X + t % 2);", "CrossCoreSetFlag<2, PIPE_MTE3>(F_X);"),
        ("CrossCoreWaitFlag(F_X + t % 2);", "CrossCoreWaitFlag(F_X);")]),
    # the band's own top padding dropped: the tiles at the top of the image read the wrong rows
    "band_top_padding_dropped": ("npu_l1/36_conv2d_3x3.py", [
        ("        pad[2] = static_cast<uint8_t>(top);", "        pad[2] = 0;")]),
    # 1-D: the window's left padding dropped (the first tile of each row shifted)
    "conv1d_window_left_padding_dropped": ("npu_l1/39_conv1d.py", [
        ("            pad[0] = static_cast<uint8_t>(left);", "            pad[0] = 0;")]),
    # the bias never added
    "bias_not_added": ("npu_l1/36_conv2d_3x3.py", [
        ("            Add(b, b, biasB, static_cast<int32_t>(L_COUT * L_QY));\n", "")]),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_l1_img2col_kernels_are_refused(gen, suite_task, ascend_verifier, name):
    path, edits = BROKEN[name]
    task = suite_task(path)
    source = _render(gen, task)[0]
    for old, new in edits:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    v = ascend_verifier.verify(task, source)
    assert not v.feasible, name
