"""The native-source text rules (the fast first filter of the hack gate; the binary judge is the boundary)."""
import pytest

from evokernel.verifier.trusted.native_rules import check_native


CPP_OK = '''
#include <cstdint>
#include <cmath>
#include <cstdio>
extern "C" void k(const float* x, float* y, int64_t n) {
    #pragma omp parallel for
    for (int64_t i = 0; i < n; i++) y[i] = std::tanh(x[i]);  // open( in a comment is fine
    if (n < 0) fprintf(stderr, "bad n\\n");
}
'''


def test_native_clean():
    assert check_native(CPP_OK) == []


@pytest.mark.parametrize("code, rule", [
    ("#include <torch/extension.h>", "cpp-torch"),
    ("#include <ATen/ATen.h>", "cpp-torch"),
    ("auto t = at::relu(a);", "cpp-torch"),
    ("void* h = dlopen(\"libtorch_cpu.so\", RTLD_NOW);", "cpp-dynamic-load"),
    ("void* s = dlsym(RTLD_DEFAULT, \"x\");", "cpp-dynamic-load"),
    ("int p = fork();", "cpp-process"),
    ("system(\"ls\");", "cpp-process"),
    ("std::thread t([]{});", "cpp-threads"),
    ("pthread_create(0, 0, 0, 0);", "cpp-threads"),
    ("FILE* f = fopen(\"/tmp/cache\", \"wb\");", "cpp-file"),
    ("_exit(0);", "cpp-exit"),
    ("asm volatile(\"nop\");", "cpp-syscall"),
    ("syscall(39);", "cpp-syscall"),
    ("printf(\"hi\");", "cpp-stdout"),
    ("const char* k = getenv(\"OPENAI_API_KEY\");", "cpp-env"),
    ("__attribute__((constructor)) static void init() {}", "cpp-static-init"),
])
def test_native_forbidden(code, rule):
    assert rule in {f.rule for f in check_native(CPP_OK + "\n" + code + "\n")}


def test_inline_sources_may_use_torch_but_not_bypass_dispatch():
    inline = "#include <torch/extension.h>\ntorch::Tensor f(torch::Tensor x) { return torch::empty_like(x); }"
    assert check_native(inline, "inline") == []
    bypass = inline + "\nauto y = at::native::relu(x);"
    assert "cpp-dispatch-bypass" in {f.rule for f in check_native(bypass, "inline")}


@pytest.mark.parametrize("include,ok", [
    ('#include "kernel_tiling/kernel_tiling.h"', True),
    ('#include "lib/matmul_intf.h"', True),
    ('#include "../op_kernel/matmul_custom_tiling.h"', True),
    ('#include "matmul_custom_tiling.h"', True),
    ('#include "../op_kernel/evil.h"', False),
    ('#include "../../secret_tiling.h"', False),
    ('#include "kernel_tiling/other.h"', False),
])
def test_ascend_includes_the_cann_tiling_headers_and_the_ops_own_only(include, ok):
    found = {f.rule for f in check_native(include + "\n", kind="ascend")}
    assert ("ascend-include" not in found) == ok, found


def test_an_include_alone_is_not_a_use():
    """`#include <fstream>` opens nothing (a community host tiling file includes it unused); a stream is caught."""
    assert check_native("#include <fstream>\nint f() { return 1; }\n") == []
    assert [f.rule for f in check_native("#include <fstream>\nvoid f() { std::ofstream o(\"x\"); }\n")] == ["cpp-file"]


LAUNCHER = '''
#include "data_utils.h"
#ifndef ASCENDC_CPU_DEBUG
#include "acl/acl.h"
#else
#include "tikicpulib.h"
#endif
int32_t main() {
#ifdef ASCENDC_CPU_DEBUG
    ICPU_RUN_KF(add_custom, 8, x, y, z);
#else
    const char* dev = std::getenv("ASCEND_DEVICE_ID");
#endif
    return 0;
}
'''


