"""`evokernel ascend import` on a kernel-launch sample (evokernel/ascend_launch_import.py): a kernel file and the
main() that launches it (CANN's CPU-debug branch: GmAlloc, ReadFile, ICPU_RUN_KF), as CANN's KernelLaunch samples
and the community code built from them are written. The sample below is written the way those are (a kernel
with its own parameter list, sizes fixed in its code, an NPU branch the emulator's build never compiles)."""
from pathlib import Path

import pytest

from evokernel.ascend_import import ImportError_, read_source
from evokernel.ascend_launch_import import find_launch_sample, import_sample
from evokernel.verifier.backends.ascend_sim.project import launch_arguments, parse_candidate, read_strings

KERNEL = r"""
#include "kernel_operator.h"
using namespace AscendC;
constexpr int32_t TOTAL_LENGTH = 4 * 256;
constexpr int32_t USE_CORE_NUM = 4;
constexpr int32_t BLOCK_LENGTH = TOTAL_LENGTH / USE_CORE_NUM;

class KernelScale {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR z, GM_ADDR tiling) {
        scale = reinterpret_cast<__gm__ float*>(tiling)[0];   // the tiling's first word, read by the scalar unit
        xGm.SetGlobalBuffer((__gm__ float*)x + BLOCK_LENGTH * GetBlockIdx(), BLOCK_LENGTH);
        zGm.SetGlobalBuffer((__gm__ float*)z + BLOCK_LENGTH * GetBlockIdx(), BLOCK_LENGTH);
        pipe.InitBuffer(buf, BLOCK_LENGTH * sizeof(float));
    }
    __aicore__ inline void Process() {
        LocalTensor<float> t = buf.Get<float>();
        DataCopy(t, xGm, BLOCK_LENGTH);
        PipeBarrier<PIPE_ALL>();
        Muls(t, t, scale, BLOCK_LENGTH);
        PipeBarrier<PIPE_ALL>();
        DataCopy(zGm, t, BLOCK_LENGTH);
    }
private:
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    GlobalTensor<float> xGm, zGm;
    float scale = 0;
};

extern "C" __global__ __aicore__ void scale_custom(GM_ADDR tiling, GM_ADDR x, GM_ADDR z) {
    KernelScale op;
    op.Init(x, z, tiling);
    op.Process();
}

#ifndef ASCENDC_CPU_DEBUG
void scale_custom_do(uint32_t blockDim, void* stream, uint8_t* tiling, uint8_t* x, uint8_t* z) {
    scale_custom<<<blockDim, nullptr, stream>>>(tiling, x, z);
}
#endif
"""

MAIN = r"""
#include "data_utils.h"
#ifndef ASCENDC_CPU_DEBUG
#include "acl/acl.h"
extern void scale_custom_do(uint32_t blockDim, void* stream, uint8_t* tiling, uint8_t* x, uint8_t* z);
#else
#include "tikicpulib.h"
extern "C" __global__ __aicore__ void scale_custom(GM_ADDR tiling, GM_ADDR x, GM_ADDR z);
#endif
extern void MakeTiling(uint8_t* buf);

static uint32_t Blocks() { return 4; }   // a static helper the tiling file defines too

int32_t main(int32_t argc, char* argv[]) {
    uint32_t blockDim = Blocks();
    size_t bytes = 4 * 256 * sizeof(float);
#ifdef ASCENDC_CPU_DEBUG
    uint8_t* tiling = (uint8_t*)AscendC::GmAlloc(32);
    uint8_t* x = (uint8_t*)AscendC::GmAlloc(bytes);
    uint8_t* z = (uint8_t*)AscendC::GmAlloc(bytes);
    MakeTiling(tiling);
    ReadFile("./input/input_x.bin", bytes, x, bytes);
    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    ICPU_RUN_KF(scale_custom, blockDim, tiling, x, z);
    WriteFile("./output/output_z.bin", z, bytes);
    AscendC::GmFree((void*)tiling);
    AscendC::GmFree((void*)x);
    AscendC::GmFree((void*)z);
#else
    const char* dev = std::getenv("ASCEND_DEVICE_ID");   // the NPU branch: never built by the emulator
    (void)dev;
#endif
    return 0;
}
"""

TILING = r"""
#include <cstring>
#include <fstream>
static uint32_t Blocks() { return 99; }
void MakeTiling(uint8_t* buf) {
    const float scale = 2.5f;
    std::memcpy(buf, &scale, sizeof(scale));
    (void)Blocks();
}
"""

GEN_DATA = """
import numpy as np
x = np.random.uniform(-1, 1, [4, 256]).astype(np.float32)
x.tofile("./input/input_x.bin")
(x * 2.5).astype(np.float32).tofile("./output/golden.bin")
"""

TASK = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * 2.5


def get_inputs():
    return [torch.rand(4, 256) * 2 - 1]


def get_init_inputs():
    return []
