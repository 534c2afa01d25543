"""The cube template's matmul refinement knobs: split-K in float16 (float32 partial sums in a GM workspace, summed
by the vector cores after SyncAll: a MIX kernel; ascend/cube/splitk.py) and L1-resident A (a row block of A copied
into L1 once for all its N tiles; ascend/cube/resident.py). Each through the real ascend-sim verifier, with the
kernels that would beat the checks (a barrier before the partials are written, the bias in every range, A not
reloaded for a new row block) refused, and the refusals by name where a knob does not apply."""
import shutil

import pytest

from evokernel.generators.template import TemplateGenerator
from evokernel.generators.template.ascend import schedules as AS
from evokernel.generators.template.ascend.cube import resident as RES
from evokernel.generators.template.ascend.cube import splitk as SPLITK
from evokernel.generators.template.generator import ascend_op_for

from template_cases import draft
from verdicts import unexplained_warnings

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed by the ascend-sim emulator")

L33 = "npu_l1/33_matmul_large_k_fp16.py"
L31 = "npu_l1/31_matmul_fp16.py"


@pytest.fixture(scope="module")
def gen():
    return TemplateGenerator()


def _sched(**knobs):
    return AS.make_schedule("ascend_cube", {**AS.CONSERVATIVE, **knobs}, "x")


def _render(gen, task, **knobs):
    source, _, geo = gen.render_ascend(task, ascend_op_for(task), _sched(**knobs))
    return source, geo


def _feasible(ascend_verifier, task, source):
    v = ascend_verifier.verify(task, source)
    assert v.feasible, v.feedback
    warnings = unexplained_warnings(v)
    assert not warnings, warnings
    return v


@pytest.mark.parametrize("path", [L31, "npu_l2/12_linear_relu.py"])
def test_the_other_suite_matmuls_still_draft_feasible(gen, suite_task, ascend_verifier, path):
    """31 and 12 (32-35 and 13-18: test_template_ascend_cube_fusions.py)."""
    task = suite_task(path)
    g = draft(gen, task)
    assert g.schedule["family"] == "ascend_cube" and g.schedule["a_resident"] is False
    _feasible(ascend_verifier, task, g.source)


def test_float16_split_k_sums_float_partials_on_the_vector_cores(gen, suite_task, ascend_verifier):
    task = suite_task(L33)
    base_src, base_geo = _render(gen, task, base_k=128, buffer_num=2)
    base = _feasible(ascend_verifier, task, base_src)
    for split in (2, 4):
        src, geo = _render(gen, task, base_k=128, buffer_num=2, split_k=split)
        assert geo["blockDim"] > base_geo["blockDim"]
        assert "KERNEL_TYPE_MIX_AIC_1_2" in src and "SetAtomicAdd" not in src and src.count("SyncAll<false>()") == 2
        assert "workspace[0] = static_cast<size_t>(splitK) * M * N * sizeof(float);" in src
        assert "Cast(y, x, RoundMode::CAST_RINT, count);" in src and "at::zeros(" not in src
        v = _feasible(ascend_verifier, task, src)
        assert v.latency_ms < 0.85 * base.latency_ms, (split, v.latency_ms, base.latency_ms)


def test_a_barrier_before_the_partials_are_written_is_refused(gen, suite_task, ascend_verifier):
    """What would beat the test above: the cube cores meet the vector cores at the barrier before their Fixpipe
    writes, so the vector cores sum a workspace not yet written; or every range adds the bias."""
    task = suite_task(L33)
    src, _ = _render(gen, task, split_k=2)
    early = src.replace("        SyncAll<false>();  // every range's partial C is in the workspace: the vector cores may sum\n", "")
    early = early.replace("        for (uint32_t tile = GetBlockIdx(); tile < tilesM * tilesN * splitK;",
                          "        SyncAll<false>();\n        for (uint32_t tile = GetBlockIdx(); tile < tilesM * tilesN * splitK;")
    assert early != src and early.count("SyncAll<false>()") == 2
    v = ascend_verifier.verify(task, early)
    assert not v.feasible
    assert "cross_core_race" in v.feedback, v.feedback[:2000]


def test_split_k_with_relu_or_an_epilogue_goes_through_the_workspace(gen, suite_task, ascend_verifier):
    """The float32 atomic path refuses a ReLU (of partial sums); the workspace path applies it to the sum."""
    for path in ("npu_l2/12_linear_relu.py", "npu_l2/13_linear_gelu.py"):
        task = suite_task(path)
        src, geo = _render(gen, task, split_k=2)
        assert geo is not None and "KERNEL_TYPE_MIX_AIC_1_2" in src and "SetAtomicAdd" not in src
        assert "params.reluEn = true;" not in src
        _feasible(ascend_verifier, task, src)
        if path.startswith("npu_l2/12"):
            assert "Relu(w0, x, count);" in src
            for broken in (src.replace("if (first && withBias) {", "if (first) {"),  # the bias in every range
                           src.replace("Relu(w0, x, count);", "Adds(w0, x, 0.0f, count);")):  # no ReLU
                assert broken != src
                assert not ascend_verifier.verify(task, broken).feasible


def test_float32_split_k_keeps_atomic_adds_unless_asked(gen, suite_task, ascend_verifier):
    task = suite_task("npu_l1/32_matmul_bt_fp32.py")
    atomic, _ = _render(gen, task, split_k=2)
    assert "SetAtomicAdd<float>();" in atomic and "KERNEL_TYPE_AIC_ONLY" in atomic and "at::zeros(" in atomic
    ws, _ = _render(gen, task, split_k=2, split_sum="workspace")
    assert "SetAtomicAdd" not in ws and "KERNEL_TYPE_MIX_AIC_1_2" in ws and "DataCopy(y, x, count);" in ws
    _feasible(ascend_verifier, task, atomic)
    _feasible(ascend_verifier, task, ws)


