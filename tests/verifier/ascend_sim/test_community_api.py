"""What community Ascend C operators need of the emulator (issue 29): each check here failed before its fix.

One operator project written the way the gathered community operators write theirs (evals/ascend_community.py):
an ASSERT as an expression suffix, `block_idx`, GlobalTensor's operator(), InitBuffer(TBuf, num, len), the
kernel assert with a message; on the host std::cout without <iostream>, ge::TypeUtils::GetDataTypeLength, an
attribute read with another type's accessor, and progress printed from the TilingFunc.
"""
import numpy as np
import pytest

from ascend_sim_harness import have_gxx

pytestmark = pytest.mark.skipif(not have_gxx(), reason="needs g++")

TILING = r"""
#include "register/tilingdata_base.h"
namespace optiling {
BEGIN_TILING_DATA_DEF(CommunityTilingData)
  TILING_DATA_FIELD_DEF(uint32_t, length);
  TILING_DATA_FIELD_DEF(uint32_t, elemBytes);
  TILING_DATA_FIELD_DEF(int64_t, scaleBits);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(CommunityCustom, CommunityTilingData)
}
"""

HOST = r"""
#include "community_custom_tiling.h"
#include "register/op_def_registry.h"
#include "graph/utils/type_utils.h"
namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext* context) {
    CommunityTilingData tiling;
    uint32_t elem = 0;
    ge::TypeUtils::GetDataTypeLength(context->GetInputDesc(0)->GetDataType(), elem);   // CANN's type_utils.h
    const int64_t* bits = context->GetAttrs()->GetInt(0);   // the attribute is a Float: CANN reinterprets
    std::cout << "tiling: " << elem << " bytes per element" << std::endl;   // <iostream> via the op-def header
    printf("progress printed by the TilingFunc\n");
    tiling.set_length(context->GetInputShape(0)->GetStorageShape().GetShapeSize());
    tiling.set_elemBytes(elem);
    tiling.set_scaleBits(*bits);
    context->SetBlockDim(1);
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
    return ge::GRAPH_SUCCESS;
}
}
namespace ops {
class CommunityCustom : public OpDef {
public:
    explicit CommunityCustom(const char* name) : OpDef(name) {
        this->Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->Output("y").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->Attr("scale").AttrType(OPTIONAL).Float(2.0);
        this->AICore().SetTiling(optiling::TilingFunc);
        this->AICore().AddConfig("ascend910b");
    }
};
OP_ADD(CommunityCustom);
}
"""

KERNEL = r"""
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void community_custom(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
    GET_TILING_DATA(t, tiling);
    uint32_t length = 0;
    length = t.length ASSERT(t.length != 0 && "length can not be zero!");   // ASSERT as an expression suffix
    ASSERT(GetBlockNum() != 0 && "block dim can not be zero!");
    assert(t.elemBytes == 4, "a float is %u bytes\n", t.elemBytes);        // CANN's kernel assert with a message
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float*)x + block_idx * length, length);      // block_idx: the builtin
    yg.SetGlobalBuffer((__gm__ float*)y + block_idx * length, length);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 2, length * sizeof(float) / 2);                    // the queue form's arguments on a TBuf
    LocalTensor<float> v = buf.Get<float>();
    DataCopy(v, xg, length);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    Muls(v, v, 2.0f, length);
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(yg, v, length);
    PipeBarrier<PIPE_ALL>();
    yg(0) = xg(0) + 1.0f;                                                     // GlobalTensor::operator()
}
"""


@pytest.fixture(scope="module")
def project(sim, tmp_path_factory):
    d = tmp_path_factory.mktemp("community")
    exe = sim.op_project(d, op="CommunityCustom", kernel_name="community_custom", kernel_src=KERNEL, host_src=HOST,
                         tiling_src=TILING, tiling_header="community_custom_tiling.h", dtypes={"x": "float", "y": "float"},
                         label="community_custom")
    return exe, d


def test_community_spellings_build_and_run(sim, project):
    exe, d = project
    x = np.linspace(-1, 1, 256, dtype=np.float32)
    r = sim.run_op(exe, d, "CommunityCustom", [("x", x)], [("y", (256,), np.float32)], attrs={"scale": 2.0})
    assert r.rc == 0, r.stderr + str(r.violations)
    want = x * 2
    want[0] = x[0] + 1
    np.testing.assert_array_equal(r.outputs["y"], want)
    assert not r.rules("error"), r.violations
    # the TilingFunc's prints went to stderr, none to stdout (the candidate's channel to the verifier)
    assert "progress printed by the TilingFunc" in r.stderr and "4 bytes per element" in r.stderr
    # GetInt on a Float attribute: the float's bytes, with a warning naming it (CANN reinterprets; no nullptr)
    warn = [v for v in r.violations if v["rule"] == "tiling_context"]
    assert warn and "reinterpreted" in warn[0]["message"]


def test_a_failing_assert_suffix_still_stops_the_block(sim, tmp_path):
    kernel = KERNEL.replace('t.length != 0 && "length', 't.length == 0 && "length')
    exe = sim.op_project(tmp_path, op="CommunityCustom", kernel_name="community_custom", kernel_src=kernel,
                         host_src=HOST, tiling_src=TILING, tiling_header="community_custom_tiling.h",
                         dtypes={"x": "float", "y": "float"}, label="community_assert")
    r = sim.run_op(exe, tmp_path, "CommunityCustom", [("x", np.ones(256, np.float32))], [("y", (256,), np.float32)])
    assert "kernel_assert" in r.rules("fatal"), r.violations


def test_a_zero_length_buffer_a_block_never_uses_is_a_warning(sim, tmp_path):
    """Community tilings give a block without work buffers of 0 bytes; CANN documents no failure for that, so it
    is a warning (was an error), and a use of such a buffer is still caught."""
    idle = KERNEL.replace("    LocalTensor<float> v = buf.Get<float>();",
                          "    TBuf<TPosition::VECCALC> idle;\n    pipe.InitBuffer(idle, 0);\n"
                          "    LocalTensor<float> v = buf.Get<float>();")
    exe = sim.op_project(tmp_path, op="CommunityCustom", kernel_name="community_custom", kernel_src=idle,
                         host_src=HOST, tiling_src=TILING, tiling_header="community_custom_tiling.h",
                         dtypes={"x": "float", "y": "float"}, label="community_idle")
    r = sim.run_op(exe, tmp_path, "CommunityCustom", [("x", np.ones(256, np.float32))], [("y", (256,), np.float32)])
    zero = [v for v in r.violations if "length of 0 bytes" in v["message"]]
    assert zero and zero[0]["severity"] == "warning" and not r.rules("error"), r.violations
