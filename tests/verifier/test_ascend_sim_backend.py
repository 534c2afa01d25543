"""The ascend-sim backend end to end: Ascend C operator projects through the verifier's gates.

Correct projects are feasible with an estimated latency; rule-breaking kernels are rejected at the
runtime gate with the rule named; malformed projects fail the compile gate with feedback that names
the candidate's string; rule-breaking sources are stopped before anything runs."""
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ADD = (ROOT / "evokernel" / "examples" / "ascend" / "add_custom.py").read_text()
ADD_TASK = "npu_l1/11_elementwise_add.py"


@pytest.fixture(scope="module")
def add_task(suite_task):
    return suite_task(ADD_TASK, batch_size=3, dim=1003)  # 3009 elements: an unaligned tail in the last block


def test_correct_project_is_feasible_with_an_estimate(ascend_verifier, add_task):
    v = ascend_verifier.verify(add_task, ADD)
    assert v.feasible, v.feedback
    assert v.backend == "ascend-sim" and v.latency_kind == "estimate"
    assert v.latency_ms > 0 and v.reference_ms > 0 and v.speedup == pytest.approx(v.reference_ms / v.latency_ms)
    assert v.noise == 0.0  # a model, not a measurement
    assert "estimate" in v.feedback and "ESTIMATED" in v.summary()
    assert v.details["profile"] and v.details["estimate"]["kernel_us"] == pytest.approx(v.latency_ms * 1e3)
    assert v.details["native_builds"]["count"] == 2  # the kernel library and the host library


def test_estimate_is_deterministic(ascend_verifier, add_task):
    a, b = (ascend_verifier.verify(add_task, ADD) for _ in range(2))
    assert a.latency_ms == b.latency_ms and a.reference_ms == b.reference_ms


@pytest.mark.parametrize("old,new,rule", [
    # the unaligned tail copied with plain DataCopy: the length rounds down and the tail is never written
    ("if (len % this->unitLength == 0) {\n            DataCopy(xLocal", "if (true) {\n            DataCopy(xLocal",
     "datacopy_tail_dropped"),
    # reads past the tile buffer (and reads the tile's never-copied part first)
    ("Add(zLocal, xLocal, yLocal, len);", "Add(zLocal, xLocal, yLocal, this->tileLength + 8);", "ub_out_of_bounds"),
    ("inQueueX.FreeTensor(xLocal);", "inQueueX.FreeTensor(xLocal);\n        inQueueX.FreeTensor(xLocal);",
     "queue_pairing"),
    ("pipe.InitBuffer(outQueueZ, BUFFER_NUM, this->tileLength * sizeof(T));",
     "pipe.InitBuffer(outQueueZ, BUFFER_NUM, 200000);", "ub_capacity"),
    ("zGm.SetGlobalBuffer((__gm__ T*)z + start, this->length);",
     "zGm.SetGlobalBuffer((__gm__ T*)z, this->length);", "block_write_overlap"),
    # computing from global memory behind the API's back (invisible to the counters): a fault, named
    ("uint32_t blockIdx = GetBlockIdx();", "uint32_t blockIdx = GetBlockIdx();\n        "
     "volatile float probe = *((__gm__ float*)x); (void)probe;", "gm_raw_access"),
])
def test_rule_breaking_kernels_are_rejected_with_the_rule(ascend_verifier, add_task, old, new, rule):
    assert old in ADD
    v = ascend_verifier.verify(add_task, ADD.replace(old, new, 1))
    assert not v.feasible and v.failed_gate == "runtime", v.feedback
    assert rule in v.feedback and ("kernel_src.cpp:" in v.feedback or rule == "gm_raw_access")
    assert rule in {x["rule"] for x in v.details["emulator"]["violations"]}


def test_compile_errors_name_the_string(ascend_verifier, add_task):
    v = ascend_verifier.verify(add_task, ADD.replace("Add(zLocal", "Addd(zLocal"))
    assert v.failed_gate == "compile" and "kernel_src.cpp:" in v.feedback and "Addd" in v.feedback
    v = ascend_verifier.verify(add_task, ADD.replace("context->SetBlockDim(blockDim);", "context->SetBlockDim(blockDim)"))
    assert v.failed_gate == "compile" and "host_operator_src.cpp:" in v.feedback


