"""What community Ascend C operators need of the emulator (issue 29): each check here failed before its fix.

One operator project written the way the gathered community operators write theirs (evals/bench/ascend_community.py):
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


def test_std_printf_in_a_kernel_is_the_kernel_print(sim, tmp_path):
    """`std::printf` in device code is CANN's kernel printf, as the unqualified form is (the print macro once made
    it `std::evk_print_begin`, which did not compile)."""
    kernel = KERNEL.replace("    PipeBarrier<PIPE_ALL>();", '    PipeBarrier<PIPE_ALL>();\n    std::printf("std %u\\n", length);')
    assert "std::printf" in kernel
    exe = sim.op_project(tmp_path, op="CommunityCustom", kernel_name="community_custom", kernel_src=kernel,
                         host_src=HOST, tiling_src=TILING, tiling_header="community_custom_tiling.h",
                         dtypes={"x": "float", "y": "float"}, label="community_std_printf")
    r = sim.run_op(exe, tmp_path, "CommunityCustom", [("x", np.ones(256, np.float32))], [("y", (256,), np.float32)],
                   attrs={"scale": 2.0})
    assert r.rc == 0, r.stderr + str(r.violations)
    assert "std 256" in r.report.get("kernel_printf", ""), r.report.get("kernel_printf")


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


# A tiling header that carries its own host helpers (KiaraStark/ascendc-homework's SoftMax): CANN's kernel build reads
# only the tiling data's definition from it, the emulator's kernel translation unit includes all of it, so the host
# tiling APIs it calls (ge::Shape, AscendC::SoftMaxTilingFunc) must compile there too.
TILING_WITH_HELPERS = r"""
#include "register/tilingdata_base.h"
#include "tiling/tiling_api.h"
namespace optiling {
BEGIN_TILING_DATA_DEF(HelperTilingData)
  TILING_DATA_FIELD_DEF(uint32_t, length);
  TILING_DATA_FIELD_DEF_STRUCT(SoftMaxTiling, softmaxTilingData);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(HelperCustom, HelperTilingData)
}
namespace HelperTiling {
inline void Compute(uint32_t rows, uint32_t cols, optiling::HelperTilingData& tiling) {
    tiling.set_length(rows * cols);
    ge::Shape shape({rows, cols});
    AscendC::SoftMaxTilingFunc(shape, sizeof(float), 61440, tiling.softmaxTilingData);
}
}
"""

HELPER_HOST = r"""
#include "helper_custom_tiling.h"
#include "register/op_def_registry.h"
namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext* context) {
    HelperTilingData tiling;
    const auto& s = context->GetInputShape(0)->GetStorageShape();
    HelperTiling::Compute(s.GetDim(0), s.GetDim(1), tiling);
    context->SetBlockDim(1);
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
    return ge::GRAPH_SUCCESS;
}
}
namespace ops {
class HelperCustom : public OpDef {
public:
    explicit HelperCustom(const char* name) : OpDef(name) {
        this->Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->Output("y").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->AICore().SetTiling(optiling::TilingFunc);
        this->AICore().AddConfig("ascend910b");
    }
};
OP_ADD(HelperCustom);
}
"""

# Device code as community kernels write it: GetSysWorkSpacePtr and min unqualified without a using-directive
# (CANN declares the former globally; its own examples call min unqualified), AscendC::DEFAULT_C0_SIZE, and a CO2
# queue kept from the pre-A2 cube path but never used (CANN allocates it from its GM pool).
HELPER_KERNEL = r"""
#include "kernel_operator.h"
extern "C" __global__ __aicore__ void helper_custom(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
    GET_TILING_DATA(t, tiling);
    const uint32_t n = min(t.length, 256u);
    const bool ws = GetSysWorkSpacePtr() == nullptr;
    AscendC::GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float*)x, n);
    yg.SetGlobalBuffer((__gm__ float*)y, n);
    AscendC::TPipe pipe;
    AscendC::TQue<AscendC::TPosition::CO2, 1> unused;
    pipe.InitBuffer(unused, 1, 1024);
    AscendC::TBuf<AscendC::TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, n * sizeof(float));
    AscendC::LocalTensor<float> v = buf.Get<float>();
    AscendC::DataCopy(v, xg, n);
    AscendC::PipeBarrier<PIPE_ALL>();
    AscendC::Muls(v, v, static_cast<float>(AscendC::DEFAULT_C0_SIZE / 32 + (ws ? 1 : 1)), n);
    AscendC::PipeBarrier<PIPE_ALL>();
    AscendC::DataCopy(yg, v, n);
}
"""


def test_a_tiling_header_with_host_helpers_and_community_device_spellings(sim, tmp_path):
    exe = sim.op_project(tmp_path, op="HelperCustom", kernel_name="helper_custom", kernel_src=HELPER_KERNEL,
                         host_src=HELPER_HOST, tiling_src=TILING_WITH_HELPERS, tiling_header="helper_custom_tiling.h",
                         dtypes={"x": "float", "y": "float"}, label="community_helpers")
    x = np.linspace(-1, 1, 256, dtype=np.float32)
    r = sim.run_op(exe, tmp_path, "HelperCustom", [("x", x.reshape(8, 32))], [("y", (8, 32), np.float32)])
    assert r.rc == 0 and not r.rules("error"), r.stderr + str(r.violations)
    np.testing.assert_array_equal(r.outputs["y"].reshape(-1), x * 2)
    co2 = [v for v in r.violations if "CO2" in v["message"]]
    assert co2 and co2[0]["severity"] == "warning", r.violations


def test_a_used_co2_queue_is_refused(sim, tmp_path):
    kernel = HELPER_KERNEL.replace("    pipe.InitBuffer(unused, 1, 1024);\n",
                                   "    pipe.InitBuffer(unused, 1, 1024);\n"
                                   "    AscendC::LocalTensor<float> c2 = unused.AllocTensor<float>();\n")
    exe = sim.op_project(tmp_path, op="HelperCustom", kernel_name="helper_custom", kernel_src=kernel,
                         host_src=HELPER_HOST, tiling_src=TILING_WITH_HELPERS, tiling_header="helper_custom_tiling.h",
                         dtypes={"x": "float", "y": "float"}, label="community_co2_used")
    r = sim.run_op(exe, tmp_path, "HelperCustom", [("x", np.ones((8, 32), np.float32))], [("y", (8, 32), np.float32)])
    assert "unsupported_api" in r.rules("fatal"), r.violations


MATMUL_CONFIG = r"""
#include "kernel_operator.h"
#include "lib/matmul_intf.h"
using namespace matmul;
// operator_contrib/HighPerfMatMul's spellings: an MDL config with its switches, the default callbacks, an L2 hint,
// AscendC::DivCeil on 32-bit values
template <typename T> __aicore__ inline int64_t DivCeil(int64_t a, int64_t b) { return (a + b - 1) / b; }
extern "C" __global__ __aicore__ void k(GM_ADDR a, GM_ADDR b, GM_ADDR c) {
    AscendC::GlobalTensor<half> g;
    g.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(a), 16);
    g.SetL2CacheHint(CacheMode::CACHE_MODE_DISABLE);
    uint64_t blocks = 10;
    uint64_t rounds = DivCeil(blocks, static_cast<uint64_t>(4));
    (void)rounds;
    typedef MatmulType<AscendC::TPosition::GM, CubeFormat::ND, half> aType;
    typedef MatmulType<AscendC::TPosition::GM, CubeFormat::ND, float> cType;
    constexpr static MatmulConfig MCFG_MDL = GetMDLConfig(false, false, 0, false, false, false, true);
    MatmulImpl<aType, aType, cType, cType, MCFG_MDL, MatmulCallBackFunc<nullptr, nullptr, nullptr>> mm;
    mm.SetSubBlockIdx(0);
    mm.SetHF32(true, 1);
}
"""


def test_the_matmul_api_spellings_of_a_high_performance_sample_compile(sim, tmp_path):
    (tmp_path / "k.cpp").write_text(MATMUL_CONFIG)
    sim._gxx(["-DEVK_SIM_KERNEL=1", "-fsyntax-only", "k.cpp"], cwd=tmp_path)
