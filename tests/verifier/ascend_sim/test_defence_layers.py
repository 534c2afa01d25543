"""The ascend-sim defences in depth, through a real Verifier: with the static rules and the binary judge switched
off (static_rules=False), the layers behind them still stop the attacks of the corpus' class 4b: the runtime's
covered-bytes check and the parent's audit of the reports. With the rules on, host code may print to stdout (CANN
prints a TilingFunc's output harmlessly) and kernel code may not."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
ATTACKS = ROOT / "tests" / "verifier" / "attacks"
TWIN = (ATTACKS / "twins" / "asc_sigmoid_plain.py").read_text()


@pytest.fixture(scope="module")
def unruled(cache_dir):
    from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

    v = Verifier("ascend-sim", VerifyConfig(cache_dir=cache_dir, static_rules=False, run_timeout_s=20.0)).start()
    yield v
    v.close()


@pytest.fixture(scope="module")
def sigmoid(suite_task):
    return suite_task("npu_l1/03_sigmoid.py", batch_size=16, dim=4096)


def test_the_audit_refuses_a_schedule_shorter_than_its_copies(unruled, sigmoid):
    v = unruled.verify(sigmoid, (ATTACKS / "c4_ascend_sim" / "pasted_negative_cost.py").read_text())
    assert v.failed_gate == "hack", v.feedback
    assert "do not describe the work" in v.feedback
    assert any("mte3 moved" in p for p in v.details["report_audit"])


def test_outputs_written_behind_the_api_are_fatal(unruled, sigmoid):
    v = unruled.verify(sigmoid, (ATTACKS / "c4_ascend_sim" / "pasted_raw_output_write.py").read_text())
    assert v.failed_gate == "runtime" and "gm_raw_write" in v.feedback, v.feedback


def test_the_honest_twin_passes_every_layer(unruled, ascend_verifier, sigmoid):
    for verifier in (unruled, ascend_verifier):
        v = verifier.verify(sigmoid, TWIN)
        assert v.feasible and v.latency_kind == "estimate", v.feedback
        assert "report_audit" not in v.details


def test_host_code_may_print_kernel_code_may_not(ascend_verifier, sigmoid):
    host_prints = TWIN.replace('#include "tiling/platform/platform_ascendc.h"\n',
                               '#include "tiling/platform/platform_ascendc.h"\n#include <cstdio>\n').replace(
        "    context->SetBlockDim(", '    std::printf("TilingFunc: %u elements\\\\n", total);\n    context->SetBlockDim(')
    assert host_prints != TWIN
    v = ascend_verifier.verify(sigmoid, host_prints)
    assert v.feasible, v.feedback
    kernel_prints = TWIN.replace('using namespace AscendC;\n', 'using namespace AscendC;\n#include <cstdio>\n'
                                 '#define OUT(a, b) a##b\nextern "C" void Shout() { OUT(pu, ts)("kernel"); }\n')
    v = ascend_verifier.verify(sigmoid, kernel_prints)
    assert v.failed_gate == "hack" and "stdout/stdin" in v.feedback and "puts" in v.feedback, v.feedback
