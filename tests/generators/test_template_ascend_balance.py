"""The cube template's draft base block from the modelled cube/MTE balance (ascend/gemm/balance.py, issue 33).

The model's pieces are checked on their own (bursts, the ranking it gives, the capacity filter); the generator's
drafts that use it are checked feasible through the real verifier, and modelled (deterministic: the latency
model's estimate, not a timing) at least as fast as the conservative schedule they replace."""
from __future__ import annotations

from pathlib import Path

import pytest

from evokernel.generators.base import GenerationRequest
from evokernel.generators.template import TemplateGenerator
from evokernel.generators.template.ascend import schedules as AS
from evokernel.generators.template.ascend.cube import family as CUBE
from evokernel.generators.template.ascend.cube.geometry import geometry
from evokernel.generators.template.ascend.gemm import balance
from evokernel.generators.template.generator import ascend_op_for
from evokernel.tasks.load import load_task

SUITES = Path(__file__).resolve().parents[2] / "evokernel" / "suites"
SPACE = {k: CUBE.KNOBS[k] for k in ("base_m", "base_n", "base_k", "buffer_num")}


def _op(name: str):
    return ascend_op_for(load_task(SUITES / "npu_l1" / name))


def test_bursts_count_rows_that_start_mid_burst():
    assert balance._bursts(4, 128, 128) == 4          # aligned 128-byte rows: one burst each
    assert balance._bursts(4, 128, 128, first=64) == 8  # shifted by half a burst: two each
    assert balance._bursts(2, 64, 100) == 3           # 100-byte stride: the second row crosses a burst boundary
    assert balance._bursts(1, 256, 0, first=0) == 2


def test_model_ranks_longer_rows_and_double_buffering_first():
    op = _op("31_matmul_fp16.py")  # 500 x 264 by 264 x 384, half
    cyc = lambda *b: balance.core_cycles(op, *b)  # noqa: E731
    assert cyc(128, 128, 128, 2) < cyc(128, 128, 64, 2) < cyc(128, 128, 32, 2)  # longer GM rows, fewer steps
    assert cyc(128, 128, 128, 2) < cyc(128, 128, 128, 1)  # copies overlap the loads and Mmads
    assert cyc(128, 128, 128, 2) < cyc(64, 64, 32, 1)     # the old draft


def test_best_block_only_takes_blocks_that_fit():
    op = _op("31_matmul_fp16.py")
    only = {"base_m": 64, "base_n": 128, "base_k": 64, "buffer_num": 1}
    assert balance.best_block(op, SPACE, lambda k: all(k[x] == v for x, v in only.items()), {}) == only
    assert balance.best_block(op, SPACE, lambda k: False, {}) == {}
    pick = CUBE.draft_knobs(op)
    assert geometry(op, {**CUBE.DEFAULTS, **pick}) is not None
    # the cube family's geometry refuses what overflows L0A (256 x 256 half, two buffers): never picked
    assert not (pick["base_m"] == 256 and pick["base_k"] == 256 and pick["buffer_num"] == 2)


@pytest.mark.parametrize("name", ["31_matmul_fp16.py", "34_matmul_tall_skinny_fp16.py", "36_conv2d_3x3.py"])
def test_draft_uses_the_pick_is_feasible_and_models_faster(name, ascend_verifier):
    task = load_task(SUITES / "npu_l1" / name)
    gen = TemplateGenerator(explore_prob=0.0)
    op = ascend_op_for(task)
    g = gen.generate(GenerationRequest(task=task, stage="draft", backend="ascend-sim", seed=0))
    pick = AS.draft_knobs(op)
    assert g.schedule["transform"] == "draft" and pick and all(g.schedule[k] == v for k, v in pick.items())
    v = ascend_verifier.verify(task, g.source)
    assert v.feasible, v.feedback[:600]
    cons = gen.render_ascend(task, op, AS.make_schedule(op.family, dict(AS.CONSERVATIVE), "draft"))[0]
    v0 = ascend_verifier.verify(task, cons)
    assert v0.feasible and v.latency_ms < v0.latency_ms


def test_a_tie_takes_two_buffers():
    """A single K step leaves nothing for a second cube buffer to overlap, so blocks tie on buffering; the pick takes
    two buffers, which the conv lowering's vector queues (sized by the same knob) use (npu_l1/37: 18.3 -> 13.8 us
    modelled)."""
    from evokernel.generators.template.ascend.conv import family as CONV
    from evokernel.generators.template.ascend.conv import implicit_gemm as IG

    op = _op("37_conv2d_pointwise.py")
    g = IG.gemm_op(op)
    assert g.K <= 32  # one K step at every base_k
    assert balance.core_cycles(g, 64, 128, 32, 1) == balance.core_cycles(g, 64, 128, 32, 2)
    assert CONV.draft_knobs(op)["buffer_num"] == 2
