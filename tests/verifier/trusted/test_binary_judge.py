"""The binary judge (verifier/trusted/binary_judge.py): each rule with the kernel that would beat a text
rule, built for real by g++ where the point is what the compiler makes of it."""
import shutil
from pathlib import Path

import pytest

from evokernel.verifier.trusted import binary_judge as bj
from evokernel.verifier.trusted import native_build

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("nm") is None,
                               reason="needs g++ and binutils")

HONEST = r"""
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>
#include <algorithm>
extern "C" void kernel(const float* x, float* y, int64_t n) {
    std::vector<float> tmp(16);
    const char* note = R"(asm("nop"); __attribute__((constructor)))";  // literals are not code
    (void)note;
    #pragma omp parallel for
    for (int64_t i = 0; i < n; i++) y[i] = std::max(0.f, std::tanh(x[i]) + 1'000 * 0.f);
    if (n < 0) fprintf(stderr, "negative %ld\n", (long)n);
}
"""


def _build(tmp_path, source, flags=()):
    result = native_build.build_cpp(source, tuple(flags), tmp_path, judge=True)
    assert result.facts is not None and not result.facts.error, result.facts
    return bj.judge(result.facts, "cpp", bj.policy("cpp"), source)


def _rules(findings):
    return {f.rule for f in findings}


# --- the tokenizer and the preprocessed-output reader ------------------------------------------------

def test_literals_do_not_hide_or_fake_code():
    toks = [t for _, t in bj.tokenize([(1, 'auto s = R"(")"; asm("nop"); auto t = "";')])]
    assert "asm" in toks  # the raw string ends at )" -- a naive string regex would swallow asm
    toks = [t for _, t in bj.tokenize([(1, "int n = 1'000; __asm__(\"x\"); int m = 2'0;")])]
    assert "__asm__" in toks  # digit separators are part of numbers, not character literals
    toks = [t for _, t in bj.tokenize([(1, 'const char* s = "asm(\\"nop\\")";')])]
    assert "asm" not in toks
    toks = [t for _, t in bj.tokenize([(1, 'auto s = R"x(a'), (2, ')" asm )x";'), (3, "asm")])]
    assert toks.count("asm") == 1  # a raw string spans lines


def test_only_the_candidates_own_lines_are_read():
    ii = "\n".join([
        '# 1 "/w/kernel.cpp"',
        '# 1 "/usr/include/stdio.h" 1 3 4',
        'extern int printf(const char*, ...) __asm__("printf");',
        '# 2 "/w/kernel.cpp" 2',
        'int f() { return 1; }',
        '# 1 "/w/evil.h" 1',
        'int g();',
        '# 3 "/w/kernel.cpp" 2',
        'int h() { asm("nop"); return 0; }',
    ])
    lines, foreign = bj.candidate_lines(ii, "/w/kernel.cpp")
    assert [n for n, _ in lines] == [2, 3]
    assert foreign == ["/w/evil.h"]
    lines, _ = bj.candidate_lines(ii, "/w/kernel.cpp", (3, 4))
    assert [n for n, _ in lines] == [3]


@pytest.mark.parametrize("source", [
    '#line 1 "/usr/include/stdio.h"\nint x;',
    '%:line 7 "/usr/include/x.h"\n',
    '# 12 "/usr/include/x.h" 1 3\n',
    '#\\\nline 1 "x.h"\n',
    '#/* c */line 3\n',
])
def test_line_directives_are_found(source):
    assert bj.line_directives(source)


def test_no_line_directive_in_ordinary_code():
    assert not bj.line_directives('#include <cmath>\n#define N 4\n#pragma omp parallel for\nint x = 1; // #line 3\n')


# --- symbol rules ------------------------------------------------------------------------------------

def _facts(*symbols):
    return bj.Facts(symbols=[(s, d, False) for s, d in symbols])


@pytest.mark.parametrize("name, dem", [
    ("memcpy", "memcpy"), ("expf", "expf"), ("GOMP_parallel", "GOMP_parallel"), ("omp_get_thread_num",
     "omp_get_thread_num"), ("_Znwm", "operator new(unsigned long)"), ("__cxa_throw", "__cxa_throw"),
    ("_ZSt20__throw_length_errorPKc", "std::__throw_length_error(char const*)"), ("stderr", "stderr"),
    ("__fprintf_chk", "__fprintf_chk"), ("_ZGVdN8v_expf", "_ZGVdN8v_expf"),
])
def test_cpp_allow_list(name, dem):
    assert not bj.symbol_findings(_facts((name, dem)), "cpp", bj.policy("cpp")), (name, dem)