def test_split_k_refusals_are_named(gen, suite_task):
    cases = {"npu_l1/35_batched_matmul_fp16.py": "batched", "npu_l2/15_linear_softmax.py": "row program"}
    for path, why in cases.items():
        task = suite_task(path)
        op = ascend_op_for(task)
        assert why in SPLITK.refusal(op, _sched(split_k=2))
        assert gen.render_ascend(task, op, _sched(split_k=2))[2] is None
    op = ascend_op_for(suite_task(L31))  # K = 264: one step of 256 and a tail of 8 -- two steps
    assert SPLITK.refusal(op, _sched(split_k=2, base_k=256)) is None
    op = ascend_op_for(suite_task("npu_l1/34_matmul_tall_skinny_fp16.py"))  # K = 136 in one step of 256
    assert "two base_k steps" in SPLITK.refusal(op, _sched(split_k=2, base_k=256))


@pytest.mark.parametrize("path,knobs", [(L31, {}), (L33, {"base_k": 128, "buffer_num": 2}),
                                        ("npu_l1/32_matmul_bt_fp32.py", {}),
                                        ("npu_l2/13_linear_gelu.py", {}),  # per-tile MIX epilogue: same tile order
                                        ("npu_l2/15_linear_softmax.py", {"row_split": "block"}),
                                        ("npu_l2/17_linear_layernorm.py", {"row_split": "all"})])
def test_resident_a_is_feasible(gen, suite_task, ascend_verifier, path, knobs):
    task = suite_task(path)
    src, geo = _render(gen, task, a_resident=True, **knobs)
    assert geo is not None and "LoadA(m0, m);" in src and "aRes[(k0 / C0)" in src
    assert "DataCopy(a1Local, aGm[m0 * K + k0], aParams);" not in src
    _feasible(ascend_verifier, task, src)


def test_resident_a_copies_a_once_per_row_block(gen, suite_task, ascend_verifier):
    """31 in tiles of 64 x 128: 8 x 3 tiles on 20 cores, 1-2 consecutive tiles per core; the ranges (2, 3) and
    (5, 6) cross a row block and must load the next one. What would beat the check: A loaded for the first row
    block only."""
    task = suite_task(L31)
    src, geo = _render(gen, task, a_resident=True, base_n=128)
    assert (geo["tilesM"], geo["tilesN"], geo["blockDim"]) == (8, 3, 20)
    stale = src.replace("if (m0 != aRow) {", "if (aRow == NO_ROW) {")
    assert stale != src
    assert not ascend_verifier.verify(task, stale).feasible
    per_tile = _feasible(ascend_verifier, task, _render(gen, task, base_n=128)[0])
    resident = _feasible(ascend_verifier, task, src)
    assert resident.latency_ms < per_tile.latency_ms, (resident.latency_ms, per_tile.latency_ms)


def test_resident_a_refusals_are_named(suite_task):
    op = ascend_op_for(suite_task(L33))
    assert "does not fit L1" in RES.refusal(op, _sched(a_resident=True, base_m=256))
    assert "split-K" in RES.refusal(op, _sched(a_resident=True, split_k=2))
    op = ascend_op_for(suite_task("npu_l1/35_batched_matmul_fp16.py"))
    assert "batched" in RES.refusal(op, _sched(a_resident=True))
    assert RES.refusal(op, _sched(a_resident=False)) is None


def test_refinement_offers_the_new_knobs(gen, suite_task):
    """From the draft of 33, split-K and resident A are real (feasible, new code) one-step refinements."""
    task = suite_task(L33)
    op = ascend_op_for(task)
    start = AS.make_schedule("ascend_cube", dict(AS.CONSERVATIVE), "draft")
    base_sig = gen.render_ascend(task, op, start)[1]
    for t in ("split_k_2", "split_k_4", "a_resident"):
        cand = AS.apply_transform(start, t)
        _, sig, geo = gen.render_ascend(task, op, cand)
        assert geo is not None and sig != base_sig, t
    # split_sum is cosmetic without split-K, and on float16 (always the workspace)
    for cand in (AS.apply_transform(start, "split_sum_workspace"),
                 AS.apply_transform(AS.apply_transform(start, "split_k_2"), "split_sum_workspace")):
        base = {**cand, "split_sum": "auto"}
        assert gen.render_ascend(task, op, cand)[1] == gen.render_ascend(task, op, base)[1]


def _refine_from(gen, task, knobs):
    from evokernel.generators.base import ContextItem, GenerationRequest
    import json

    start = AS.make_schedule("ascend_cube", {**AS.CONSERVATIVE, **knobs}, "start")
    sp = ContextItem("start", "trace", "", {"schedule": json.dumps(start), "feasible": True})
    return gen.generate(GenerationRequest(task=task, stage="refine", backend="ascend-sim", seed=0,
                                          start_point=sp)).schedule


def test_refinement_tries_split_k_where_tiles_are_few_and_k_long(gen, suite_task):
    """The cube priors (ascend/schedules.prior_scores): 33 (9 draft tiles for 20 cube cores, K = 2048) refines a
    tuned kernel with split-K first; 31 (48 tiles, K = 264) does not, and takes resident A after its tiles."""
    tuned = {"base_k": 128, "buffer_num": 2}
    assert _refine_from(gen, suite_task(L33), tuned)["transform"] == "split_k_2"
    assert _refine_from(gen, suite_task(L31), tuned)["transform"] == "base_mn_128"
    assert _refine_from(gen, suite_task(L31), {**tuned, "base_m": 128, "base_n": 128})["transform"] == "a_resident"