"""


def sample(root: Path) -> Path:
    d = root / "ScaleKernelInvocation"
    (d / "scripts").mkdir(parents=True)
    (d / "scale_custom.cpp").write_text(KERNEL)
    (d / "main.cpp").write_text(MAIN)
    (d / "scale_custom_tiling.cpp").write_text(TILING)
    (d / "scripts" / "gen_data.py").write_text(GEN_DATA)
    return d


def test_a_kernel_launch_sample_becomes_a_candidate_with_its_files_unchanged(tmp_path):
    d = sample(tmp_path)
    p, text = import_sample(tmp_path)
    assert p.op == "ScaleCustom" and p.embedded
    strings = read_strings(text)
    assert strings["kernel_src"] == KERNEL  # byte for byte
    for f in p.embedded["host_operator_src"]:  # main.cpp and the tiling file, byte for byte after the prelude
        assert read_source(f) in strings["host_operator_src"]
    assert {f.name for f in p.embedded["host_operator_src"]} == {"main.cpp", "scale_custom_tiling.cpp"}
    # the json: the kernel's tensor parameters, read (input) or written (output) by main(); the tiling parameter
    # is neither; float32 from the kernel's (__gm__ float*) casts
    assert [x["name"] for x in p.desc["input_desc"]] == ["x"] and [x["name"] for x in p.desc["output_desc"]] == ["z"]
    assert p.desc["input_desc"][0]["type"] == ["float"]
    project = parse_candidate(text)
    assert project.launch_args == [("tiling", 0), ("input", 0), ("output", 0)]
    assert project.kernel_symbol == "evk_launch_scale_custom"
    # the static helper both files define is renamed in the tiling file's copy (two translation units on CANN)
    assert "#define Blocks Blocks_scale_custom_tiling" in strings["host_operator_src"]
    assert d.exists()


def test_the_rules_read_the_code_the_emulator_builds(tmp_path):
    """The NPU branch (getenv of the device id) is not built by ascend-sim; `#include <fstream>` alone opens
    nothing: the candidate passes ascend-sim's static rules. A device build (the ascend backend) sees all."""
    from evokernel.verifier.backends.ascend_sim.backend import static_check_project

    sample(tmp_path)
    _, text = import_sample(tmp_path)
    assert static_check_project(text, sim=True) == []


def test_it_runs_on_the_emulator_as_its_main_launches_it(tmp_path, ascend_verifier):
    """The TilingFunc runs main()'s CPU-debug branch: 4 blocks, the tiling bytes MakeTiling wrote (the scale),
    then the kernel on the verifier's tensors through the adapter that orders its own parameters."""
    from evokernel.tasks.load import load_task

    sample(tmp_path)
    _, text = import_sample(tmp_path)
    (tmp_path / "task.py").write_text(TASK)
    v = ascend_verifier.verify(load_task(tmp_path / "task.py"), text)
    assert v.feasible, v.feedback
    assert "4 block(s)" in v.details["profile"]
    # the launch's 32 tiling bytes are main()'s own: no registered class to disagree with them
    assert not [w for w in v.details.get("emulator_warnings") or [] if "tiling_size" in str(w)]


def test_a_task_of_other_sizes_is_told_the_samples_sizes(tmp_path, ascend_verifier):
    from evokernel.tasks.load import load_task

    sample(tmp_path)
    _, text = import_sample(tmp_path)
    (tmp_path / "task.py").write_text(TASK.replace("torch.rand(4, 256)", "torch.rand(8, 256)"))
    v = ascend_verifier.verify(load_task(tmp_path / "task.py"), text)
    assert not v.feasible and "its sizes are fixed in its code" in v.feedback


def test_what_cannot_be_imported_is_said(tmp_path):
    d = sample(tmp_path)
    (d / "main.cpp").write_text(MAIN.replace('ReadFile("./input/input_x.bin", bytes, x, bytes);', ""))
    with pytest.raises(ImportError_, match="neither read from a file"):
        find_launch_sample(tmp_path)
    (d / "main.cpp").write_text(MAIN)
    (d / "scale_custom.cpp").write_text(KERNEL.replace("(__gm__ float*)x", "(__gm__ T*)x"))
    (d / "scripts" / "gen_data.py").unlink()
    with pytest.raises(ImportError_, match="dtypes of x"):
        find_launch_sample(tmp_path)
    assert find_launch_sample(tmp_path, {"x": "float"}).desc["input_desc"][0]["type"] == ["float"]
    with pytest.raises(ImportError_, match="no kernel-launch sample found"):
        find_launch_sample(tmp_path / "scripts")


def test_launch_arguments_by_name_and_an_op_project_kernel_by_position():
    from evokernel.verifier.backends.ascend_sim.project import Param

    ins, outs = [Param("x", ["float"])], [Param("z", ["float"])]
    assert launch_arguments(["x", "z", "workspace", "tiling"], ins, outs) is None  # CANN's positional call
    assert launch_arguments(["a", "b", "ws", "t"], ins, outs) is None
    assert launch_arguments(["z", "x"], ins, outs) == [("output", 0), ("input", 0)]
    assert launch_arguments(["x", "z", "usrWorkspace"], ins, outs) == [("input", 0), ("output", 0), ("workspace", 0)]
    # names that do not describe the json: by position, as before (the run then says what goes wrong)
    assert launch_arguments(["x", "y"], ins, outs) is None
    assert launch_arguments(["x", "tiling", "workspace"], ins, outs + [Param("w", ["float"])]) is None
    assert launch_arguments(["x", "x", "z"], ins, outs) is None