@pytest.mark.parametrize("name, dem, why", [
    ("dlsym", "dlsym", "dynamic loading"), ("fopen64", "fopen64", "files"), ("open64", "open64", "files"),
    ("memfd_create", "memfd_create", "files"), ("pthread_create", "pthread_create", "thread"),
    ("_ZNSt6thread15_M_start_threadE", "std::thread::_M_start_thread(...)", "thread"),
    ("PyRun_SimpleString", "PyRun_SimpleString", "Python"), ("system", "system", "processes"),
    ("clock_gettime", "clock_gettime", "clocks"), ("getenv", "getenv", "environment"),
    ("syscall", "syscall", "system calls"), ("stdout", "stdout", "stdout"), ("puts", "puts", "stdout"),
    ("omp_set_num_threads", "omp_set_num_threads", "OpenMP"), ("sched_getaffinity", "sched_getaffinity", "allow-list"),
    ("_ZNSt6chrono3_V212steady_clock3nowEv", "std::chrono::_V2::steady_clock::now()", "clocks"),
    ("_ZSt4cout", "std::cout", "stdout"), ("cblas_sgemm", "cblas_sgemm", "allow-list"),
    ("_ZN2at4_ops4relu4callERKNS_6TensorE", "at::_ops::relu::call(at::Tensor const&)", "libtorch"),
])
def test_cpp_refusals_name_what_the_library_reaches(name, dem, why):
    found = bj.symbol_findings(_facts((name, dem)), "cpp", bj.policy("cpp"))
    assert found and why in found[0].message, found


def test_weak_symbols_are_judged_like_strong_ones():
    facts = bj.Facts(symbols=[("PyRun_SimpleString", "PyRun_SimpleString", True), ("__gmon_start__", "__gmon_start__", True)])
    assert [f.message for f in bj.symbol_findings(facts, "cpp", bj.policy("cpp"))] == [
        "the built library reaches the Python interpreter: PyRun_SimpleString"]


@pytest.mark.parametrize("dem, ok", [
    ("at::_ops::empty_like::call(at::Tensor const&, ...)", True),
    ("at::_ops::empty_memory_format::call(...)", True),
    ("at::_ops::view::call(...)", True),
    ("at::_ops::relu::call(at::Tensor const&)", False),
    ("at::_ops::add_Tensor::call(...)", False),
    ("at::_ops::mm::redispatch(...)", False),
    ("at::cpu::clamp_min(at::Tensor const&, c10::Scalar const&)", False),
    ("float* at::native::something<float>()", False),
    ("at::native::relu(at::Tensor const&)", False),
    ("c10::Dispatcher::singleton()", False),
    ("torch::jit::load(...)", False),
    ("float* at::TensorBase::data_ptr<float>() const", True),
    ("c10::detail::torchCheckFail(char const*, char const*, unsigned int, char const*)", True),
    ("pybind11::detail::type_caster<at::Tensor, void>::load(pybind11::handle, bool)", True),
])
def test_inline_torch_symbols(dem, ok):
    name = "_ZN2at" + dem.replace(" ", "")[:20]
    found = bj.symbol_findings(_facts((name, dem)), "inline", bj.policy("inline"))
    assert (not found) == ok, found


@pytest.mark.parametrize("name, ok", [("PyTuple_New", True), ("PyErr_Occurred", True), ("PyGILState_Ensure", True),
                                      ("PyRun_SimpleString", False), ("PyImport_ImportModule", False),
                                      ("PyEval_EvalCode", False), ("Py_CompileString", False), ("PySys_GetObject", False)])
def test_inline_python_api_split(name, ok):
    found = bj.symbol_findings(_facts((name, name)), "inline", bj.policy("inline"))
    assert (not found) == ok, found


def test_facts_survive_the_cache_round_trip():
    f = bj.Facts(symbols=[("a", "a", True)], tokens=[(3, "asm")], includes=["/x.h"], line_directives=[2])
    g = bj.Facts.from_json(f.to_json())
    assert g == f
    with pytest.raises(ValueError):
        bj.Facts.from_json(f.to_json().replace(bj.JUDGE_VERSION, "old"))


def test_unjudgeable_builds_are_refused():
    assert _rules(bj.judge(bj.Facts(error="no output"), "cpp", bj.policy("cpp"))) == {"native-judge"}


# --- real builds: what the compiler makes of the text ------------------------------------------------

@needs_gxx
def test_honest_kernel_passes(tmp_path):
    assert _build(tmp_path, HONEST) == []


