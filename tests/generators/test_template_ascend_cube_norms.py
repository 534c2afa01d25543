"""GroupNorm, training-mode BatchNorm and pooling along the features after a matmul in the cube template
(ascend/cube/norms.py, ascend/cube/cols.py, ascend/cube/pool.py): npu_l2 19 (GroupNorm), 20 (BatchNorm1d with
batch statistics) and 21 (AvgPool1d over the features) draft feasible through the real ascend-sim verifier and
their refined variants stay feasible; the kernels that would beat the checks (a GroupNorm normalised over whole
rows, batch statistics over one vector core's rows, the statistics read without the vector cores' barrier,
overlapping pooling windows) are refused; what stays refused is refused by name."""
import shutil
from pathlib import Path

import pytest

from evokernel.generators.base import GenerationError
from evokernel.generators.template import TemplateGenerator
from evokernel.generators.template.ascend import schedules as AS
from evokernel.generators.template.generator import ascend_op_for
from evokernel.tasks.load import load_task

from template_cases import draft, write_tasks
from verdicts import unexplained_warnings

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed by the ascend-sim emulator")

SUITES = Path(__file__).resolve().parents[2] / "evokernel" / "suites"
GROUPNORM, BATCHNORM, POOL = "npu_l2/19_linear_groupnorm.py", "npu_l2/20_linear_batchnorm.py", "npu_l2/21_linear_avgpool.py"

TASK = '''"""{doc}"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
{init_body}

    def forward(self, {args}):
        return {expr}


def get_inputs():
    return [{inputs}]


def get_init_inputs():
    return []
'''

CASES = {
    # a residual (full tensor) and a per-column operand before the GroupNorm, groups of 8 columns (one 32-byte
    # block), M not a multiple of the row block
    "residual_groupnorm": dict(doc="groupnorm(linear(x) + r) * w", args="x, r",
                               init_body="        self.fc = nn.Linear(64, 96)\n        self.gn = nn.GroupNorm(12, 96)\n"
                                         "        self.w = nn.Parameter(torch.randn(96))",
                               expr="self.gn(self.fc(x) + r) * self.w",
                               inputs="torch.randn(150, 64), torch.randn(150, 96)"),
    # a BatchNorm without affine parameters and a softmax over the features after it (KernelBench 84 in kind)
    "batchnorm_softmax": dict(doc="softmax(batchnorm(linear(x)))", args="x",
                              init_body="        self.fc = nn.Linear(48, 128)\n"
                                        "        self.bn = nn.BatchNorm1d(128, affine=False, track_running_stats=False)",
                              expr="torch.softmax(self.bn(self.fc(x)) * 2.0, dim=1)", inputs="torch.randn(300, 48)"),
    # groups of 2 columns (the GroupNorm phase: Gather-summed groups) after a swish and a per-column bias, then
    # a per-column scale (KernelBench 37 and 88 in kind)
    "swish_groupnorm_pairs": dict(doc="groupnorm(swish(linear(x)) + b) * w with 48 groups of 2", args="x",
                                  init_body="        self.fc = nn.Linear(56, 96)\n        self.gn = nn.GroupNorm(48, 96)\n"
                                            "        self.b = nn.Parameter(torch.randn(96))\n"
                                            "        self.w = nn.Parameter(torch.randn(96))",
                                  expr="self.gn((y := self.fc(x)) * torch.sigmoid(y) + self.b) * self.w",
                                  inputs="torch.randn(130, 56)"),
    # a max pool of pairs, then a sum without keepdim and a scale: the (M,) view stays a per-row value
    # (KernelBench 55 in kind)
    "maxpool_sum_scale": dict(doc="sum(maxpool2(linear(x)), dim=1) * 0.5", args="x",
                              init_body="        self.fc = nn.Linear(40, 208)\n        self.pool = nn.MaxPool1d(2)",
                              expr="torch.sum(self.pool(self.fc(x).unsqueeze(1)).squeeze(1), dim=1) * 0.5",
                              inputs="torch.randn(90, 40)"),
}
REFUSED = {
    "groupnorm_rowmin": (dict(doc="a row min after a GroupNorm", args="x",
                              init_body="        self.fc = nn.Linear(32, 64)\n        self.gn = nn.GroupNorm(4, 64)",
                              expr="torch.amin(self.gn(self.fc(x)), dim=1)", inputs="torch.randn(64, 32)"),
                         "a reduction over the output features next to a GroupNorm"),
    "overlapping_pool": (dict(doc="a max pool with windows of 3 every 2 features after the matmul", args="x",
                              init_body="        self.fc = nn.Linear(32, 64)\n        self.pool = nn.MaxPool1d(3, 2)",
                              expr="self.pool(self.fc(x).unsqueeze(1)).squeeze(1)", inputs="torch.randn(64, 32)"),
                         "stride = kernel"),
    "eval_batchnorm": (dict(doc="an eval-mode BatchNorm after the matmul", args="x",
                            init_body="        self.fc = nn.Linear(32, 64)\n        self.bn = nn.BatchNorm1d(64)\n"
                                      "        self.eval()",
                            expr="self.bn(self.fc(x))", inputs="torch.randn(64, 32)"),
                       "eval-mode batch norm"),
    # training mode with running statistics: the kernel would have to update them in place (the verifier compares
    # the model's buffers after each call, trusted/model_state.py); the cube template does not write that update
    "batchnorm_running_stats": (dict(doc="a training-mode BatchNorm tracking running statistics", args="x",
                                     init_body="        self.fc = nn.Linear(32, 64)\n        self.bn = nn.BatchNorm1d(64)",
                                     expr="self.bn(self.fc(x))", inputs="torch.randn(64, 32)"),
                                "running statistics"),
    "batchnorm_fp16": (dict(doc="a BatchNorm after a float16 matmul", args="a, b",
                            init_body="        self.bn = nn.BatchNorm1d(64).half()",
                            expr="self.bn(a @ b)", inputs="torch.randn(64, 32, dtype=torch.float16), "
                                                          "torch.randn(32, 64, dtype=torch.float16)"),
                       "float16"),
}


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    return write_tasks(tmp_path_factory.mktemp("cube-norm-tasks"), TASK, CASES, REFUSED)


