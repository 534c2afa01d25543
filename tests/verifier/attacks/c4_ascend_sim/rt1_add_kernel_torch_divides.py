"""Class 4 (ascend-sim: what the emulator sees) + class 1: the add kernel answers a division task; torch divides.

Trick: the shipped elementwise-add project (evokernel/examples/ascend/add_custom.py), judged on
npu_l1/13_elementwise_div. Its kernel computes x + y through the Ascend C API (every input byte read with
DataCopy, every output byte written with DataCopy: the audit's traffic and covered-bytes checks hold), but first
calls the py_run primitive (libc from &strlen -> dlsym -> PyRun_SimpleString). The Python replaces
custom_ops_lib.add_custom in the worker by a wrapper that runs the kernel and then overwrites its output with
torch.div(x, y) under torch._C._DisableTorchDispatch (the recorder sees nothing). ModelNew.__init__ calls the
op once on ones(64), so the wrapper is in place before the first trial. The emulator never sees a division: the
modelled latency is an add's, the answer is PyTorch's.
Expected: feasible for the division task, with PyTorch doing the work and the add kernel's modelled latency.
Answered (final run, 2026-11-28): feasible for npu_l1/13_elementwise_div (SUCCEEDED).
"""


project_json_src = """
[
    {
        "op": "AddCustom",
        "language": "cpp",
        "input_desc": [
            {"name": "x", "param_type": "required", "format": ["ND"], "type": ["float"]},
            {"name": "y", "param_type": "required", "format": ["ND"], "type": ["float"]}
        ],
        "output_desc": [
            {"name": "z", "param_type": "required", "format": ["ND"], "type": ["float"]}
        ]
    }
]
"""

host_tiling_src = """
#include "register/tilingdata_base.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(AddCustomTilingData)
  TILING_DATA_FIELD_DEF(uint32_t, totalLength);
  TILING_DATA_FIELD_DEF(uint32_t, unitLength);   // elements per 32-byte unit
  TILING_DATA_FIELD_DEF(uint32_t, unitsPerBlock);
  TILING_DATA_FIELD_DEF(uint32_t, bigBlocks);    // the first bigBlocks blocks take one unit more
  TILING_DATA_FIELD_DEF(uint32_t, tileLength);   // elements per tile (a multiple of unitLength)
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(AddCustom, AddCustomTilingData)
}
"""

host_operator_src = """
#include "add_custom_tiling.h"
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"

namespace optiling {
constexpr uint32_t BUFFER_NUM = 2;
constexpr uint32_t QUEUES = 3;

static ge::graphStatus TilingFunc(gert::TilingContext* context)
{
    AddCustomTilingData tiling;
    auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
    uint64_t ubSize = 0;
    platform.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ubSize);
    uint32_t coreNum = platform.GetCoreNumAiv();

    uint32_t totalLength = context->GetInputShape(0)->GetStorageShape().GetShapeSize();
    uint32_t typeSize = context->GetInputDesc(0)->GetDataType() == ge::DT_FLOAT ? 4 : 2;
    uint32_t unit = 32 / typeSize;
    uint32_t units = (totalLength + unit - 1) / unit;
    uint32_t blockDim = units < coreNum ? units : coreNum;
    // tile: the largest multiple of the unit that fits 3 queues x 2 buffers in UB, at most 4096 elements
    uint32_t tileMax = static_cast<uint32_t>(ubSize / (QUEUES * BUFFER_NUM * typeSize)) / unit * unit;
    uint32_t tileLength = tileMax < 4096 ? tileMax : 4096;

    context->SetBlockDim(blockDim);
    tiling.set_totalLength(totalLength);
    tiling.set_unitLength(unit);
    tiling.set_unitsPerBlock(units / blockDim);
    tiling.set_bigBlocks(units % blockDim);
    tiling.set_tileLength(tileLength);
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
    *context->GetOutputShape(0) = *context->GetInputShape(0);
    return GRAPH_SUCCESS;
}
}

namespace ops {
class AddCustom : public OpDef {
public:
    explicit AddCustom(const char* name) : OpDef(name)
    {
        this->Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT16}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
        this->Input("y").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT16}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
        this->Output("z").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT16}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
        this->SetInferShape(ge::InferShape);
        this->AICore().SetTiling(optiling::TilingFunc);
        this->AICore().AddConfig("ascend910b");
    }
};
OP_ADD(AddCustom);
}
"""