@needs_gxx
@pytest.mark.parametrize("snippet, rule", [
    # token pasting: no text rule sees "asm", the preprocessed code has it
    ('#define J(a,b) a##b\nextern "C" int f(){ J(__as,m__)("nop"); return 0; }', "native-asm"),
    # a -D macro from the flags
    ('extern "C" int f(){ X("nop"); return 0; }', "native-asm"),
    # digraph-spelled define
    ('%:define Y __asm__\nextern "C" int f(){ Y("nop"); return 0; }', "native-asm"),
    # C++11 attribute syntax and pasted attribute names
    ('[[gnu::constructor]] static void init() {}\nextern "C" int f(){ return 0; }', "native-attribute"),
    ('#define C(a,b) a##b\n__attribute__((C(constr,uctor))) static void init() {}\nextern "C" int f(){ return 0; }',
     "native-attribute"),
    ('__attribute__((section(".init_array"))) static void (*p)() = nullptr;\nextern "C" int f(){ return 0; }',
     "native-attribute"),
    # a weak CPython symbol, pasted
    ('#define P(a,b) a##b\nextern "C" int P(PyRun_,SimpleString)(const char*) __attribute__((weak));\n'
     'extern "C" int f(){ return 0; }', "native-python"),
    # the time-stamp counter via an intrinsic (no symbol, no asm)
    ('#include <x86intrin.h>\nextern "C" long f(){ return (long)__rdtsc(); }', "native-time"),
    # #line relabelling the candidate's code as a system header's
    ('#line 1 "/usr/include/stdio.h"\nextern "C" int f(){ asm("nop"); return 0; }', "native-line-directive"),
    # using namespace std; thread
    ('#include <thread>\nusing namespace std;\nextern "C" void f(){ thread t([]{}); t.join(); }', "native-symbol"),
    # fopen64 / open64 / memfd_create
    ('#include <cstdio>\nextern "C" void f(){ FILE* p = fopen64("/tmp/x", "w"); if (p) fclose(p); }', "native-symbol"),
    # dlsym via pasting
    ('#include <dlfcn.h>\n#define D(a,b) a##b\nextern "C" void* f(){ return D(dl,sym)(RTLD_DEFAULT, "sgemm_"); }',
     "native-symbol"),
])
def test_what_the_text_rules_miss_the_judge_finds(tmp_path, snippet, rule):
    flags = ("-DX=__asm__",) if snippet.startswith('extern "C" int f(){ X(') else ()
    assert rule in _rules(_build(tmp_path, snippet, flags))


@needs_gxx
@pytest.mark.parametrize("include", ['"/dev/null"', "</dev/null>", "<../../../../../../../dev/null>"])
def test_only_system_headers_may_be_included(tmp_path, include):
    # a host file, however it is reached (absolute, or <..> climbing out of a system directory)
    found = _build(tmp_path, f'#include {include}\nextern "C" int f(){{ return 0; }}')
    assert "native-include" in _rules(found)


@needs_gxx
def test_facts_are_cached_with_the_build(tmp_path):
    first = native_build.build_cpp(HONEST, (), tmp_path, judge=True)
    again = native_build.build_cpp(HONEST, (), tmp_path, judge=True)
    assert again.cached and again.facts == first.facts
    assert not list(first.path.parent.glob("*.ii")) and not list(first.path.parent.glob("lib.so-*"))
    plain = native_build.build_cpp(HONEST, (), tmp_path)  # user builds (load_cpp outside the verifier)
    assert plain.facts is None and plain.path != first.path


INLINE_HONEST_BINDING = r"""
#include <vector>
torch::Tensor twice(torch::Tensor x) {
    auto y = torch::empty_like(x);
    const float* s = x.data_ptr<float>();
    float* d = y.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); i++) d[i] = 2.f * s[i];
    return y;
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("twice", &twice, "twice"); }
"""

INLINE_DOORS = r"""
#include <pybind11/pybind11.h>
namespace py = pybind11;
torch::Tensor via_python(torch::Tensor x) {
    py::object torch_mod = py::module_::import("torch");   // Python doing the work, from C++
    return torch_mod.attr("relu")(x).cast<torch::Tensor>();
}
torch::Tensor via_aten(torch::Tensor x) { return x.relu(); }
"""


@needs_gxx
@pytest.mark.slow
def test_inline_extensions(tmp_path):
    spec = {"name": "evk_judge_ok", "cpp_sources": [INLINE_HONEST_BINDING], "functions": [], "extra_cflags": ["-O1"]}
    ok = native_build.build_inline(spec, tmp_path, judge=True)
    assert bj.judge(ok.facts, "inline", bj.policy("inline"), INLINE_HONEST_BINDING) == []
    spec = {"name": "evk_judge_bad", "cpp_sources": [INLINE_DOORS], "functions": ["via_python", "via_aten"],
            "extra_cflags": []}
    bad = native_build.build_inline(spec, tmp_path, judge=True)
    found = bj.judge(bad.facts, "inline", bj.policy("inline"), INLINE_DOORS)
    messages = " ".join(f.message for f in found)
    assert "pybind11's 'module_' reaches the Python interpreter" in messages
    assert "at::_ops::relu::call" in messages and "PyImport_ImportModule" in messages, messages
    assert not (bad.path.parent / "main.ii").exists()