@pytest.fixture(scope="module")
def bn_batch_stats(tmp_path_factory):
    """npu_l2/20 (Linear, per-feature scale, BatchNorm1d in training mode, GELU) with batch statistics only
    (``track_running_stats=False``): the suite's norm tracks running statistics, whose in-place update the cube
    template does not write (refused with its reason, `test_what_stays_refused_is_named`)."""
    src = (SUITES / BATCHNORM).read_text().replace("nn.BatchNorm1d(out_features)",
                                                   "nn.BatchNorm1d(out_features, track_running_stats=False)")
    assert "track_running_stats=False" in src
    p = tmp_path_factory.mktemp("cube-bn") / "20_linear_batchnorm_batch_stats.py"
    p.write_text(src)
    return load_task(p)


@pytest.fixture(scope="module")
def gen():
    return TemplateGenerator()


def _check(ascend_verifier, task, source):
    v = ascend_verifier.verify(task, source)
    assert v.feasible, v.feedback
    assert not unexplained_warnings(v), unexplained_warnings(v)
    return v


def _all(gen, task):
    sched = AS.make_schedule("ascend_cube", {**AS.CONSERVATIVE, "row_split": "all"}, "x")
    source, _, geo = gen.render_ascend(task, ascend_op_for(task), sched)
    assert geo is not None
    return source


def test_suite_groupnorm_and_batchnorm_draft_feasible(gen, suite_task, ascend_verifier, bn_batch_stats):
    task = suite_task(GROUPNORM)
    g = draft(gen, task)
    assert g.schedule["family"] == "ascend_cube" and "KERNEL_TYPE_MIX_AIC_1_2" in g.source
    assert "constexpr uint32_t ROW_GROUPS = 12;" in g.source and "op.Rows(" in g.source
    assert "uint32_t grp)" in g.source and "LD = t.rowStride;" in g.source
    _check(ascend_verifier, task, g.source)
    with pytest.raises(GenerationError, match="running statistics"):
        draft(gen, suite_task(BATCHNORM))
    task = bn_batch_stats
    g = draft(gen, task)
    assert "Stats stats;" in g.source and "SyncAll<true>();" in g.source and "Pass(cc0, w, true);" in g.source
    _check(ascend_verifier, task, g.source)
    task = suite_task(POOL)
    g = draft(gen, task)
    assert "constexpr uint32_t POOL_K = 4;" in g.source and "Gather(t, x, off," in g.source
    assert "tiling.set_cols(N / ROW_GROUPS / ROW_POOL);" in g.source
    _check(ascend_verifier, task, g.source)