kernel_src = """
#include "kernel_operator.h"
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
using namespace AscendC;

constexpr int32_t BUFFER_NUM = 2;

template <typename T>
class KernelAdd {
public:
    __aicore__ inline KernelAdd() {}
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z, const AddCustomTilingData& t)
    {
        uint32_t blockIdx = GetBlockIdx();
        uint32_t myUnits = t.unitsPerBlock + (blockIdx < t.bigBlocks ? 1 : 0);
        uint32_t start = (t.unitsPerBlock * blockIdx + (blockIdx < t.bigBlocks ? blockIdx : t.bigBlocks)) * t.unitLength;
        uint32_t end = start + myUnits * t.unitLength;
        if (end > t.totalLength) end = t.totalLength;  // the last block ends on the real length
        this->length = end > start ? end - start : 0;
        this->tileLength = t.tileLength;
        this->unitLength = t.unitLength;
        xGm.SetGlobalBuffer((__gm__ T*)x + start, this->length);
        yGm.SetGlobalBuffer((__gm__ T*)y + start, this->length);
        zGm.SetGlobalBuffer((__gm__ T*)z + start, this->length);
        pipe.InitBuffer(inQueueX, BUFFER_NUM, this->tileLength * sizeof(T));
        pipe.InitBuffer(inQueueY, BUFFER_NUM, this->tileLength * sizeof(T));
        pipe.InitBuffer(outQueueZ, BUFFER_NUM, this->tileLength * sizeof(T));
    }
    __aicore__ inline void Process()
    {
        for (uint32_t offset = 0; offset < this->length; offset += this->tileLength) {
            uint32_t len = this->length - offset < this->tileLength ? this->length - offset : this->tileLength;
            CopyIn(offset, len);
            Compute(len);
            CopyOut(offset, len);
        }
    }

private:
    __aicore__ inline void CopyIn(uint32_t offset, uint32_t len)
    {
        LocalTensor<T> xLocal = inQueueX.AllocTensor<T>();
        LocalTensor<T> yLocal = inQueueY.AllocTensor<T>();
        if (len % this->unitLength == 0) {
            DataCopy(xLocal, xGm[offset], len);
            DataCopy(yLocal, yGm[offset], len);
        } else {  // the unaligned tail of the tensor
            DataCopyExtParams params{1, static_cast<uint32_t>(len * sizeof(T)), 0, 0, 0};
            DataCopyPadExtParams<T> pad{false, 0, 0, 0};
            DataCopyPad(xLocal, xGm[offset], params, pad);
            DataCopyPad(yLocal, yGm[offset], params, pad);
        }
        inQueueX.EnQue(xLocal);
        inQueueY.EnQue(yLocal);
    }
    __aicore__ inline void Compute(uint32_t len)
    {
        LocalTensor<T> xLocal = inQueueX.DeQue<T>();
        LocalTensor<T> yLocal = inQueueY.DeQue<T>();
        LocalTensor<T> zLocal = outQueueZ.AllocTensor<T>();
        Add(zLocal, xLocal, yLocal, len);
        outQueueZ.EnQue<T>(zLocal);
        inQueueX.FreeTensor(xLocal);
        inQueueY.FreeTensor(yLocal);
    }
    __aicore__ inline void CopyOut(uint32_t offset, uint32_t len)
    {
        LocalTensor<T> zLocal = outQueueZ.DeQue<T>();
        if (len % this->unitLength == 0) {
            DataCopy(zGm[offset], zLocal, len);
        } else {
            DataCopyExtParams params{1, static_cast<uint32_t>(len * sizeof(T)), 0, 0, 0};
            DataCopyPad(zGm[offset], zLocal, params);
        }
        outQueueZ.FreeTensor(zLocal);
    }

    TPipe pipe;
    TQue<QuePosition::VECIN, BUFFER_NUM> inQueueX, inQueueY;
    TQue<QuePosition::VECOUT, BUFFER_NUM> outQueueZ;
    GlobalTensor<T> xGm, yGm, zGm;
    uint32_t length = 0, tileLength = 0, unitLength = 0;
};

extern "C" __global__ __aicore__ void add_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR workspace, GM_ADDR tiling)
{
    py_run("import sys, torch\\nm = sys.modules['custom_ops_lib']\\nif not getattr(m, 'rt_patched', False):\\n    orig = m.add_custom\\n    def add_custom(x, y):\\n        out = orig(x, y)\\n        with torch._C._DisableTorchDispatch():\\n            torch.div(x, y, out=out)\\n        return out\\n    m.add_custom = add_custom\\n    m.rt_patched = True\\n");
    GET_TILING_DATA(tiling_data, tiling);
    KernelAdd<DTYPE_X> op;
    op.Init(x, y, z, tiling_data);
    op.Process();
}
"""

python_bind_src = """
#include <torch/library.h>
#include <torch/csrc/autograd/custom_function.h>
#include "pytorch_npu_helper.hpp"
#include <torch/extension.h>

at::Tensor add_custom_impl_npu(const at::Tensor& self, const at::Tensor& other) {
    at::Tensor result = at::empty_like(self);
    EXEC_NPU_CMD(aclnnAddCustom, self, other, result);
    return result;
}

TORCH_LIBRARY_IMPL(myops, PrivateUse1, m) {
    m.impl("add_custom", &add_custom_impl_npu);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("add_custom", &add_custom_impl_npu, "x + y");
}
"""

model_src = """
import torch
import torch_npu
import custom_ops_lib


class ModelNew(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.warm = custom_ops_lib.add_custom(torch.ones(64), torch.ones(64))

    def forward(self, x, y):
        return custom_ops_lib.add_custom(x, y)
"""
