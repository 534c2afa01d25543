"""EvoKernel's own pytorch_npu_helper.hpp (EXEC_NPU_CMD), without CANN or torch_npu.

- Syntax: a candidate's csrc/op.cpp (the add_custom example's python_bind_src, laid out by
  binding_build.write_binding with the shipped header) and a binding with attributes compile with
  `g++ -std=c++17 -fsyntax-only` against the REAL libtorch headers plus FAKE acl / torch_npu headers
  (fake_acl_include/, declarations written from the public API docs); unsupported argument types fail to
  compile.
- Run (slow): the same op.cpp plus extra bindings built as a real torch extension against fake CPU
  implementations (fake_acl_include/impl/: libnnopbase.so, libascendcl.so, an installed libcust_opapi.so,
  the NPUStream functions): the op is found through ASCEND_CUSTOM_OPP_PATH or the load_priority vendors of
  $ASCEND_OPP_PATH/vendors/config.ini, arguments arrive in order and converted (strides, storage offset,
  int64/double/bool attributes, lists, scalars, tensor lists), the workspace is allocated, the stream is the
  drained one (stream(true)), every acl object is destroyed, and a missing op or a failing status is a clear
  RuntimeError. Tensors are CPU tensors there (EVOKERNEL_NPU_HELPER_DEVICE_TYPE=c10::DeviceType::CPU).

What this does NOT show: that the header compiles against the real CANN / torch_npu headers or works on an
NPU (no CANN on this machine).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from evokernel.verifier.backends.ascend import binding_build as bb
from evokernel.verifier.backends.ascend_sim.project import parse_candidate, read_strings

ROOT = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parent
FAKE_INC = HERE / "fake_acl_include"
IMPL = FAKE_INC / "impl"
EXAMPLES = ROOT / "evokernel" / "examples" / "ascend"
GXX = shutil.which("g++")

needs_gxx = pytest.mark.skipif(GXX is None, reason="g++ not found")


def bind_src(example: str) -> str:
    return read_strings((EXAMPLES / f"{example}.py").read_text())["python_bind_src"]


def torch_includes() -> list[str]:
    from torch.utils.cpp_extension import include_paths
    return [*include_paths(), sysconfig.get_paths()["include"]]


def syntax_check(cpp: Path, std: str = "c++17") -> subprocess.CompletedProcess:
    cmd = [GXX, f"-std={std}", "-fsyntax-only", "-Wall", "-Wextra", "-DTORCH_EXTENSION_NAME=custom_ops_lib",
           f"-I{cpp.parent}", f"-I{FAKE_INC}", *[f"-I{p}" for p in torch_includes()], str(cpp)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def diagnostics_in(stderr: str, name: str) -> list[str]:
    """Compiler warnings/errors located in `name` (libtorch's own headers warn under -Wextra; not ours)."""
    return [ln for ln in stderr.splitlines() if re.search(rf"{re.escape(name)}:\d+:\d+: (warning|error)", ln)]


# ---------------------------------------------------------------------------------------------------------
# the shipped header is the default
# ---------------------------------------------------------------------------------------------------------

def test_shipped_header_is_the_default(tmp_path, monkeypatch):
    monkeypatch.delenv(bb.HELPER_ENV, raising=False)
    assert bb.SHIPPED_HELPER.is_file()
    assert bb.find_helper(environ={}) == bb.SHIPPED_HELPER
    b = bb.write_binding(parse_candidate((EXAMPLES / "add_custom.py").read_text()), tmp_path / "c", environ={})
    assert (b.root / "csrc" / bb.HELPER_NAME).read_bytes() == bb.SHIPPED_HELPER.read_bytes()


def test_shipped_header_states_what_it_is():
    text = bb.SHIPPED_HELPER.read_text()
    assert "NOT been compiled against the real CANN" in text and "NOT been run on an NPU" in text
    assert "#define EXEC_NPU_CMD(" in text
    # the lookup order and the drained stream are the documented behaviour (module comment)
    for needle in ("ASCEND_CUSTOM_OPP_PATH", "load_priority", "libopapi.so", ".stream(true)", "GetWorkspaceSize"):
        assert needle in text


# ---------------------------------------------------------------------------------------------------------
# syntax: real libtorch headers + fake acl / torch_npu headers
# ---------------------------------------------------------------------------------------------------------

@needs_gxx
@pytest.mark.slow  # libtorch headers: measured 15-26 s per g++ -fsyntax-only on this 2-core box
def test_example_binding_compiles(tmp_path):
    """csrc/op.cpp exactly as binding_build lays it out for the add_custom example (python_bind_src verbatim
    next to a copy of the shipped header)."""
    b = bb.write_binding(parse_candidate((EXAMPLES / "add_custom.py").read_text()), tmp_path / "cand", environ={})
    r = syntax_check(b.op_cpp)
    assert r.returncode == 0, r.stderr[-4000:]
    assert diagnostics_in(r.stderr, bb.HELPER_NAME) == []
    assert diagnostics_in(r.stderr, "op.cpp") == []


ATTR_BINDING = r'''
#include <torch/library.h>
#include "pytorch_npu_helper.hpp"
#include <torch/extension.h>

// an op with attributes: inputs, then Int / Float / Bool / ListInt attributes, then the output
at::Tensor foo_custom_impl(const at::Tensor& x) {
    at::Tensor out = at::empty_like(x);
    EXEC_NPU_CMD(aclnnFooCustom, x, (int64_t)3, 0.5, true, at::IntArrayRef{1, 2}, out);
    return out;
}

// everything else the header converts
at::Tensor bar_custom_impl(const at::Tensor& x, const c10::optional<at::Tensor>& bias, at::TensorList xs) {
    at::Tensor out = at::empty_like(x);
    std::vector<int64_t> dims{0, 1};
    std::vector<float> scales{0.5f, 2.0f};
    std::vector<double> scales_d{0.5, 2.0};
    std::vector<bool> flags{true, false};
    int i32 = 7;
    float f32 = 1.5f;
    std::string mode = "sum";
    c10::Scalar alpha = 2.0;
    EXEC_NPU_CMD(aclnnBarCustom, x, bias, xs, std::vector<at::Tensor>{x, x}, i32, f32, 3, 2.5f, mode, "mean",
                 dims, scales, scales_d, flags, alpha, at::Scalar(true), out);
    return out;
}

namespace d = evokernel_npu::detail;
template <typename T, typename U> constexpr bool same = std::is_same<d::converted_t<T>, U>::value;
static_assert(same<at::Tensor, aclTensor*>, "tensor");
static_assert(same<c10::optional<at::Tensor>, aclTensor*>, "optional tensor");
static_assert(same<at::TensorList, aclTensorList*>, "tensor list");
static_assert(same<std::vector<at::Tensor>, aclTensorList*>, "tensor vector");
static_assert(same<int, int64_t>, "int widened to int64_t");
static_assert(same<int64_t, int64_t>, "int64_t");
static_assert(same<uint32_t, int64_t>, "unsigned widened to int64_t");
static_assert(same<bool, bool>, "bool");
static_assert(same<float, double>, "float widened to double");
static_assert(same<double, double>, "double");
static_assert(same<at::IntArrayRef, const aclIntArray*>, "IntArrayRef");
static_assert(same<std::vector<int64_t>, const aclIntArray*>, "vector<int64_t>");
static_assert(same<std::vector<float>, const aclFloatArray*>, "vector<float>");
static_assert(same<std::vector<double>, const aclFloatArray*>, "vector<double>");
static_assert(same<std::vector<bool>, const aclBoolArray*>, "vector<bool>");
static_assert(same<c10::Scalar, aclScalar*>, "Scalar");
static_assert(same<std::string, const char*>, "string");
static_assert(same<char[5], const char*>, "string literal");

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("foo_custom", &foo_custom_impl, "");
    m.def("bar_custom", &bar_custom_impl, "");
}
'''


@needs_gxx
@pytest.mark.slow  # libtorch headers: measured 15-26 s per g++ -fsyntax-only on this 2-core box
def test_attribute_binding_compiles(tmp_path):
    (tmp_path / bb.HELPER_NAME).write_bytes(bb.SHIPPED_HELPER.read_bytes())
    cpp = tmp_path / "op.cpp"
    cpp.write_text(ATTR_BINDING)
    r = syntax_check(cpp)
    assert r.returncode == 0, r.stderr[-4000:]
    assert diagnostics_in(r.stderr, bb.HELPER_NAME) == []
    assert diagnostics_in(r.stderr, "op.cpp") == []


@needs_gxx
@pytest.mark.slow  # libtorch headers: measured 15-26 s per g++ -fsyntax-only on this 2-core box
def test_unsupported_argument_is_a_compile_error_in_op_cpp(tmp_path):
    """A std::vector<int> (not int64_t) has no aclnn mapping: the build fails instead of passing garbage."""
    (tmp_path / bb.HELPER_NAME).write_bytes(bb.SHIPPED_HELPER.read_bytes())
    cpp = tmp_path / "op.cpp"
    cpp.write_text('#include "pytorch_npu_helper.hpp"\n'
                   "at::Tensor f(const at::Tensor& x) {\n"
                   "    at::Tensor out = at::empty_like(x);\n"
                   "    EXEC_NPU_CMD(aclnnFooCustom, x, std::vector<int>{1, 2}, out);\n"
                   "    return out;\n"
                   "}\n")
    r = syntax_check(cpp)
    assert r.returncode != 0
    assert "op.cpp:4" in r.stderr and "convert" in r.stderr


# ---------------------------------------------------------------------------------------------------------
# run: a real torch extension against fake CPU implementations of the ACL side
# ---------------------------------------------------------------------------------------------------------

EXTRA_BINDINGS = r'''

// ---- appended by test_npu_helper.py: more EXEC_NPU_CMD call sites, registered as torch.ops.evk_helper_test.*
at::Tensor evk_foo(const at::Tensor& x) {
    at::Tensor out = at::empty_like(x);
    EXEC_NPU_CMD(aclnnFooCustom, x, (int64_t)3, 0.5, true, at::IntArrayRef{1, 2}, out);
    return out;
}

at::Tensor evk_foo_narrow(const at::Tensor& x) {  // int and float: widened to int64_t and double
    at::Tensor out = at::empty_like(x);
    int k = 3;
    float s = 0.5f;
    EXEC_NPU_CMD(aclnnFooCustom, x, k, s, true, std::vector<int64_t>{1, 2}, out);
    return out;
}

at::Tensor evk_bar(const at::Tensor& x, const at::Tensor& y) {
    at::Tensor out = at::empty_like(x);
    EXEC_NPU_CMD(aclnnBarCustom, std::vector<at::Tensor>{x, y}, c10::optional<at::Tensor>(), c10::Scalar(2.5),
                 std::vector<float>{0.25f, 4.0f}, std::vector<bool>{true, false, true}, "mean", out);
    return out;
}

at::Tensor evk_fail(const at::Tensor& x) {
    at::Tensor out = at::empty_like(x);
    EXEC_NPU_CMD(aclnnFailCustom, x, out);
    return out;
}

at::Tensor evk_missing(const at::Tensor& x) {
    at::Tensor out = at::empty_like(x);
    EXEC_NPU_CMD(aclnnMissingCustom, x, out);
    return out;
}

TORCH_LIBRARY(evk_helper_test, m) {
    m.def("foo", &evk_foo);
    m.def("foo_narrow", &evk_foo_narrow);
    m.def("bar", &evk_bar);
    m.def("fail", &evk_fail);
    m.def("missing", &evk_missing);
}
'''

RUNNER = r'''
import json, sys
import torch
from torch.utils.cpp_extension import load

cfg = json.loads(sys.argv[1])
mod = load(name="custom_ops_lib", sources=cfg["sources"], extra_include_paths=cfg["includes"],
           extra_cflags=cfg["cflags"], extra_ldflags=["-ldl"], build_directory=cfg["build"], verbose=False)
ops = torch.ops.evk_helper_test
x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
y = torch.full((2, 3), 10.0)
xt = torch.arange(6, dtype=torch.float32).reshape(3, 2).t()      # non-contiguous view
ys = torch.arange(12, dtype=torch.float32)[6:].reshape(2, 3)      # storage offset 6
cases = {
    "add": lambda: mod.add_custom(x, y),
    "add_strided": lambda: mod.add_custom(xt, ys),
    "foo": lambda: ops.foo(x),
    "foo_narrow": lambda: ops.foo_narrow(x),
    "bar": lambda: ops.bar(x, y),
    "fail": lambda: ops.fail(x),
    "missing": lambda: ops.missing(x),
    "wrong_device": lambda: mod.add_custom(x.to("meta"), y.to("meta")),
}
out = {}
for name in cfg["cases"]:
    try:
        out[name] = {"ok": True, "value": cases[name]().tolist()}
    except Exception as e:  # the TORCH_CHECK text
        out[name] = {"ok": False, "error": str(e)}
print("RESULT " + json.dumps(out))
'''

STREAM_TRUE = str(0x5EED1)  # fake_npu_stream.cpp: stream(true) / stream()
STREAM_FALSE = str(0x5EED0)


def _gxx(*args):
    subprocess.run([GXX, "-std=c++17", "-O1", "-fPIC", "-shared", *map(str, args)], check=True,
                   capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def rig(tmp_path_factory):
    """Fake ACL libraries, an installed custom op in two layouts, the extension sources and a runner."""
    root = tmp_path_factory.mktemp("npu_helper_run")
    lib = root / "lib"
    lib.mkdir()
    inc = [f"-I{FAKE_INC}", f"-I{IMPL}"]
    _gxx(*inc, IMPL / "fake_nnopbase.cpp", "-o", lib / "libnnopbase.so")
    _gxx(IMPL / "fake_ascendcl.cpp", "-o", lib / "libascendcl.so")
    cust = root / "install" / "vendors" / "customize" / "op_api" / "lib"
    cust.mkdir(parents=True)
    _gxx(*inc, IMPL / "fake_cust_opapi.cpp", f"-L{lib}", "-lnnopbase", "-o", cust / "libcust_opapi.so")
    # the same op installed as an $ASCEND_OPP_PATH vendor instead
    opp = root / "opp"
    vend = opp / "vendors" / "customize" / "op_api" / "lib"
    vend.mkdir(parents=True)
    shutil.copy(cust / "libcust_opapi.so", vend / "libcust_opapi.so")
    (opp / "vendors" / "config.ini").write_text("load_priority=absent, customize\n")
    # the candidate's op.cpp as binding_build lays it out, plus the extra call sites
    csrc = root / "ext" / "csrc"
    csrc.mkdir(parents=True)
    (csrc / "op.cpp").write_text(bind_src("add_custom") + EXTRA_BINDINGS)
    shutil.copy(bb.SHIPPED_HELPER, csrc / bb.HELPER_NAME)
    (root / "build").mkdir()
    (root / "runner.py").write_text(RUNNER)
    return root


def run_cases(rig: Path, tag: str, cases: list[str], **env_overrides) -> tuple[dict, list[str]]:
    log = rig / f"acl_{tag}.log"
    cfg = {"sources": [str(rig / "ext" / "csrc" / "op.cpp"), str(IMPL / "fake_npu_stream.cpp")],
           "includes": [str(rig / "ext" / "csrc"), str(FAKE_INC)],
           "cflags": ["-O1", "-DEVOKERNEL_NPU_HELPER_DEVICE_TYPE=c10::DeviceType::CPU"],
           "build": str(rig / "build"), "cases": cases}
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND_")}
    env.update(LD_LIBRARY_PATH=os.pathsep.join(filter(None, [str(rig / "lib"), os.environ.get("LD_LIBRARY_PATH")])),
               EVK_FAKE_ACL_LOG=str(log), MAX_JOBS="2", HF_HUB_OFFLINE="1")
    env.update(env_overrides)
    r = subprocess.run([sys.executable, str(rig / "runner.py"), json.dumps(cfg)], capture_output=True, text=True,
                       env=env, timeout=900)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert r.returncode == 0 and lines, r.stdout[-3000:] + r.stderr[-5000:]
    return json.loads(lines[-1][len("RESULT "):]), (log.read_text().splitlines() if log.exists() else [])


def balanced(log: list[str]) -> None:
    """Every acl object the helper created was destroyed (aclDestroyTensorList destroys its members)."""
    for kind in ("Tensor", "Scalar", "IntArray", "FloatArray", "BoolArray", "TensorList"):
        made = sum(1 for ln in log if ln.startswith(f"aclCreate{kind} "))
        gone = sum(1 for ln in log if ln == f"aclDestroy{kind}")
        assert made == gone, (kind, made, gone)


ALL_CASES = ["add", "add_strided", "foo", "foo_narrow", "bar", "fail", "missing", "wrong_device"]


@needs_gxx
@pytest.mark.slow
def test_run_through_custom_opp_path(rig):
    install = rig / "install" / "vendors" / "customize"
    res, log = run_cases(rig, "custom", ALL_CASES, ASCEND_CUSTOM_OPP_PATH=f"{rig / 'nowhere'}:{install}")

    assert res["add"] == {"ok": True, "value": [[10.0, 11.0, 12.0], [13.0, 14.0, 15.0]]}
    # strided view and storage offset reach the op as strides / offset over the storage base
    assert res["add_strided"] == {"ok": True, "value": [[6.0, 9.0, 12.0], [10.0, 13.0, 16.0]]}
    assert any(ln.startswith("aclnnAddCustomGetWorkspaceSize x{view=[2,3] strides=[1,2] offset=0 dtype=0 format=2 "
                             "storage=[6]} y{view=[2,3] strides=[3,1] offset=6 dtype=0 format=2 storage=[12]}")
               for ln in log), log
    # the workspace the op asked for was allocated; the launch used the drained stream (stream(true))
    adds = [ln for ln in log if ln.startswith("aclnnAddCustom ")]
    assert adds and all(ln == f"aclnnAddCustom workspace=set size=64 stream={STREAM_TRUE}" for ln in adds), adds
    assert not any(f"stream={STREAM_FALSE}" in ln for ln in log)

    # attributes in order, with the aclnn types: int64_t, double, bool, aclIntArray
    expect_foo = [[4.5, 7.5, 10.5], [13.5, 16.5, 19.5]]  # x*3 + 0.5 + 1 + (1+2)
    assert res["foo"] == {"ok": True, "value": expect_foo}
    assert res["foo_narrow"] == {"ok": True, "value": expect_foo}  # int / float widened before the call
    foo_logs = [ln for ln in log if ln.startswith("aclnnFooCustomGetWorkspaceSize")]
    assert foo_logs == ["aclnnFooCustomGetWorkspaceSize a=3 b=0.5 c=1 l=[1,2]"] * 2
    assert any(ln == f"aclnnFooCustom workspace=null size=0 stream={STREAM_TRUE}" for ln in log)

    assert res["bar"] == {"ok": True, "value": [[10.0, 11.0, 12.0], [13.0, 14.0, 15.0]]}
    assert ("aclnnBarCustomGetWorkspaceSize n=2 maybe=null scalar_dtype=11 scalar=2.5 floats=[0.250000,4.000000] "
            "bools=101 mode=mean") in log
    assert f"aclnnBarCustom workspace=null size=0 stream={STREAM_TRUE}" in log

    # a failing status: the phase, the code, the op library and CANN's message
    assert not res["fail"]["ok"]
    err = res["fail"]["error"]
    assert "aclnnFailCustomGetWorkspaceSize returned aclnn status 161002" in err
    assert str(install / "op_api" / "lib" / "libcust_opapi.so") in err
    assert "fake CANN: EZ1001 attribute out of range" in err

    # an op that is not installed: named, with every library tried and why it did not help
    assert not res["missing"]["ok"]
    err = res["missing"]["error"]
    assert "aclnnMissingCustomGetWorkspaceSize / aclnnMissingCustom not found" in err
    assert "op not installed" in err
    assert f"{rig / 'nowhere'}/op_api/lib/libcust_opapi.so: not loaded" in err
    assert f"{install}/op_api/lib/libcust_opapi.so: loaded, neither symbol defined" in err
    assert "libopapi.so: not loaded" in err

    assert not res["wrong_device"]["ok"] and "a tensor argument is on meta" in res["wrong_device"]["error"]
    balanced(log)  # also after the failing status (RAII)


@needs_gxx
@pytest.mark.slow
def test_run_through_vendor_config(rig):
    """No ASCEND_CUSTOM_OPP_PATH: the load_priority vendors of $ASCEND_OPP_PATH/vendors/config.ini."""
    opp = rig / "opp"
    res, log = run_cases(rig, "vendors", ["add", "missing"], ASCEND_OPP_PATH=str(opp))
    assert res["add"] == {"ok": True, "value": [[10.0, 11.0, 12.0], [13.0, 14.0, 15.0]]}
    err = res["missing"]["error"]
    assert "ASCEND_CUSTOM_OPP_PATH=(unset)" in err and f"ASCEND_OPP_PATH={opp}" in err
    assert f"{opp}/vendors/absent/op_api/lib/libcust_opapi.so: not loaded" in err
    assert f"{opp}/vendors/customize/op_api/lib/libcust_opapi.so: loaded, neither symbol defined" in err
    balanced(log)


@needs_gxx
@pytest.mark.slow
def test_run_without_any_install(rig):
    res, _ = run_cases(rig, "none", ["add"])
    assert not res["add"]["ok"]
    err = res["add"]["error"]
    assert "aclnnAddCustomGetWorkspaceSize / aclnnAddCustom not found" in err and "op not installed" in err
    assert "ASCEND_CUSTOM_OPP_PATH=(unset), ASCEND_OPP_PATH=(unset)" in err