@pytest.mark.parametrize("name", sorted(CASES))
def test_norms_with_operands_and_tails_are_feasible(gen, tasks, ascend_verifier, name):
    _check(ascend_verifier, tasks[name], draft(gen, tasks[name]).source)


@pytest.mark.parametrize("path", [GROUPNORM, BATCHNORM, POOL])
def test_every_cube_transform_of_a_norm_is_feasible(gen, suite_task, ascend_verifier, bn_batch_stats, path):
    task = bn_batch_stats if path == BATCHNORM else suite_task(path)
    op = ascend_op_for(task)
    base = AS.make_schedule("ascend_cube", dict(AS.CONSERVATIVE), "draft")
    sigs, blocked = set(), 0
    for t in AS.TRANSFORM_NAMES:
        sched = AS.apply_transform(base, t)
        if sched is None:
            continue
        source, sig, geo = gen.render_ascend(task, op, sched)
        if geo is None:
            blocked += sched.get("row_split") == "block"
            continue
        if sig in sigs:
            continue
        sigs.add(sig)
        v = ascend_verifier.verify(task, source)
        assert v.feasible, (sched, v.feedback)
    assert len(sigs) >= 4
    # batch statistics and the pooling phase need C whole: the row-block hand-over has no geometry for them
    assert (blocked > 0) == (path in (BATCHNORM, POOL))


def test_a_groupnorm_normalised_over_whole_rows_is_refused(gen, suite_task, ascend_verifier):
    """What a GroupNorm that is really a LayerNorm (statistics over the whole row) would give: wrong values."""
    task = suite_task(GROUPNORM)
    good = _all(gen, task)
    whole = good.replace("tiling.set_cols(N / ROW_GROUPS / ROW_POOL);", "tiling.set_cols(N);")
    assert whole != good
    v = ascend_verifier.verify(task, whole)
    assert not v.feasible and "trial" in v.feedback


def test_the_small_group_phase_and_its_wrong_twin(gen, tasks, ascend_verifier):
    """Groups of 2 columns go through the GroupNorm phase (Gather-summed groups, statistics expanded back to
    the columns by Gather); with each column given the statistic of the group numbered like the column
    (offsets j instead of j / S) the values are wrong and refused."""
    task = tasks["swish_groupnorm_pairs"]
    good = draft(gen, task).source
    assert "constexpr uint32_t GN_S = 2;" in good and "gn.Run(first, rows);" in good
    assert "ROW_GROUPS = 1;" in good  # the row program after it runs on whole rows of Z
    bad = good.replace("(r * GN_GP + j / GN_S)", "(r * GN_GP + (j < GN_GP ? j : 0))")
    assert bad != good
    v = ascend_verifier.verify(task, bad)
    assert not v.feasible and "trial" in v.feedback, v.feedback


def test_batch_statistics_over_one_cores_rows_are_refused(gen, bn_batch_stats, ascend_verifier):
    """Statistics per vector core slice of rows (each column's mean and variance over the rows that core would
    normalise, M / cores of them) instead of over all M: refused on the values."""
    task = bn_batch_stats
    good = _all(gen, task)
    bad = good.replace("        invM = 1.0f / static_cast<float>(M);\n",
                       "        rowLo = M * GetBlockIdx() / (GetBlockNum() * GetTaskRation());\n"
                       "        rowHi = M * (GetBlockIdx() + 1) / (GetBlockNum() * GetTaskRation());\n"
                       "        invM = 1.0f / static_cast<float>(rowHi - rowLo);\n")
    bad = bad.replace("for (uint32_t r0 = 0; r0 < M; r0 += BN_ROWS) {\n"
                      "            uint32_t rr = M - r0 < BN_ROWS ? M - r0 : BN_ROWS;",
                      "for (uint32_t r0 = rowLo; r0 < rowHi; r0 += BN_ROWS) {\n"
                      "            uint32_t rr = rowHi - r0 < BN_ROWS ? rowHi - r0 : BN_ROWS;")
    bad = bad.replace("    uint32_t M = 0, N = 0, c0 = 0, cw = 0;\n", "    uint32_t M = 0, N = 0, c0 = 0, cw = 0, "
                      "rowLo = 0, rowHi = 0;\n")
    assert bad.count("rowLo") == 4
    v = ascend_verifier.verify(task, bad)
    assert not v.feasible and "trial" in v.feedback, v.feedback