def test_malformed_project_fails_compile_gate(ascend_verifier, add_task):
    v = ascend_verifier.verify(add_task, ADD.replace('"op": "AddCustom"', '"op": "SubCustom"'))
    assert v.failed_gate == "compile" and "sub_custom" in v.feedback


def test_wrong_opdef_name_is_explained(ascend_verifier, add_task):
    src = ADD.replace("OP_ADD(AddCustom);", "OP_ADD(AddCustomV2);").replace(
        "class AddCustom : public OpDef", "class AddCustomV2 : public OpDef").replace(
        "explicit AddCustom(const char* name)", "explicit AddCustomV2(const char* name)")
    v = ascend_verifier.verify(add_task, src)
    assert not v.feasible and "OP_ADD(AddCustom)" in v.feedback


@pytest.mark.parametrize("old,new,rule", [
    ("#include \"kernel_operator.h\"", "#include \"kernel_operator.h\"\n#include \"/etc/passwd\"", "ascend-include"),
    ("uint32_t blockIdx = GetBlockIdx();", "uint32_t blockIdx = evk_sim::block_idx();", "ascend-internals"),
    ("uint32_t blockIdx = GetBlockIdx();", "uint32_t blockIdx = GetBlockIdx(); system(\"id\");", "cpp-process"),
    ("return custom_ops_lib.add_custom(x, y)", "return torch.add(x, y)", "torch"),
    ("import custom_ops_lib", "import custom_ops_lib\nimport os", "import"),
    # the binding (compiled and run on the device by backend ascend): EXEC_NPU_CMD and allocations only
    ("    EXEC_NPU_CMD(aclnnAddCustom, self, other, result);",
     "    EXEC_NPU_CMD(aclnnAddCustom, self, other, result);\n    float* p = result.data_ptr<float>();", "binding-device"),
    ("    EXEC_NPU_CMD(aclnnAddCustom, self, other, result);",
     "    aclrtMemcpy(nullptr, 0, nullptr, 0, 0);\n    EXEC_NPU_CMD(aclnnAddCustom, self, other, result);",
     "binding-device"),
    ('#include "pytorch_npu_helper.hpp"', '#include "pytorch_npu_helper.hpp"\n#include <dlfcn.h>', "binding-include"),
    ("    EXEC_NPU_CMD(aclnnAddCustom, self, other, result);",
     "    EXEC_NPU_CMD(aclnnAddCustom, self, other, result);\n    system(\"id\");", "cpp-process"),
    # reaching into the op library (e.g. to rewrite the emulator's reports) instead of calling the op
    ("return custom_ops_lib.add_custom(x, y)", "z = custom_ops_lib.add_custom(x, y)\n        "
     "custom_ops_lib.reports.clear()\n        return z", "custom-ops"),
])
def test_rule_breaking_sources_stop_before_running(ascend_verifier, add_task, old, new, rule):
    v = ascend_verifier.verify(add_task, ADD.replace(old, new, 1))
    assert not v.feasible and v.failed_gate == "hack", v.feedback
    assert rule in " ".join(v.details.get("findings", [])) + v.feedback


def test_model_src_must_call_the_op(ascend_verifier, add_task):
    src = ADD.replace("return custom_ops_lib.add_custom(x, y)", "return x + y")
    v = ascend_verifier.verify(add_task, src)
    assert not v.feasible and v.failed_gate == "hack"


def test_dtype_not_declared_is_reported(ascend_verifier, suite_task):
    task = suite_task("npu_l1/28_elementwise_add_fp16.py", batch_size=4)
    v = ascend_verifier.verify(task, ADD)  # the project declares float only
    assert not v.feasible and "declares input dtypes (float, float)" in v.feedback


def test_half_combination_builds_and_runs(ascend_verifier, suite_task):
    task = suite_task("npu_l1/28_elementwise_add_fp16.py", batch_size=4)
    src = ADD.replace('"type": ["float"]', '"type": ["float16"]')
    v = ascend_verifier.verify(task, src)
    assert v.feasible, v.feedback


