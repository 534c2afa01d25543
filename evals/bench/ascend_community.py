"""Ascend C as the community writes it: operators nobody here wrote, run unchanged on ascend-sim.

Each entry is an operator from a public repository (competition entries, course homework, personal operator
collections, Ascend's contributed samples), read at a pinned commit from a mirror of that repository and
never copied here. Op projects go through `evokernel ascend import` (sources byte for byte; json, binding and
ModelNew generated when the project lacks them) and the verifier, against a PyTorch reference written here
at sizes the operator's tiling is written for. Kernel-launch programs go through
`evals/ascend_launch_samples.py` (kernel file unchanged, its ACL main() replaced by the emulator's launcher).

    python -m evokernel.evals.bench.ascend_community [--mirrors DIR] [--only NAME ...] [--json OUT]
    python -m evokernel.evals.bench.ascend_community --pin      # (re)write evals/bench/ascend_community_pins.json

Mirrors: ``DIR/<owner>+<name>/repo`` (bare or with a work tree), as the workplace's fetch leaves them;
default ``$EVOKERNEL_COMMUNITY_MIRRORS`` or ``/work/.mirror``. Every source read is checked against the
sha256 pinned in ``ascend_community_pins.json``: a changed file is an error, not a silent new row.

The table (docs/ascend-sim.md, "Community operators"): operator, source, API, outcome, edits (none),
modelled latency, and for every failure its class: emulator gap, stricter than CANN, harness, or a real bug
in the operator (with the line).
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PINS = Path(__file__).with_name("ascend_community_pins.json")
DEFAULT_MIRRORS = Path("/work/.mirror")

# repository -> the commit every file is read at
REPOS = {
    "hansheng1001/AscendCContest": "4904517a3365ea5c441ca5832ed1562939411e47",
    "linnlh/ascendc-competition-s3": "04c0c97dc5623053fefc585786697a8c19b9504a",
    "xsh20021105/AscendC-S3": "b863fdcb2fd9fa30ec90a185de20c13d43fc457c",
    "KiaraStark/ascendc-homework": "1ffb17c666b2ff44e027c2d8e16fe460807a9dfb",
    "Youshikawa/ascendC-S2": "61e00967069e91edbb6188bec76086d46369cbab",
    "JasperXzy/AscendC-S7": "6eb59d473f33ccba22103476635179f66a72180b",
    "A-Y-1/AscendC-S4": "fb57a6fb6eaf4d39b5c5988bd9b29709670872c4",
    "JeffDing/AscendC_Code": "7fee495a931889a9f81fdc90462525c18e0fbdcf",
    "EliwiiKeeya/my_operators_ascendc": "4b49a0148fc3bb19bb1f5047030fdad18d95b627",
    "By-gitee/opDev": "25e8db87c0d04ac2319f30abdaa90728175418c8",  # gitee.com/ascend/samples: operator_contrib
    "KernelHive/ascendc-skill": "c78f267d0423d59a51a02070e5bb845fde2dbd69",
    "ChengruiZhang/AscendC-MatMul-Basic": "26114d402352e4f30e940e2745b7f8b49adb2a90",
    "Golden-Irises/AscendC": "51743e0450bb739d69c40540cb9984a0fe6f1266",
    "wenyi1989/AscendC": "15ed32fd49d3d967555719a2569730a0bb56dfd9",
    "HWXROS/AscendcS7": "36e18f936bd73636651adec5aabce9b7dd1f1912",
    "linnlh/ascendc-perf-s2": "85a454d31f123b7add22e01fa675d418155d31b0",
    "chiparon/ascendC": "dfe4b84ef7d44d30f763e1b320340a1b2c94e05c",
    "bigorange1024/ascendc": "541ca73c1931f5d6d9cf34a18e9ad7f27b3437b5",
    "llrnb666-arch/HPC101-AscendC-FusedRMSNorm": "7729cdf7bc37d77bd3c82448414b77cea3e96637",
}


def task(body: str, inputs: str, init: str = "[]", header: str = "import torch\nimport torch.nn as nn\n") -> str:
    """A KernelBench task: ``body`` is forward's body (arguments: the names of ``inputs``' entries)."""
    names = [n.split("=")[0].strip() for n in inputs.split(";") if n.strip()]
    makers = [n.split("=", 1)[1].strip() for n in inputs.split(";") if n.strip()]
    return (header + "\n\nclass Model(nn.Module):\n    def __init__(self, *args):\n        super().__init__()\n"
            f"        self.args = args\n\n    def forward(self, {', '.join(names)}):\n"
            + textwrap.indent(textwrap.dedent(body).strip(), "        ") + "\n\n\n"
            f"def get_inputs():\n    torch.manual_seed(0)\n    return [{', '.join(makers)}]\n\n\n"
            f"def get_init_inputs():\n    return {init}\n")


@dataclass(frozen=True)
class Op:
    name: str
    repo: str
    path: str             # the op project (or the folder above it) in the repository
    api: str              # vector | cube | matmul-api
    ref: str              # the task's source (task(...))
    out_shape: str = ""   # the output's sizes for the generated binding when not the first input's
    expect: str = "feasible"  # or the gate a real bug in the operator fails at
    bug: str = ""         # for expect != feasible: the operator's line and what is wrong there
    note: str = ""
    kind: str = "project"  # or "launch": a kernel-launch sample (its kernel, main.cpp and tiling file)
    dtypes: str = ""      # kernel-launch samples: "name=dtype,..." where neither the kernel nor gen_data.py says


F32 = "torch.float32"
F16 = "torch.float16"


def rnd(shape: str, dtype: str = F32, lo: float = -1.0, hi: float = 1.0) -> str:
    return f"(torch.rand({shape}, dtype=torch.float32) * {hi - lo} + {lo}).to({dtype})"


HS = "hansheng1001/AscendCContest"
LN = "linnlh/ascendc-competition-s3"
XS = "xsh20021105/AscendC-S3"
KS = "KiaraStark/ascendc-homework"
YS = "Youshikawa/ascendC-S2"

OPS: list[Op] = [
    # --- elementwise and comparisons ---------------------------------------------------------------
    Op("hs_addcmul", HS, "01Addcmul/FrameworkLaunch/Addcmul", "vector",
       task("return input_data + value * x1 * x2",
            f"value=torch.tensor([0.5]); input_data={rnd('32, 1024')}; x1={rnd('32, 1024')}; x2={rnd('32, 1024')}"),
       out_shape="{input_data.sizes()}",
       expect="compile", bug='addcmul.cpp:465 reads the tiling field dataType, which addcmul_tiling.h does not define: it cannot build'),
    Op("hs_fast_gelu", HS, "02FastGelu/FrameworkLaunch/FastGelu", "vector",
       task("return x / (1 + torch.exp(-1.702 * x.abs())) * torch.exp(0.851 * (x - x.abs()))",
            f"x={rnd('32, 1024', lo=-4, hi=4)}")),
    Op("hs_fast_gelu_grad", HS, "03FastGeluGrad/FrameworkLaunch/FastGeluGrad", "vector",
       task("""
            a = x.abs(); e = torch.exp(-1.702 * a); ex = torch.exp(1.702 * (x - a))
            return dy * (e + 1.702 * x * e + ex) / (e + 1) ** 2""",
            f"dy={rnd('32, 1024')}; x={rnd('32, 1024', lo=-4, hi=4)}")),
    Op("hs_less_equal", HS, "04LessEqual/FrameworkLaunch/LessEqualV2", "vector",
       task("return x1 <= x2", f"x1={rnd('32, 1024')}; x2={rnd('32, 1024')}")),
    Op("hs_mse_loss", HS, "05MseLoss/FrameworkLaunch/MseLoss", "vector",
       task("return torch.mean((x - y) ** 2).reshape(1)", f"x={rnd('32, 1024')}; y={rnd('32, 1024')}"),
       out_shape="{1}"),
    Op("hs_mse_loss_grad", HS, "06MseLossGrad/FrameworkLaunch/MseLossGrad", "vector",
       task("return 2.0 * (predict - label) * x / predict.numel()",
            f"predict={rnd('32, 1024')}; label={rnd('32, 1024')}; x={rnd('32, 1024')}")),
    Op("hs_clip_by_value", HS, "07ClipByValue/FrameworkLaunch/ClipByValue", "vector",
       task("return torch.minimum(torch.maximum(x, minv), maxv)",
            f"x={rnd('32, 1024', lo=-2, hi=2)}; minv=torch.tensor([-0.5]); maxv=torch.tensor([0.75])")),
    Op("hs_lp_norm_v2", HS, "08LpNormV2/FrameworkLaunch/LpNormV2", "vector",
       task("return torch.linalg.vector_norm(x, 2).reshape(1)", f"x={rnd('32, 1024')}"), out_shape="{1}",
       note="p = 2 over all axes (its default axes {}), a reduction"),
    Op("hs_spence", HS, "09Spence/FrameworkLaunch/Spence", "vector",
       task("import scipy.special\nreturn torch.from_numpy(scipy.special.spence(x.double().numpy())).to(x.dtype)",
            f"x={rnd('32, 1024', lo=0.1, hi=4)}")),
    Op("ln_asinh", LN, "basic/asinh/asinh", "vector", task("return torch.asinh(x)", f"x={rnd('32, 1024', lo=-3, hi=3)}")),
    Op("ln_asinh_grad", LN, "basic/asinh_grad/asinh_grad", "vector",
       task("return dy / torch.cosh(y)", f"y={rnd('32, 1024', lo=-2, hi=2)}; dy={rnd('32, 1024')}")),
    Op("ln_div", LN, "basic/div/div", "vector",
       task("return x1 / x2", f"x1={rnd('32, 1024')}; x2={rnd('32, 1024', lo=0.5, hi=2)}")),
    Op("ln_not_equal", LN, "basic/not_equal/not_equal", "vector",
       task("return x1 != x2", f"x1=torch.randint(0, 3, (32, 1024)).float(); x2=torch.randint(0, 3, (32, 1024)).float()")),
    Op("ln_is_close", LN, "basic/is_close/is_close", "vector",
       task("return torch.isclose(x1, x2, rtol=1e-05, atol=1e-08)",
            "x1=torch.randint(0, 3, (32, 1024)).float(); x2=torch.randint(0, 3, (32, 1024)).float()"),
       note="integer-valued inputs, so about a third of the pairs are equal"),
    Op("ln_softmax", LN, "basic/softmax/softmax", "vector",
       task("return torch.softmax(x, -1)", f"x={rnd('64, 256', lo=-3, hi=3)}")),
    Op("ln_log_sum_exp", LN, "basic/logsum_exp/logsum_exp", "vector",
       task("return torch.logsumexp(x, 0)", f"x={rnd('64, 256', lo=-3, hi=3)}"), out_shape="{x.size(1)}",
       expect="correctness",
       bug="log_sum_exp.cpp:78 copies one float per 32-byte block (DataCopyPad without padding values, :178: 7 "
           "unspecified lanes after each) and :236 gathers with the pattern 0x80808080, which selects lane 7 of "
           "every 8 (GatherMask.md: bit i selects element i, pattern 3 = 0001 takes the first of four): the "
           "unspecified padding, not the data"),
    Op("ln_replication_pad2d", LN, "basic/replication_pad2d/replication_pad2d", "vector",
       task("return torch.nn.functional.pad(x, [int(v) for v in paddings.tolist()], mode='replicate')",
            f"x={rnd('2, 4, 16, 16')}; paddings=torch.tensor([1, 2, 3, 1], dtype=torch.int32)"),
       out_shape="{x.size(0), x.size(1), x.size(2) + 4, x.size(3) + 3}",
       expect="runtime", bug="op_host/replication_pad2d.cpp:32 reads GetInputTensor(1)->GetData() of 'paddings', which "
                             "its OpDef (:86) does not declare ValueDepend: CANN hands TilingFunc a nullptr data "
                             "address then (metadef docs/api/GetInputTensor: data only under a data dependency)"),
    Op("xs_softmax", XS, "01-Softmax", "vector", task("return torch.softmax(x, -1)", f"x={rnd('64, 256', lo=-3, hi=3)}"),
       expect="correctness", bug='softmax.cpp:45-51: Exp of the inputs without subtracting the row maximum: exp overflows for the heavy-input trial (NaN = inf/inf)'),
    Op("xs_not_equal", XS, "03-NotEqual", "vector",
       task("return x1 != x2", f"x1=torch.randint(0, 3, (32, 1024)).float(); x2=torch.randint(0, 3, (32, 1024)).float()"),
       expect="correctness", bug="not_equal.cpp:16-18: every block's GM tensors start at the tensor's start (no GetBlockIdx offset) and cover core_size + core_remain elements: with 12 blocks only the first 3200 of 32768 outputs are computed"),
    Op("xs_asinh", XS, "04-Asinh", "vector", task("return torch.asinh(x)", f"x={rnd('32, 1024', lo=-3, hi=3)}"),
       expect="correctness", bug='asinh.cpp computes sqrt(x*x + 1) in float: x*x overflows to inf for |x| > 1.8e19 (the heavy-input trial), where asinh is finite'),
    Op("xs_log_sum_exp", XS, "09-LogSumExp", "vector",
       task("return torch.logsumexp(x, 0)", f"x={rnd('64, 256', lo=-3, hi=3)}"), out_shape="{x.size(1)}",
       expect="correctness", bug='log_sum_exp.cpp:45-48: Ln(Sum(Exp(x))) without subtracting the maximum: exp overflows for the heavy-input trial'),
    Op("ks_softmax_custom", KS, "1_SoftMax/softmax", "vector",
       task("""
            m = x.max(-1, keepdim=True).values
            s = torch.exp(x - m).sum(-1, keepdim=True)
            return m.expand(-1, 8).contiguous(), s.expand(-1, 8).contiguous(), torch.softmax(x, -1)""",
            f"x={rnd('64, 256', lo=-3, hi=3)}"),
       out_shape="{x.size(0), 8};{x.size(0), 8};x.sizes()",
       note="three outputs (max, sum: the SoftMax API's 32-byte rows; z)"),
    Op("ks_div", KS, "Ascend_S3-main/02Div", "vector",
       task("return x1 / x2", f"x1={rnd('32, 1024')}; x2={rnd('32, 1024', lo=0.5, hi=2)}")),
    Op("ks_asinh_grad", KS, "Ascend_S3-main/05AsinhGrad", "vector",
       task("return dy / torch.cosh(y)", f"y={rnd('32, 1024', lo=-2, hi=2)}; dy={rnd('32, 1024')}")),
    Op("ks_replication_pad2d", KS, "Ascend_S3-main/10ReplicationPad2d", "vector",
       task("return torch.nn.functional.pad(x, [int(v) for v in paddings.tolist()], mode='replicate')",
            f"x={rnd('2, 4, 16, 16')}; paddings=torch.tensor([1, 2, 3, 1], dtype=torch.int32)"),
       out_shape="{x.size(0), x.size(1), x.size(2) + 4, x.size(3) + 3}"),
    Op("ys_gelu", YS, "ascends2/Gelu/Gelu", "vector",
       task("return torch.nn.functional.gelu(x, approximate='tanh')", f"x={rnd('32, 1024', lo=-3, hi=3)}"),
       expect="runtime", bug='gelu.cpp:368: blocks write overlapping output ranges with different values; gelu.cpp:304 reads a VECOUT buffer never written'),
    Op("ys_lerp", YS, "ascends2/Lerp/Lerp", "vector",
       task("return torch.lerp(start, end, weight)", f"start={rnd('32, 1024')}; end={rnd('32, 1024')}; weight={rnd('32, 1024', lo=0, hi=1)}")),
    Op("ys_xlogy", YS, "ascends2/xlogy", "vector",
       task("return torch.xlogy(x, y)", f"x={rnd('32, 1024')}; y={rnd('32, 1024', lo=0.1, hi=3)}"),
       expect="runtime", bug='xlogy.cpp:91/93: Duplicate/Compare over 12288 bytes of a 3072-byte TBuf (xlogy.cpp:39)'),
    Op("ys_tril", YS, "ascends2/Tril/Tril", "vector", task("return torch.tril(x)", f"x={rnd('64, 64')}")),
    Op("ys_triu", YS, "ascends2/Triu/Triu", "vector", task("return torch.triu(x)", f"x={rnd('64, 64')}")),
    Op("ys_global_avg_pool", YS, "ascends2/GlobalAvgPool/GlobalAvgPool", "vector",
       task("return x.mean(dim=(2, 3), keepdim=True)", f"x={rnd('2, 16, 8, 8')}"),
       out_shape="{x.size(0), x.size(1), 1, 1}",
       expect="runtime", bug='global_avg_pool.cpp:130: a 32-byte DataCopy past the end of the 128-byte output'),
    Op("jx_fmax", "JasperXzy/AscendC-S7", "Fmax", "vector",
       task("return torch.fmax(input, other)", f"input={rnd('32, 1024')}; other={rnd('32, 1024')}")),
    Op("ay_heaviside", "A-Y-1/AscendC-S4", "Heaviside", "vector",
       task("return torch.heaviside(input, values)",
            f"input=torch.randint(-2, 3, (32, 1024)).float(); values={rnd('32, 1024')}")),
    Op("jd_sinh", "JeffDing/AscendC_Code", "SinhCustomSample/FrameworkLaunch/SinhCustom", "vector",
       task("return torch.sinh(x)", f"x={rnd('8, 2048', F16, -2, 2)}"),
       expect="correctness", bug="sinh_custom.cpp:48-52: (Exp(x) - 1/Exp(x)) * 0.5 in half: Exp overflows to inf for "
                                 "|x| > 11.09 where sinh stays finite up to 11.78 (the heavy-input trial)"),
    Op("el_my_add", "EliwiiKeeya/my_operators_ascendc", "cann-opdev-classic/01_MyAddCustom", "vector",
       task("return a + b + c", f"a={rnd('8, 2048')}; b={rnd('8, 2048')}; c={rnd('8, 2048')}"),
       note="o = a + b + c; TBuf::AllocTensor/FreeTensor"),
    # --- the cube and the Matmul API -------------------------------------------------------------------
    Op("el_my_matmul", "EliwiiKeeya/my_operators_ascendc", "cann-opdev-classic/02_MyMatmulCustom", "matmul-api",
       task("return (a.float() @ b.float())", f"a={rnd('512, 512', F16)}; b={rnd('512, 1024', F16)}"),
       out_shape="{a.size(0), b.size(1)}"),
    Op("el_my_fusion", "EliwiiKeeya/my_operators_ascendc", "cann-opdev-classic/03_MyFusionCustom", "matmul-api",
       task("return a.float() @ b.float()", f"a={rnd('1024, 256', F16)}; b={rnd('256, 640', F16)}"),
       out_shape="{a.size(0), b.size(1)}", note="named a fusion; its kernel is the Matmul API's IterateAll alone"),
    Op("sp_high_perf_matmul", "By-gitee/opDev", "operator_contrib/HighPerfMatMul/FrameworkLaunch", "matmul-api",
       task("return a @ b", f"a={rnd('512, 512')}; b={rnd('512, 512')}; bias={rnd('512')}"),
       out_shape="{a.size(0), b.size(1)}",
       note="float in HF32 mode (SetHF32: not modelled, fp32 here); its golden ignores the bias input; 512^3 of its "
            "8192^3", expect="runtime",
       bug="below 100 MB of data (its own case is 8192^3 = 768 MB) the host leaves the tiling's mTile/nTile at 0 "
           "(SplitL2 runs only above, op_host/matmul_custom.cpp:307) and the kernel divides by them "
           "(op_kernel/matmul_custom.cpp:132): integer division by zero, and no tile of c is written"),
    Op("sp_high_perf_matmul_leaky", "By-gitee/opDev", "operator_contrib/MatmulLeakyReluCustom", "matmul-api",
       task("return a @ b", f"a={rnd('512, 512')}; b={rnd('512, 512')}; bias={rnd('512')}"),
       out_shape="{a.size(0), b.size(1)}", note="its golden is the plain product (LeakyRelu and bias commented out)",
       expect="runtime",
       bug="as HighPerfMatMul: below 100 MB of data mTile/nTile stay 0 (SplitL2 only above, "
           "op_host/matmul_leakyrelu_custom.cpp:342) and the kernel divides by them "
           "(op_kernel/matmul_leakyrelu_custom.cpp:143)"),
    Op("sp_printf_matmul", "By-gitee/opDev", "operator/ascendc/1_utilities/0_printf/FrameworkLaunch", "matmul-api",
       task("return (a.float() @ b.float() + bias.float())",
            f"a={rnd('1024, 256', F16)}; b={rnd('256, 640', F16)}; bias={rnd('640', F32)}"),
       out_shape="{a.size(0), b.size(1)}", note="printf in the kernel (CANN's debug print)"),
    Op("sp_assert_matmul", "By-gitee/opDev", "operator/ascendc/1_utilities/3_assert/FrameworkLaunch", "matmul-api",
       task("return (a.float() @ b.float() + bias.float())",
            f"a={rnd('1024, 256', F16)}; b={rnd('256, 640', F16)}; bias={rnd('640', F32)}"),
       out_shape="{a.size(0), b.size(1)}", note="assert in the kernel"),
    Op("kh_gemm", "KernelHive/ascendc-skill",
       "skills/ascend-kernel-generator/reference/ref_repositories/EvoKernel/ops-attention-910b/GEMMCustom", "cube",
       task("return (x.float() @ weight_t.float()).to(x.dtype)",
            f"x={rnd('256, 256', 'torch.bfloat16')}; weight_t={rnd('256, 256', 'torch.bfloat16')}"),
       out_shape="{x.size(0), weight_t.size(1)}",
       note="an all-caps acronym in the op name (GEMMCustom)"),
    # --- added in the second pass: more authors, the cube, kernel-launch samples ----------------------------
    Op("gi_matmad", "Golden-Irises/AscendC", "MatMadCustom", "matmul-api",
       task("return weight @ x + bias", f"weight={rnd('5, 12', lo=0.1, hi=15.6)}; x={rnd('12, 7', lo=1.1, hi=45.14)}; "
                                        f"bias={rnd('7', lo=1.9, hi=8.1)}"),
       out_shape="{weight.size(0), x.size(1)}", note="float Matmul API at its test case's 5 x 12 x 7, with bias"),
    Op("gi_vec_add", "Golden-Irises/AscendC", "VecAddFl32", "vector",
       task("return x + y", f"x={rnd('1024', lo=0.01, hi=114.51)}; y={rnd('1024', lo=1.14, hi=51.14)}"),
       note="at 1024 elements; at its test cases' 98 and 998 it copies 32-byte blocks past the tensors' ends "
            "(vec_add.cpp:50/51/66)"),
    Op("gi_pool_avg", "Golden-Irises/AscendC", "PoolAvgCustom", "vector",
       task("return x.reshape(x.size(0), -1, int(pool_size[0])).mean(-1)",
            f"x={rnd('6, 27', lo=1.14, hi=51.4)}; pool_size=torch.tensor([9], dtype=torch.int32)"),
       out_shape="{x.size(0), x.size(1) / 9}", note="pool size as an int32 tensor input; the output's width fixed "
                                                    "to its test case's 27 / 9 in the binding"),
    Op("gi_caffe2d", "Golden-Irises/AscendC", "Caffe2DCustom", "vector",
       task("""
            H, W = x.shape; kh, kw = kernel.shape; s = int(stride[0])
            rows = []
            for r in range(((H - kh) // s + 1) * ((W - kw) // s + 1)):
                i0, j0 = divmod(r, (W - kw) // s + 1)
                base = i0 * s * W + j0 * s
                rows.append([base + i * W + j for i in range(kh) for j in range(kw)])
            return torch.tensor(rows, dtype=torch.int32)""",
            f"x={rnd('6, 8', lo=0.11, hi=11.4)}; kernel={rnd('4, 4', lo=0.1, hi=1)}; "
            "stride=torch.tensor([2], dtype=torch.int32)"),
       out_shape="{6, 16}", note="im2col indices of a 2-D input (int32 output)"),
    Op("gi_caffe3d", "Golden-Irises/AscendC", "Caffe3DCustom", "vector",
       task("""
            C, H, W = x.shape; kh, kw = kernel.shape; s = int(stride[0])
            rows = []
            for r in range(((H - kh) // s + 1) * ((W - kw) // s + 1)):
                i0, j0 = divmod(r, (W - kw) // s + 1)
                base = i0 * s * W + j0 * s
                rows.append([base + c * H * W + i * W + j for c in range(C) for i in range(kh) for j in range(kw)])
            return torch.tensor(rows, dtype=torch.int32)""",
            f"x={rnd('3, 5, 7', lo=1.14, hi=51.4)}; kernel={rnd('3, 3', lo=0.1, hi=1)}; "
            "stride=torch.tensor([2], dtype=torch.int32)"),
       out_shape="{6, 27}", note="im2col indices of a C x H x W input, written with scalar GM stores"),
    Op("wy_lerp", "wenyi1989/AscendC", "Lerp", "vector",
       task("return torch.lerp(start, end, weight)",
            f"start={rnd('32, 1024')}; end={rnd('32, 1024')}; weight={rnd('32, 1024', lo=0, hi=1)}")),
    Op("wy_xlogy", "wenyi1989/AscendC", "Xlogy", "vector",
       task("return torch.xlogy(x1, x2)", f"x1={rnd('32, 1024')}; x2={rnd('32, 1024', lo=0.1, hi=3)}"),
       expect="runtime", bug="xlogy.cpp:62: Compare over 4912 elements (19648 bytes): the count form needs a multiple of 256 bytes (Compare's documented granularity)"),
    Op("wy_tril", "wenyi1989/AscendC", "Tril", "vector", task("return torch.tril(x)", f"x={rnd('64, 64')}")),
    Op("wy_triu", "wenyi1989/AscendC", "Triu/FrameworkLaunch", "vector", task("return torch.triu(x)", f"x={rnd('64, 64')}")),
    Op("wy_global_avg_pool", "wenyi1989/AscendC", "GlobalAvgPool-02", "vector",
       task("return x.mean(dim=(2, 3), keepdim=True)", f"x={rnd('2, 16, 8, 8')}"),
       out_shape="{x.size(0), x.size(1), 1, 1}",
       expect="runtime", bug='global_avg_pool.cpp:24-40: five buffers of a quarter of the UB each (the size it reads from GetCoreMemSize): more than the UB holds on any part'),
    Op("wy_three_nn", "wenyi1989/AscendC", "ThreeNN-02", "vector",
       task("""
            d = ((xyz1[:, :, None, :] - xyz2[:, None, :, :]) ** 2).sum(-1)
            dist, idx = torch.topk(d, 3, dim=-1, largest=False, sorted=True)
            return dist, idx.to(torch.int32)""", f"xyz1={rnd('2, 64, 3')}; xyz2={rnd('2, 32, 3')}"),
       out_shape="{xyz1.size(0), xyz1.size(1), 3}", note="two outputs (squared distances, int32 indices)"),
    Op("hx_fmax", "HWXROS/AscendcS7", "Fmax", "vector",
       task("return torch.fmax(x, y)", f"x={rnd('32, 1024')}; y={rnd('32, 1024')}")),
    Op("hx_pdist_grad", "HWXROS/AscendcS7", "PdistGrad", "vector",
       task("""
            with torch.enable_grad():
                x = input.detach().clone().requires_grad_(True)
                torch.nn.functional.pdist(x, p=self.args[0]).backward(grad)
            return x.grad""",
            f"grad={rnd('3')}; input=_x(); pdist_output=torch.nn.functional.pdist(_x(), p=2.0)", init="[2.0]",
            header="import torch\nimport torch.nn as nn\n\n\ndef _x():\n    torch.manual_seed(1)\n"
                   f"    return {rnd('3, 32', lo=-1000, hi=1000)}\n"),
       out_shape="input.sizes()", note="its test case's 3 x 32; the attribute p has no default", expect="runtime",
       bug="pdist_grad.cpp:135-136 call GetWithOffset(0, currentBlockSize): the arguments are (size, bufOffset), so "
           "the tensors start 32 bytes in and Muls at :140 writes 32 bytes past the 128-byte gradBuf (:44)"),
    Op("lp_depth_to_space", "linnlh/ascendc-perf-s2", "DepthToSpace", "vector",
       task("""
            n, h, w, c = x.shape; b = self.args[0]
            return x.reshape(n, h, w, b, b, c // (b * b)).permute(0, 1, 3, 2, 4, 5).reshape(n, h * b, w * b, c // (b * b))""",
            f"x={rnd('2, 8, 8, 32')}", init="[2]"),
       out_shape="{x.size(0), x.size(1) * 2, x.size(2) * 2, x.size(3) / 4}", note="NHWC, DCR mode, block size 2"),
    Op("lp_group_norm_v2", "linnlh/ascendc-perf-s2", "GroupNormV2", "vector",
       task("""
            n, c = x.shape[:2]; g = self.args[0]; eps = 1e-4
            xg = x.reshape(n, g, -1)
            mean = xg.mean(-1); var = xg.var(-1, unbiased=False); rstd = 1 / torch.sqrt(var + eps)
            y = ((xg - mean[..., None]) * rstd[..., None]).reshape(x.shape) * gamma[None, :, None, None] + beta[None, :, None, None]
            return y, mean, rstd""",
            f"x={rnd('2, 32, 8, 8')}; gamma={rnd('32')}; beta={rnd('32')}", init="[4]"),
       out_shape="x.sizes();{x.size(0), 4};{x.size(0), 4}", expect="correctness",
       bug="group_norm_v2.cpp:10-28, 80, 89 (the float path taken at :435): gamma and beta are never read (y is not "
           "scaled nor shifted) and the outputs mean and rstd are never written"),
    Op("lp_pdist", "linnlh/ascendc-perf-s2", "Pdist", "vector",
       task("return torch.nn.functional.pdist(x, p=2.0)", f"x={rnd('32, 64')}"),
       out_shape="{x.size(0) * (x.size(0) - 1) / 2}"),
    Op("ln_nll_loss", LN, "perf/nll_loss", "vector",
       task("return torch.nn.functional.nll_loss(x, target.long(), weight=weight, reduction='mean').reshape(1)",
            f"x={rnd('8, 32', lo=-5, hi=5)}; target=torch.randint(0, 31, (8,), dtype=torch.int32); "
            f"weight={rnd('32', lo=0, hi=1)}"),
       out_shape="{1}", note="its test case's 8 x 32; CreateVecIndex, DataCacheCleanAndInvalid, GetUserWorkspace",
       expect="runtime", bug="nll_loss.cpp:159: Gather(x, x, ...): CANN documents that Gather's source and destination must not be the same memory"),
    Op("ks_log_sum_exp", KS, "3_LogSumExp", "vector",
       task("return torch.logsumexp(x, 0)", f"x={rnd('64, 256', lo=-3, hi=3)}", init="[[0], False]"),
       out_shape="{x.size(1)}", note="dim = [0] (a ListInt attribute its json calls an int64)",
       expect="correctness", bug='log_sum_exp.cpp:82/56 (3_LogSumExp): Exp then Ln without subtracting the maximum: exp overflows for the heavy-input trial'),
    # kernel-launch samples (a kernel and the main() that launches it), through the same import
    Op("jd_sinh_launch", "JeffDing/AscendC_Code", "SinhCustomSample/KernelLaunch/SinhKernelInvocation", "vector",
       task("return torch.sinh(x)", f"x={rnd('8, 2048', F16, -2, 2)}"), kind="launch",
       expect="correctness", bug="sinh_custom.cpp:48-52 (its kernel-launch copy): Exp in half overflows to inf for "
                                 "|x| > 11.09 where sinh stays finite up to 11.78 (the heavy-input trial)"),
    Op("bo_add_launch", "bigorange1024/ascendc", "ascendc-tests/add_custom", "vector",
       task("return x + y", f"x={rnd('8, 2048', F16)}; y={rnd('8, 2048', F16)}"), kind="launch",
       note="its main() reads the device id from the environment in its NPU branch (not built here)"),
    Op("ks_layer_norm_launch", KS, "LayerNormCustomSample/KernelLaunch/LayerNormKernelInvocation", "vector",
       task("return torch.nn.functional.layer_norm(x, (x.size(-1),), gamma, beta, 1e-5)",
            f"x={rnd('16384, 1024', lo=-3, hi=3)}; gamma={rnd('1024')}; beta={rnd('1024')}"), kind="launch",
       note="its main()'s 16384 x 1024 (64 MiB of input)"),
    Op("cz_matmul_launch", "ChengruiZhang/AscendC-MatMul-Basic", "", "cube",
       task("return a.float() @ b.float()", f"a={rnd('64, 64', F16)}; b={rnd('64, 64', F16)}"),
       out_shape="{a.size(0), b.size(1)}", kind="launch",
       note="raw cube: ND2NZ by DataCopy, LoadData, Mmad, Fixpipe (two N halves)",
       expect="runtime", bug="matmul_custom.cpp:104-114 (SplitB): LoadData of kBlocks = 4 fractals per half of B, which at the 64 x 64 x 64 its main() uses needs 8: half of L0B is never written (right only at its README's 32 x 32)"),
    # the author's own optimisations of CANN's framework-launch Matmul samples (optimi-v1; baseline/ holds the
    # samples as shipped, not gathered here)
    Op("cp_matmul_multicore", "chiparon/ascendC", "optimi-v1/10_matmul_frameworklaunch/MatmulCustomMultiCore",
       "matmul-api", task("return a.float() @ b.float() + bias",
                          f"a={rnd('1024, 256', F16)}; b={rnd('256, 640', F16)}; bias={rnd('640')}"),
       out_shape="{a.size(0), b.size(1)}", note="the typed tiling struct (context->GetTilingData<T>())"),
    Op("cp_matmul_singlecore", "chiparon/ascendC", "optimi-v1/10_matmul_frameworklaunch/MatmulCustomSingleCore",
       "matmul-api", task("return a.float() @ b.float() + bias",
                          f"a={rnd('1024, 256', F16)}; b={rnd('256, 640', F16)}; bias={rnd('640')}"),
       out_shape="{a.size(0), b.size(1)}", note="base block sizes from the shape (or the environment)"),
    Op("cp_matmul_leakyrelu", "chiparon/ascendC", "optimi-v1/12_matmulleakyrelu_frameworklaunch/MatmulLeakyReluCustom",
       "matmul-api", task("c = a.float() @ b.float() + bias\nreturn torch.where(c >= 0, c, 0.001 * c)",
                          f"a={rnd('1024, 256', F16)}; b={rnd('256, 640', F16)}; bias={rnd('640')}"),
       out_shape="{a.size(0), b.size(1)}"),
    Op("ll_fused_add_rms_norm", "llrnb666-arch/HPC101-AscendC-FusedRMSNorm", "src/ascendc", "vector",
       task("""
            r = residual.float() + x.float()
            y = r / torch.sqrt((r * r).mean(-1, keepdim=True) + 1e-6) * weight.float()
            return y.half(), r.half()""",
            f"x={rnd('32, 1024', F16)}; residual={rnd('32, 1024', F16)}; weight={rnd('1024', F16, lo=0.01, hi=2)}"),
       out_shape="x.sizes();x.sizes()", note="a course lab (HPC101) for the 910B; two outputs (y, residual_out)"),
    Op("cp_matmul_leakyrelu_launch", "chiparon/ascendC",
       "13_matmulleakyrelu_kernellaunch/MatmulLeakyReluInvocation", "matmul-api",
       task("c = a.float() @ b.float() + bias\nreturn torch.where(c >= 0, c, 0.001 * c)",
            f"a={rnd('1024, 256', F16)}; b={rnd('256, 640', F16)}; bias={rnd('640')}"),
       out_shape="{a.size(0), b.size(1)}", kind="launch", note="its tiling file's GenerateTiling runs unchanged"),
    Op("cp_matmul_leakyrelu_async_launch", "chiparon/ascendC",
       "13_matmulleakyrelu_kernellaunch/MatmulLeakyReluInvocationAsync", "matmul-api",
       task("c = a.float() @ b.float() + bias\nreturn torch.where(c >= 0, c, 0.001 * c)",
            f"a={rnd('1024, 256', F16)}; b={rnd('256, 640', F16)}; bias={rnd('640')}"),
       out_shape="{a.size(0), b.size(1)}", kind="launch", note="asynchronous Iterate"),
    Op("cp_matmul_leakyrelu_v1_launch", "chiparon/ascendC",
       "13_matmulleakyrelu_kernellaunch/Optimized/v1_shape_parallel/MatmulLeakyReluInvocationAsync", "matmul-api",
       task("c = a.float() @ b.float() + bias\nreturn torch.where(c >= 0, c, 0.001 * c)",
            f"a={rnd('1024, 256', F16)}; b={rnd('256, 640', F16)}; bias={rnd('640')}"),
       out_shape="{a.size(0), b.size(1)}", kind="launch",
       note="the author's optimisation: shape-parallel multi-core tiling; sizes and cores from the environment"),
    Op("cp_matmul_leakyrelu_v2_launch", "chiparon/ascendC",
       "13_matmulleakyrelu_kernellaunch/Optimized/v2_algorithm/MatmulLeakyReluInvocationAsync", "matmul-api",
       task("c = a.float() @ b.float() + bias\nreturn torch.where(c >= 0, c, 0.001 * c)",
            f"a={rnd('1024, 256', F16)}; b={rnd('256, 640', F16)}; bias={rnd('640')}"),
       out_shape="{a.size(0), b.size(1)}", kind="launch", note="the author's second optimisation"),
]


def mirror_git(mirrors: Path, repo: str) -> Path:
    d = mirrors / repo.replace("/", "+") / "repo"
    return d / ".git" if (d / ".git").exists() else d


SOURCE_SUFFIXES = (".cpp", ".cc", ".h", ".hpp", ".json", ".py")


def extract(mirrors: Path, repo: str, path: str, dest: Path) -> Path:
    """``path`` of ``repo`` at its pinned commit under ``dest`` (git archive from the mirror)."""
    git = mirror_git(mirrors, repo)
    if not (git / "HEAD").exists():
        raise FileNotFoundError(f"no mirror of {repo} at {git.parent} (fetch it, or give --mirrors)")
    # the sources only (a snapshot may lack a repository's large binaries: build outputs, PDFs)
    listed = subprocess.run(["git", f"--git-dir={git}", "ls-tree", "-r", "--name-only", "-z", REPOS[repo], "--",
                             path or "."], capture_output=True, timeout=300)
    names = [n for n in listed.stdout.decode(errors="replace").split("\0")
             if n.endswith(SOURCE_SUFFIXES) and not set(n.split("/")) & {"build", "build_out"}]
    if listed.returncode != 0 or not names:
        raise RuntimeError(f"{repo}@{REPOS[repo][:12]}: no sources under {path!r}")
    out = subprocess.run(["git", f"--git-dir={git}", "archive", REPOS[repo], "--", *names], capture_output=True,
                         timeout=300)
    if out.returncode != 0:
        raise RuntimeError(f"git archive {repo}@{REPOS[repo][:12]} {path}: {out.stderr.decode(errors='replace')[-400:]}")
    with tarfile.open(fileobj=io.BytesIO(out.stdout)) as tar:
        tar.extractall(dest, filter="data")
    return dest / path


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def load_pins() -> dict[str, dict[str, str]]:
    return json.loads(PINS.read_text()) if PINS.exists() else {}


def check_op(op: Op, mirrors: Path, verifier: Any, workdir: Path, pins: dict[str, dict[str, str]] | None,
             ) -> dict[str, Any]:
    """Import the operator unchanged, verify it: one row."""
    from evokernel.ascend_import import ImportError_
    from evokernel.ascend_launch_import import import_sample
    from evokernel.tasks.load import load_task
    from evokernel.verifier.backends.ascend_sim.project import read_strings

    row: dict[str, Any] = {"operator": op.name, "repo": op.repo, "path": op.path, "api": op.api, "kind": op.kind,
                           "expected": op.expect, "bug": op.bug, "note": op.note}
    base = workdir / op.name
    src = extract(mirrors, op.repo, op.path, base / "src")
    dtypes = dict(kv.split("=", 1) for kv in op.dtypes.split(",") if kv) or None
    try:
        project, text = import_sample(src, base / "candidate.py", op.out_shape or None, dtypes)
    except ImportError_ as exc:
        row.update(verdict="import", feedback=[str(exc)[:300]], edits=None, latency_us=None)
        row["as_expected"] = op.expect == "import"
        return row
    row["import"] = "kernel-launch" if project.embedded else "op project"
    root = base / "src"
    files = {name: str(f.relative_to(root)) for name, f in project.files.items()}
    embedded = {name: [str(f.relative_to(root)) for f in fs] for name, fs in project.embedded.items()}
    digests = {rel: sha256(root / rel) for rel in [*files.values(), *(r for fs in embedded.values() for r in fs)]}
    row["files"], row["embedded"], row["sha256"] = files, embedded, digests
    # the SoCs the operator registers (AddConfig): the emulator models an Ascend 910B
    row["socs"] = sorted(set(re.findall(r'AddConfig\s*\(\s*"([^"]+)"', project.host)))
    if pins is not None:
        pinned = pins.get(op.name)
        if pinned is None or pinned != digests:
            raise RuntimeError(f"{op.name}: the sources read differ from the pinned sha256 (run --pin after checking "
                               f"them): {digests} vs {pinned}")
    strings = read_strings(text)
    from evokernel.ascend_import import read_source
    # edits: strings that differ from the file they came from, or do not hold a file they embed byte for byte
    row["edits"] = sum(strings[name] != read_source(f) for name, f in project.files.items()) + sum(
        read_source(f) not in strings[name] for name, fs in project.embedded.items() for f in fs)
    row["json_from_opdef"] = project.json_from_opdef
    (base / "task.py").write_text(op.ref)
    t0 = time.perf_counter()
    try:
        verdict = verifier.verify(load_task(base / "task.py"), text)
    except Exception as exc:  # a reference written here that fails: a harness error, said as such
        row.update(verdict="harness", feedback=[f"{type(exc).__name__}: {exc}"[:300]], latency_us=None,
                   as_expected=False, seconds=round(time.perf_counter() - t0, 1))
        return row
    row["verdict"] = "feasible" if verdict.feasible else verdict.failed_gate
    row["as_expected"] = row["verdict"] == op.expect
    row["latency_us"] = round((verdict.latency_ms or 0) * 1e3, 2) if verdict.feasible else None
    row["warnings"] = list(verdict.details.get("emulator_warnings") or [])
    row["feedback"] = verdict.feedback.splitlines()[:6]
    row["seconds"] = round(time.perf_counter() - t0, 1)
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirrors", type=Path, default=None, help="folder of the repositories' mirrors")
    ap.add_argument("--only", action="append", default=[], help="operator names to check (default: all)")
    ap.add_argument("--json", type=Path, default=None, help="write the rows here")
    ap.add_argument("--pin", action="store_true", help="record the sha256 of every file read (no check)")
    ap.add_argument("--markdown", type=Path, default=None, help="print the docs table of a run's --json rows, and stop")
    args = ap.parse_args(argv)
    if args.markdown:
        rows = json.loads(args.markdown.read_text())
        print(markdown(rows))
        print("\n".join(summary(rows)))
        return 0
    mirrors = args.mirrors or Path(os.environ.get("EVOKERNEL_COMMUNITY_MIRRORS", DEFAULT_MIRRORS))
    pins = None if args.pin else load_pins()
    tmp = Path(tempfile.mkdtemp(prefix="evk-ascend-community-"))
    from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

    rows = []
    with Verifier("ascend-sim", VerifyConfig(cache_dir=tmp / "cache", run_timeout_s=120.0)) as v:
        for op in OPS:
            if args.only and op.name not in args.only:
                continue
            try:
                r = check_op(op, mirrors, v, tmp, pins)
            except FileNotFoundError as exc:
                print(f"{op.name:28s} skipped: {exc}", flush=True)
                continue
            rows.append(r)
            lat = f"{r['latency_us']:.2f} us" if r.get("latency_us") is not None else "-"
            print(f"{op.name:28s} {op.api:10s} edits {r.get('edits')}  {r['verdict']:10s} "
                  f"{'as expected' if r['as_expected'] else 'NOT AS EXPECTED':15s} {lat:>11s}  "
                  f"{(r.get('feedback') or [''])[0][:150] if not r['as_expected'] else ''}", flush=True)
    if args.pin:
        old = load_pins()
        old.update({r["operator"]: r["sha256"] for r in rows if "sha256" in r})
        PINS.write_text(json.dumps(dict(sorted(old.items())), indent=1) + "\n")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    ok = [r for r in rows if r["as_expected"] and not r.get("edits")]
    print(f"{len(ok)} of {len(rows)} as expected with no edit to the operator's sources")
    for line in summary(rows):
        print(line)
    return 0 if len(ok) == len(rows) else 1


def markdown(rows: list[dict[str, Any]]) -> str:
    """The docs table (docs/ascend-sim.md, "Community operators") from a run's rows."""
    out = ["| operator | source | API | form | registered for | outcome | modelled latency | class, and where |",
           "|---|---|---|---|---|---|---:|---|"]
    for r in rows:
        lat = f"{r['latency_us']:.2f} us" if r.get("latency_us") is not None else "-"
        socs = ", ".join(s.replace("ascend", "") for s in r.get("socs") or []) or "any"
        if r["verdict"] == "feasible" and r["as_expected"]:
            cls = "runs unchanged and correct" + (f" ({r['note']})" if r.get("note") else "")
        elif r["expected"] != "feasible" and r["as_expected"]:
            cls = f"**real bug**: {r['bug']}"
        elif off_target(r):
            cls = "**310B only**: " + (r.get("feedback") or [""])[0].replace("|", "/")[:160]
        else:
            cls = "**open**: " + (r.get("feedback") or [""])[0].replace("|", "/")[:160]
        out.append(f"| {r['operator']} | {r['repo']} `{r['path'] or '.'}` | {r['api']} | {r.get('import', '-')} | "
                   f"{socs} | {r['verdict']} | {lat} | {cls} |")
    return "\n".join(out) + "\n"


def off_target(row: dict[str, Any]) -> bool:
    """Registered (AddConfig) for other SoCs only (the Ascend 310B of the S1/S2 contests): CANN would not run it on
    the 910B the emulator models; its row is run anyway and reported apart."""
    socs = row.get("socs") or []
    return bool(socs) and not any(s.startswith("ascend910b") for s in socs)


def summary(rows: list[dict[str, Any]]) -> list[str]:
    """The headline numbers: on the 910B-registered operators, bug-free ones that run unchanged and correct."""
    on = [r for r in rows if not off_target(r)]
    off = [r for r in rows if off_target(r)]
    bugs = [r for r in on if r["expected"] != "feasible" and r["as_expected"]]
    free = [r for r in on if r["expected"] == "feasible"]
    good = [r for r in free if r["verdict"] == "feasible" and not r.get("edits")]
    repos = {r["repo"] for r in rows}
    out = [f"{len(rows)} operators from {len(repos)} repositories: "
           f"{sum(r['api'] == 'vector' for r in rows)} vector, {sum(r['api'] == 'cube' for r in rows)} raw cube, "
           f"{sum(r['api'] == 'matmul-api' for r in rows)} Matmul API; "
           f"{sum(r.get('import') == 'kernel-launch' for r in rows)} kernel-launch samples",
           f"registered for the 910B: {len(on)}; real bugs refused there: {len(bugs)}; bug-free: {len(free)}, of which "
           f"{len(good)} run unchanged and correct ({100 * len(good) / max(1, len(free)):.0f}%)",
           f"registered for the 310B only (run on the 910B model anyway): {len(off)}, "
           f"{sum(r['verdict'] == 'feasible' for r in off)} feasible"]
    return out


if __name__ == "__main__":
    sys.exit(main())
