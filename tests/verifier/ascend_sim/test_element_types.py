"""The element types of LocalTensor / GlobalTensor (issue 28, rt3's wide GetValue): only the scalar types of Ascend
C compile. A struct element made one GetValue/SetValue move a whole tile for the price of one scalar access."""
from __future__ import annotations

import subprocess

import pytest

from ascend_sim_harness import CXX, CXXFLAGS, INCLUDE

ALLOWED = ["half", "bfloat16_t", "float", "bool", "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t",
           "uint32_t", "int64_t", "uint64_t"]

# Each case is a kernel body using ELEM; a struct ELEM must not compile, an Ascend C element type must.
CASES = {
    "reinterpret_get_set": """
    __aicore__ void k(LocalTensor<float> x) {
        LocalTensor<ELEM> xs = x.ReinterpretCast<ELEM>();
        ELEM c = xs.GetValue(0);
        xs.SetValue(0, c);
    }""",
    "reinterpret_call_operator": """
    __aicore__ void k(LocalTensor<float> x) {
        auto xs = x.template ReinterpretCast<ELEM>();
        ELEM c = xs(0);
        xs(1) = c;
    }""",
    "tbuf_get": """
    __aicore__ void k() {
        TPipe pipe;
        TBuf<TPosition::VECCALC> buf;
        pipe.InitBuffer(buf, 32768);
        LocalTensor<ELEM> t = buf.Get<ELEM>();
        t.SetValue(0, t.GetValue(1));
    }""",
    "queue_alloc": """
    __aicore__ void k() {
        TPipe pipe;
        TQue<QuePosition::VECIN, 1> q;
        pipe.InitBuffer(q, 1, 32768);
        auto t = q.AllocTensor<ELEM>();
        t.SetValue(0, t.GetValue(1));
    }""",
    "global_get": """
    __aicore__ void k(GM_ADDR x) {
        GlobalTensor<ELEM> g;
        g.SetGlobalBuffer((__gm__ ELEM*)x, 1);
        ELEM c = g.GetValue(0);
        g.SetValue(0, c);
    }""",
}

PRELUDE = """#define EVK_SIM_KERNEL 1
#include "kernel_operator.h"
using namespace AscendC;
struct Wide { float v[4096]; };
struct Pair { float a, b; };
"""


def _compile(tmp_path, body: str, elem: str) -> subprocess.CompletedProcess:
    src = tmp_path / "k.cpp"
    src.write_text(PRELUDE + f"#define ELEM {elem}\n" + body + "\n")
    return subprocess.run([CXX, *CXXFLAGS, f"-I{INCLUDE}", "-fsyntax-only", str(src)], capture_output=True,
                          text=True)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("elem", ["Wide", "Pair", "double"])
def test_a_non_element_type_does_not_compile(tmp_path, case, elem):
    r = _compile(tmp_path, CASES[case], elem)
    assert r.returncode != 0
    assert "must be an Ascend C element type" in r.stderr, r.stderr[-2000:]


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_ascend_c_element_type_compiles(tmp_path, case):
    body = "".join(CASES[case].replace("ELEM", t).replace("void k(", f"void k_{t}(") for t in ALLOWED)
    r = _compile(tmp_path, body, "float")
    assert r.returncode == 0, r.stderr[-3000:]