def test_branches_the_build_never_compiles_are_skipped_only_for_that_build():
    """A kernel-launch sample's NPU branch (#ifndef ASCENDC_CPU_DEBUG) is not compiled by a CPU-debug build: the
    rules skip it when told the build defines the macro, and check it for a device build (or when the macro is
    not defined)."""
    from evokernel.verifier.trusted.native_rules import CPU_DEBUG_MACROS

    assert check_native(LAUNCHER, "ascend", CPU_DEBUG_MACROS) == []
    assert [f.rule for f in check_native(LAUNCHER, "ascend")] == ["cpp-env"]
    assert [f.rule for f in check_native(LAUNCHER, "ascend", frozenset())] == ["cpp-env"]
    # the source's own #define counts; other conditionals keep both branches
    assert check_native("#define ASCENDC_CPU_DEBUG 1\n" + LAUNCHER, "ascend", frozenset()) == []
    other = LAUNCHER.replace("#ifdef ASCENDC_CPU_DEBUG\n    ICPU", "#if FOO\n    ICPU")
    assert [f.rule for f in check_native(other, "ascend", CPU_DEBUG_MACROS)] == ["cpp-env"]
    # an #elif/#else chain after a CPU-debug test: the taken branch only
    chain = "#if defined(ASCENDC_CPU_DEBUG)\nint a;\n#elif 1\nconst char* e = getenv(\"X\");\n#else\nint b;\n#endif\n"
    assert check_native(chain, "ascend", CPU_DEBUG_MACROS) == []
    assert [f.rule for f in check_native(chain, "ascend", frozenset())] == ["cpp-env"]


def test_ascend_host_code_may_read_the_environment_but_not_change_it():
    """A kernel-launch sample's main() reads its sizes from the environment (chiparon/ascendC's matmul); the
    verifier runs host code with a cleared environment. Kernels still may not, and nobody may change it."""
    read = 'uint32_t m = std::getenv("MATMUL_M") ? 2048 : 1024;'
    assert check_native(read, "ascend-host") == []
    assert [f.rule for f in check_native(read, "ascend")] == ["cpp-env"]
    assert [f.rule for f in check_native('setenv("X", "1", 1);', "ascend-host")] == ["cpp-env"]
    assert [f.rule for f in check_native("extern char** environ;", "ascend-host")] == ["cpp-env"]


def test_a_header_named_like_a_torch_library_is_not_torch():
    """Golden-Irises/AscendC's Caffe2D operator includes its own "caffe2_d_tiling.h"; torch's caffe2 headers live
    under caffe2/. A tiling header included as "./x_tiling.h" (KiaraStark's LogSumExp) is the op's own."""
    assert check_native('#include "caffe2_d_tiling.h"\n', "ascend-host") == []
    assert "cpp-torch" in [f.rule for f in check_native('#include "caffe2/core/context.h"\n', "ascend-host")]
    assert [f.rule for f in check_native('#include <torch/extension.h>\n')] == ["cpp-torch"]
    assert [f.rule for f in check_native('#include <Python.h>\n')] == ["cpp-torch"]
    assert check_native('#include "./log_sum_exp_tiling.h"\n', "ascend-host") == []
    assert [f.rule for f in check_native('#include "./secrets.h"\n', "ascend-host")] == ["ascend-include"]


@pytest.mark.parametrize("literal", ['R"(")"', 'u8R"(")"', 'LR"x(")x"', "'\"'"])
def test_a_literal_holding_a_quote_hides_nothing_from_the_rules(literal):
    # red team rt10: after R"(")" the old stripper saw "/*" as a comment's start and skipped what followed
    code = (f'static const char* q1 = {literal};\nstatic const char* q2 = "/*";\n'
            '__attribute__((constructor)) static void init() {}\nstatic const char* q3 = "*/";\n')
    assert "cpp-static-init" in {f.rule for f in check_native(CPP_OK + code)}


def test_what_a_raw_string_holds_is_text_not_code():
    code = 'static const char* doc = R"d(system("ls"); printf("x"); #include <fstream>\n)d";\n'
    assert check_native(CPP_OK + code) == []