def test_a_candidate_using_the_high_level_sigmoid_api(ascend_verifier, suite_task):
    """The template's sigmoid project with its composed Muls/Exp/Adds/Div replaced by the documented high-level
    call: feasible, and its estimate counts the same four instructions. Writing the result over the source
    (the API rules out overlap) is refused at the runtime gate with the rule named."""
    from evokernel.generators.base import GenerationRequest
    from evokernel.generators.template import TemplateGenerator

    task = suite_task("npu_l1/03_sigmoid.py", batch_size=4, dim=1000)
    src = TemplateGenerator().generate(GenerationRequest(task=task, stage="draft", seed=1, backend="ascend-sim")).source
    composed = ("        Muls(o, l_x, (-1.0f), nflat);\n        Exp(o, o, nflat);\n        Adds(o, o, 1.0f, nflat);\n"
                "        Duplicate(t0, 1.0f, nflat);\n        Div(o, t0, o, nflat);\n")
    assert composed in src
    v = ascend_verifier.verify(task, src.replace(composed, "        Sigmoid(o, l_x, nflat);\n"))
    assert v.feasible, v.feedback
    base = ascend_verifier.verify(task, src)
    assert base.feasible and v.latency_ms <= base.latency_ms  # one instruction fewer (no Duplicate)
    bad = src.replace(composed, "        Sigmoid(l_x, l_x, nflat);\n        Adds(o, l_x, 0.0f, nflat);\n")
    v = ascend_verifier.verify(task, bad)
    assert not v.feasible and "invalid_argument" in v.feedback and "overlap" in v.feedback


def test_a_tiling_header_defining_a_host_helper_builds(ascend_verifier, add_task):
    """A tiling header that defines (not inline) a host helper the TilingFunc calls (KiaraStark/ascendc-homework's
    SoftMax does): CANN's kernel build reads only the header's tiling-data definitions, the emulator compiles all
    of it into both translation units; the kernel's copy is made local so the link does not see it twice."""
    src = ADD.replace("REGISTER_TILING_DATA_CLASS(AddCustom, AddCustomTilingData)\n}\n",
                      "REGISTER_TILING_DATA_CLASS(AddCustom, AddCustomTilingData)\n}\n"
                      "namespace AddHelper {\nuint32_t Units(uint32_t n, uint32_t unit) { return (n + unit - 1) / unit; }\n"
                      "uint32_t g_calls = 0;\n}\n", 1)
    src = src.replace("    AddCustomTilingData tiling;\n", "    AddCustomTilingData tiling;\n"
                      "    AddHelper::g_calls += AddHelper::Units(8, 8);\n", 1)
    assert "AddHelper::Units" in src and "g_calls += " in src
    v = ascend_verifier.verify(add_task, src)
    assert v.feasible, v.feedback


def test_many_blocks_get_a_verdict_within_the_message_limit(ascend_verifier, suite_task, monkeypatch):
    """blockDim 4096 (one 32-byte unit per block): its emulator report was 5.4 MB, over the codec's 4 MiB, a protocol
    break for an honest kernel; the worker now sends each run of identical blocks once (report_size.py)."""
    from evokernel.verifier import message_codec as codec

    old = "uint32_t blockDim = units < coreNum ? units : coreNum;"
    assert old in ADD
    source = ADD.replace(old, "uint32_t blockDim = units < 4096u ? units : 4096u;")
    sizes = []
    recv = codec.recv

    def measured(*args, **kwargs):
        msg = recv(*args, **kwargs)
        if msg.get("native_reports"):
            sizes.append(len(json.dumps(msg)))
        return msg

    monkeypatch.setattr(codec, "recv", measured)
    v = ascend_verifier.verify(suite_task(ADD_TASK, batch_size=16, dim=4096), source)  # 65,536 float32 elements
    assert v.feasible, v.feedback
    kernel = v.details["estimate"]["kernels"][0]
    assert kernel["block_dim"] == 4096 and kernel["blocks_modelled"] == 4096 and kernel["waves"] == 103
    assert sizes and max(sizes) < 64 << 10