def test_statistics_read_without_the_barrier_are_refused(gen, bn_batch_stats, ascend_verifier):
    """The vector cores normalise with another core's column statistics without the SyncAll between the two
    phases: the values happen to be there (the fibers run one after another), the race detector reports it."""
    task = bn_batch_stats
    good = _all(gen, task)
    bad = good.replace("        SyncAll<true>();  // every column's statistics are in GM", "        // (no barrier)")
    assert bad != good
    v = ascend_verifier.verify(task, bad)
    assert not v.feasible and "cross_core_race" in v.feedback, v.feedback


def test_overlapping_pooling_windows_are_refused(gen, suite_task, ascend_verifier):
    """A pooling phase whose windows start every feature instead of every k features (and a row program that
    reads the first N / k of them): wrong values."""
    task = suite_task(POOL)
    good = _all(gen, task)
    bad = good.replace("(j < NP ? j * POOL_K : 0)", "(j < NP ? j : 0)")
    assert bad != good
    v = ascend_verifier.verify(task, bad)
    assert not v.feasible and "trial" in v.feedback, v.feedback


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_stays_refused_is_named(tasks, name):
    with pytest.raises(GenerationError, match=REFUSED[name][1]):
        ascend_op_for(tasks[name])


KERNELBENCH = Path(__file__).resolve().parents[2].parent / "shared" / "benchmarks" / "kernelbench" / "level2"


@pytest.mark.skipif(not KERNELBENCH.is_dir(), reason="KernelBench's files are not here (../shared/benchmarks)")
@pytest.mark.parametrize("name", ["30_Gemm_GroupNorm_Hardtanh", "37_Matmul_Swish_Sum_GroupNorm",
                                  "55_Matmul_MaxPool_Sum_Scale", "98_Matmul_AvgPool_GELU_Scale_Max"])
def test_kernelbench_groupnorm_batchnorm_and_pooling_files(gen, ascend_verifier, name):
    """KernelBench's own level-2 files (read in place, fitted to the emulator) the cube template refused before."""
    task = load_task(KERNELBENCH / f"{name}.py", fit="auto", backend="ascend-sim")
    _check(ascend_verifier, task, draft(gen, task).source)


@pytest.mark.skipif(not KERNELBENCH.is_dir(), reason="KernelBench's files are not here (../shared/benchmarks)")
@pytest.mark.parametrize("name", ["33_Gemm_Scale_BatchNorm", "84_Gemm_BatchNorm_Scaling_Softmax"])
def test_kernelbench_batchnorm_files_tracking_running_statistics_are_refused_by_name(gen, name):
    """33 and 84 drafted feasible before the model-state rule: their BatchNorm1d tracks running statistics, which a
    training-mode call updates in place. The cube kernel computes the batch mean and variance, but the update has no
    honest place on ascend-sim yet: glue may not write a buffer (``copy_`` in forward is compute), and the binding's
    tensors are the op's inputs or its outputs -- the emulator copies inputs in, never back, and flags a kernel that
    writes one (``EVK_RULE_INPUT_WRITTEN``). Refused by name until then; the same kernels without running statistics
    are drafted feasible (``bn_batch_stats``)."""
    task = load_task(KERNELBENCH / f"{name}.py", fit="auto", backend="ascend-sim")
    with pytest.raises(GenerationError, match="tracks running statistics"):
        draft(gen, task)
