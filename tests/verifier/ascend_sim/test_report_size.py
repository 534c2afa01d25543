"""report_size: emulator reports bounded in the worker (lossless run-length first, then a summary), restored in the
parent; the latency model and the audit read the restored report as they read the emulator's."""
import copy

import pytest

from evokernel.verifier.backends.ascend_sim import latency_model, report_size
from evokernel.verifier.backends.ascend_sim.report_schema import REPORT


def _block(i, cycles=1000.0, gm=4096.0, **extra):
    return {"block": i, "status": "ok", "ub_bytes_used": 1024,
            "counters": {"mte2_bytes": int(gm), "mte3_bytes": int(gm) // 2, "vector": [
                {"op": "Add", "dtype": "float", "calls": 4, "elements": 1024, "repeats": 16}]},
            "queues": [{"kind": "TQue", "position": "VECIN", "num": 2, "depth": 2, "bytes": 1024, "allocs": 4,
                        "line": 12}] * 3,
            "timing_estimate": {"cycles": cycles, "us": cycles / 1850, "scalar_stall_cycles": 0.0,
                                "busy_cycles": {"mte2": cycles / 4, "vector": cycles / 8, "mte3": cycles / 8},
                                "instructions": {"vector": 4}, "gm_bytes": {"mte2": gm, "mte3": gm / 2},
                                "copies": {"mte2": 2, "mte3": 1}}, **extra}


def _report(blocks):
    return {"schema": "evk-sim-report/1", "op_type": "AddCustom", "status": "ok", "block_dim": len(blocks),
            "blocks_run": len(blocks), "violations": [], "blocks": blocks}


def _even_split(n):  # the bigger blocks, the smaller ones, the tail: three kinds
    return [_block(i, 1100.0 if i < n // 3 else 1000.0 if i < n - 1 else 400.0) for i in range(n)]


def test_run_length_is_lossless_and_small():
    rep = _report(_even_split(8192))
    assert report_size.size(rep) > 4 << 20  # the size that broke the protocol
    small = report_size.compact(rep, 1 << 20)
    assert len(small["blocks"]) == 3 and "blocks_omitted" not in small and report_size.size(small) < 10_000
    REPORT.check(copy.deepcopy(small), "report")  # the wire schema accepts "repeat"
    assert report_size.expand([small]) == [rep]


def test_mix_units_repeat_by_ai_core():
    blocks = [_block(3 * c + s, ai_core=c, sub_block=s, core="aic" if s == 0 else "aiv") for c in range(50)
              for s in range(3)]
    rep = _report(blocks)
    small = report_size.compact(rep, 1 << 20)
    assert len(small["blocks"]) == 3
    assert report_size.expand([small]) == [rep]


def test_a_gap_or_a_different_block_is_not_merged():
    blocks = _even_split(10)
    blocks[5]["block"] = 50  # not the shifted repeat of block 4
    rep = _report(blocks)
    assert report_size.expand([report_size.compact(rep, 1 << 20)]) == [rep]


def test_distinct_blocks_over_budget_are_summarised_and_never_estimated_faster():
    blocks = [_block(i, 1000.0 + 7 * i) for i in range(600)]  # all distinct
    rep = _report(blocks)
    budget = 64 << 10
    small = report_size.compact(rep, budget)
    assert report_size.size(small) <= budget
    omitted = small["blocks_omitted"]
    assert 0 < len(small["blocks"]) < 600 and omitted["units"] == omitted["blocks"] == 600 - len(small["blocks"])
    REPORT.check(copy.deepcopy(small), "report")
    full, summarised = latency_model.estimate_kernel(rep), latency_model.estimate_kernel(small)
    assert summarised.us >= full.us and summarised.us <= full.us * 1.1
    assert summarised.gm_bytes == pytest.approx(full.gm_bytes)
    assert summarised.blocks_modelled == 600 and any("summarised" in n for n in summarised.notes)


def test_a_report_too_large_without_blocks_becomes_a_failed_run():
    rep = _report(_even_split(8))
    rep["violations"] = [{"rule": "r", "severity": "warning", "message": "m" * 900 + str(i), "file": "k.cpp",
                          "line": i} for i in range(200)]
    small = report_size.compact(rep, 64 << 10)
    assert small["status"] == "report_too_large" and "bytes" in small["error"]
    assert report_size.size(small) < 64 << 10


def test_budgets_leave_every_later_report_its_minimum():
    assert report_size.budget_for(0, 0, 64) == report_size.MAX_REPLY_REPORTS_BYTES - 63 * report_size.MIN_REPORT_BYTES
    assert report_size.budget_for(report_size.MAX_REPLY_REPORTS_BYTES, 10, 64) == report_size.MIN_REPORT_BYTES
    assert 64 * report_size.MIN_REPORT_BYTES <= report_size.MAX_REPLY_REPORTS_BYTES


@pytest.mark.parametrize("bad", [
    [dict(_block(0), repeat=2), dict(_block(1), repeat=3)],  # not a unit: two entries of one MIX core repeat unevenly
])
def test_malformed_repeats_are_refused(bad):
    for b in bad:
        b["ai_core"] = 0
    with pytest.raises(ValueError):
        report_size.expand([_report(bad)])


def test_expansion_is_bounded():
    rep = _report([dict(_block(0), repeat=report_size.MAX_EXPANDED)])
    report_size.expand([rep])  # at the bound
    with pytest.raises(ValueError, match="more than"):
        report_size.expand([rep, _report([dict(_block(0), repeat=2)])])
