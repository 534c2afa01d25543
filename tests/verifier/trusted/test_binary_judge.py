"""The binary judge (verifier/trusted/binary_judge.py, native_allowlists.py): each positive list with the
kernel that would get past a text rule, built for real by g++ where the point is what the compiler makes of it."""
import shutil

import pytest

from evokernel.verifier.trusted import binary_facts as bf
from evokernel.verifier.trusted import binary_judge as bj
from evokernel.verifier.trusted import native_allowlists as allow
from evokernel.verifier.trusted import native_build

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("nm") is None
                               or shutil.which("objdump") is None, reason="needs g++ and binutils")

HONEST = r"""
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>
#include <algorithm>
#include <immintrin.h>
#include <omp.h>
extern "C" __attribute__((noinline, aligned(16))) void kernel(const float* x, float* y, int64_t n) {
    std::vector<float> tmp(16);
    const char* note = R"(asm("nop"); __attribute__((constructor)))";  // literals are not code
    (void)note;
    #pragma omp parallel for
    for (int64_t i = 0; i < n; i++) y[i] = std::max(0.f, std::tanh(x[i]) + 1'000 * 0.f);
    #pragma GCC unroll 4
    for (int64_t i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_max_ps(_mm256_loadu_ps(y + i), _mm256_setzero_ps()));
    [[maybe_unused]] __int128 big = (__int128)n * n / 7;  // libgcc's 128-bit division helper
    if (n < 0) fprintf(stderr, "negative %ld %d\n", (long)n, omp_get_max_threads());
}
"""


def _build(tmp_path, source, flags=()):
    result = native_build.build_cpp(source, tuple(flags), tmp_path, judge=True)
    assert result.facts is not None and not result.facts.error, result.facts
    return bj.judge(result.facts, "cpp", bj.policy("cpp"))


def _rules(findings):
    return {f.rule for f in findings}


# --- symbols: what the object reaches -------------------------------------------------------------------

def _facts(*symbols):
    return bf.Facts(symbols=[(s, d, False) for s, d in symbols])


@pytest.mark.parametrize("name, dem", [
    ("memcpy", "memcpy"), ("expf", "expf"), ("GOMP_parallel", "GOMP_parallel"), ("omp_get_thread_num",
     "omp_get_thread_num"), ("_Znwm", "operator new(unsigned long)"), ("__cxa_throw", "__cxa_throw"),
    ("_ZSt20__throw_length_errorPKc", "std::__throw_length_error(char const*)"), ("stderr", "stderr"),
    ("__fprintf_chk", "__fprintf_chk"), ("_ZGVdN8v_expf", "_ZGVdN8v_expf"), ("__divti3", "__divti3"),
    ("__popcountdi2", "__popcountdi2"), ("_GLOBAL_OFFSET_TABLE_", "_GLOBAL_OFFSET_TABLE_"),
])
def test_cpp_allow_list(name, dem):
    assert bj.symbol_findings(_facts((name, dem)), "cpp", bj.policy("cpp")) == []


@pytest.mark.parametrize("name", ["omp_get_thread_num", "omp_get_num_threads", "omp_get_max_threads", "omp_get_level",
                                  "omp_in_parallel", "GOMP_parallel", "omp_set_lock"])
def test_openmp_team_queries_are_allowed(name):
    assert bj.symbol_findings(_facts((name, name)), "cpp", bj.policy("cpp")) == []


@pytest.mark.parametrize("name, why", [
    ("omp_get_wtime", "clocks"), ("omp_get_wtick", "clocks"), ("omp_get_num_procs", "the host"),
    ("omp_get_place_num_procs", "the host"), ("omp_get_num_devices", "the host"), ("omp_set_num_threads", "settings")])
def test_openmp_clocks_and_host_queries_are_refused(name, why):
    # rt3_cpuid_uptime_stderr: omp_get_wtime is libgomp's monotonic clock (the host's uptime), num_procs its CPUs
    found = bj.symbol_findings(_facts((name, name)), "cpp", bj.policy("cpp"))
    assert found and why in found[0].message, found


CPUID = r"""
#include <cpuid.h>
#include <cstdint>
extern "C" void kernel(const float* x, float* y, int64_t n) {
    unsigned a = 0, b = 0, c = 0, d = 0;
    __get_cpuid(1, &a, &b, &c, &d);  // the asm is on <cpuid.h>'s lines, not the candidate's
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] + (float)(c >> 31);
}
"""


def test_cpuid_through_an_inline_header_function_is_refused(tmp_path):
    found = [f for f in _build(tmp_path, CPUID) if f.rule == "native-instruction"]
    assert found and "cpuid (the processor's identity" in found[0].message, found


@pytest.mark.parametrize("name, dem, why", [
    ("dlsym", "dlsym", "dynamic loading"), ("fopen64", "fopen64", "files"), ("syscall", "syscall", "raw system"),
    ("_ZNSt6thread15_M_start_threadESt10unique_ptrINS_6_StateESt14default_deleteIS1_EEPFvvE",
     "std::thread::_M_start_thread(...)", "thread creation"), ("clock_gettime", "clock_gettime", "clocks"),
    ("PyRun_SimpleString", "PyRun_SimpleString", "Python"), ("getenv", "getenv", "environment"),
    ("sendmsg", "sendmsg", "network"), ("__enable_execute_stack", "__enable_execute_stack", "allow-list"),
    ("__morestack", "__morestack", "allow-list"), ("__wrap_pthread_create", "__wrap_pthread_create", "thread"),
    ("_ZN2at4_ops4relu4callERKNS_6TensorE", "at::_ops::relu::call(at::Tensor const&)", "libtorch"),
])
def test_cpp_refusals_name_what_the_code_reaches(name, dem, why):
    found = bj.symbol_findings(_facts((name, dem)), "cpp", bj.policy("cpp"))
    assert found and why in found[0].message, found


@pytest.mark.parametrize("dem, ok", [
    # red team rt10 futex_time_bomb: a futex wait with an absolute wall-clock deadline, a clock by another name
    ("std::__atomic_futex_unsigned_base::_M_futex_wait_until(unsigned int*, unsigned int, bool, "
     "std::chrono::duration<long, std::ratio<1l, 1l> >, std::chrono::duration<long, std::ratio<1l, 1000000000l> >)",
     False),
    ("std::__atomic_futex_unsigned_base::_M_futex_notify_all(unsigned int*)", False),
    ("typeinfo for std::__atomic_futex_unsigned_base", False), ("std::__cxx11::__anything()", False),
    # the internals the standard interface compiles into calls to
    ("std::__throw_length_error(char const*)", True), ("std::__once_callable", True),
    ("std::__detail::_Prime_rehash_policy::_M_next_bkt(unsigned long) const", True),
    ("std::__detail::_List_node_base::_M_hook(std::__detail::_List_node_base*)", True),
    ("std::rethrow_exception(std::__exception_ptr::exception_ptr)", True),
    ("std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_create(unsigned long&, "
     "unsigned long)", True),
    ("std::_Rb_tree_increment(std::_Rb_tree_node_base*)", True),
    # operator<<(ostream&, const char*), which TORCH_CHECK's message reaches (a false rejection of the shipped
    # load_inline example, measured 2026-11-29)
    ("std::basic_ostream<char, std::char_traits<char> >& std::__ostream_insert<char, std::char_traits<char> >("
     "std::basic_ostream<char, std::char_traits<char> >&, char const*, long)", True),
])
def test_the_cxx_librarys_internals_are_a_positive_list(dem, ok):
    found = bj.symbol_findings(_facts(("_Zx", dem)), "cpp", bj.policy("cpp"))
    assert (found == []) == ok, found
    assert ok or "internal of the C++ library" in found[0].message


def test_weak_symbols_are_judged_like_strong_ones():
    facts = bf.Facts(symbols=[("PyRun_SimpleString", "PyRun_SimpleString", True)])
    assert bj.symbol_findings(facts, "cpp", bj.policy("cpp"))


@pytest.mark.parametrize("dem, ok", [
    ("float* at::TensorBase::data_ptr<float>() const", True),
    ("c10::BFloat16 const* at::TensorBase::const_data_ptr<c10::BFloat16 const>() const", True),
    ("at::_ops::empty_like::call(at::Tensor const&, std::optional<c10::ScalarType>)", True),
    ("at::_ops::copy_::call(at::Tensor&, at::Tensor const&, bool)", True),
    ("c10::detail::torchCheckFail(char const*, char const*, unsigned int, char const*)", True),
    ("long c10::detail::maybe_wrap_dim_slow<long>(long, long, bool)", True),
    ("at::internal::set_thread_num(int)", True), ("vtable for torch::autograd::AutogradMeta", True),
    ("caffe2::TypeMeta::error_unsupported_typemeta(caffe2::TypeMeta)", True),
    # computing: an operator, an out-of-line computing method, the dispatcher, kernels behind it
    ("at::_ops::relu::call(at::Tensor const&)", False), ("at::Tensor::relu_() const", False),
    ("at::Tensor::to(c10::TensorOptions, bool, bool, std::optional<c10::MemoryFormat>) const", False),
    ("at::_ops::add_Tensor::redispatch(c10::DispatchKeySet, at::Tensor const&)", False),
    ("at::native::relu(at::Tensor const&)", False), ("at::cpu::clamp_min(at::Tensor const&)", False),
    ("c10::Dispatcher::singleton()", False), ("torch::jit::load(std::string const&)", False),
    ("at::Tensor::_backward(c10::ArrayRef<at::Tensor>) const", False),
    # the recorder's and the Python bridge's internals
    ("c10::impl::TorchDispatchModeTLS::pop_stack()", False), ("c10::impl::PythonDispatcherTLS::set_state(x)", False),
    ("c10::impl::tls_set_dispatch_key_excluded(c10::DispatchKey, bool)", False),
    # dispatch-key guards: torch::empty_like's inline AutoDispatchBelowADInplaceOrView needs them (a leaked one
    # is the worker's to catch: tests/verifier/sandboxed/test_dispatch_tls.py); forcing the whole state is refused
    ("c10::impl::ExcludeDispatchKeyGuard::ExcludeDispatchKeyGuard(c10::DispatchKeySet)", True),
    ("c10::impl::ExcludeDispatchKeyGuard::~ExcludeDispatchKeyGuard()", True),
    ("c10::impl::ForceDispatchKeyGuard::ForceDispatchKeyGuard(c10::DispatchKeySet, c10::DispatchKeySet)", False),
    ("at::AutoDispatchBelowAutograd::AutoDispatchBelowAutograd()", False),
    ("pybind11::module_::import(char const*)", False), ("cblas_sgemm", False), ("at::globalContext()", False),
])
def test_inline_torch_symbols_are_a_positive_list(dem, ok):
    found = bj.symbol_findings(bf.Facts(symbols=[(dem.split("(")[0], dem, False)]), "inline", bj.policy("inline"))
    assert (found == []) is ok, found


@pytest.mark.parametrize("name", ["PyObject_GetAttrString", "PyEval_SaveThread", "_Py_NoneStruct", "PyExc_TypeError",
                                  "PyRun_SimpleString", "PyImport_ImportModule"])
def test_inline_code_reaches_no_python_at_all(name):
    # the binding is the verifier's own object: the candidate's needs no Python symbol, not even a harmless one
    assert bj.symbol_findings(_facts((name, name)), "inline", bj.policy("inline"))


# --- instructions, definitions, attributes, pragmas, headers -------------------------------------------

@pytest.mark.parametrize("mnemonic", [
    "mov", "vfmadd231ps", "vpdpbusd", "vmaxps", "vminps", "vmovdqu8", "kmovw", "kortestw", "pxor", "paddd", "pshufb",
    "cvttss2si", "fld", "fistp", "cmovne", "setg", "jae", "call", "ret", "prefetcht0", "xadd", "cmpxchg",
    "tzcnt", "popcnt", "bzhi", "movsd", "stos", "endbr64", "pause", "vzeroupper", "vgatherdps", "crc32",
    "rdrand", "ud2", "sfence", "vcvtph2ps", "aesenc", "sha256rnds2", "vcmpgt_oqps", "vcmpneq_uqpd"])
def test_ordinary_instructions_are_in_the_families(mnemonic):
    assert allow.instruction_allowed(mnemonic), mnemonic


@pytest.mark.parametrize("mnemonic", [
    "syscall", "sysenter", "int", "int3", "rdtsc", "rdtscp", "rdpmc", "rdpid", "wrpkru", "rdpkru", "wrfsbase",
    "wrgsbase", "rdfsbase", "xbegin", "xend", "xabort", "xtest", "umwait", "tpause", "umonitor", "vmcall", "vmfunc",
    "monitor", "mwait", "enqcmd", "senduipi", "serialize", "hlt", "in", "out", "cli", "(bad)", "movdir64b",
    "incsspq", "wrssq", "setssbsy", "ptwrite", "pconfig", "ldtilecfg", "cpuid", "xgetbv"])
def test_system_instructions_are_in_no_family(mnemonic):
    assert not allow.instruction_allowed(mnemonic)


# red-team rt5_xsavec_reads_xcr0: a state save area's header is XCR0 (what xgetbv reads); the other instructions
# that copy processor or descriptor state to memory or a register, as objdump spells them in 64-bit code
STATE_READERS = ["xsave", "xsave64", "xsavec", "xsavec64", "xsaveopt", "xsaveopt64", "xsaves", "xsaves64", "xrstor",
                 "xrstor64", "xrstors", "xrstors64", "fxsave", "fxsave64", "fxrstor", "fxrstor64", "fsave", "fnsave",
                 "frstor", "rdpid", "rdpkru", "rdtscp", "rdfsbase", "rdgsbase", "rdsspq", "sgdt", "sidt", "sldt",
                 "smsw", "str", "lsl", "lar", "xgetbv", "cpuid"]


@pytest.mark.parametrize("mnemonic", STATE_READERS)
def test_processor_state_readers_are_in_no_family(mnemonic):
    assert not allow.instruction_allowed(mnemonic)
    (finding,) = bj.instruction_findings(bf.Facts(instructions={mnemonic: (1, "k"), "mov": (3, "k")}))
    assert mnemonic in finding.message and "not an instruction of ordinary" not in finding.message, finding.message


XSAVEC = r"""
#include <cstdint>
#include <cstring>
#include <immintrin.h>
__attribute__((target("xsave,xsavec,xsaveopt,fxsr")))
extern "C" uint64_t kernel(const float* x, float* y, int64_t n) {
    alignas(64) static unsigned char area[16384];
    std::memset(area, 0, sizeof area);
    _xsavec64(area, ~0ULL); _xsave64(area, ~0ULL); _xsaveopt64(area, ~0ULL); _fxsave64(area);
    for (int64_t i = 0; i < n; ++i) y[i] = x[i];
    uint64_t comp; std::memcpy(&comp, area + 512 + 8, 8); return comp;
}
"""

# an honest kernel with AVX2 and AVX-512 intrinsics (the compiler's own code for them is in the families)
SIMD = r"""
#include <cstdint>
#include <immintrin.h>
__attribute__((target("avx2,fma"))) static void relu8(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(_mm256_max_ps(_mm256_loadu_ps(x + i),
        _mm256_setzero_ps()), _mm256_set1_ps(1.f), _mm256_setzero_ps()));
}
__attribute__((target("avx512f,avx512bw,avx512vl"))) static void relu16(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        __mmask16 m = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ);
        _mm512_storeu_ps(y + i, _mm512_maskz_mov_ps(m, v));
    }
}
extern "C" void kernel(const float* x, float* y, int64_t n, int wide) { if (wide) relu16(x, y, n); else relu8(x, y, n); }
"""


@needs_gxx
def test_xsave_family_is_refused_and_simd_kernels_are_not(tmp_path):
    found = [f for f in _build(tmp_path / "x", XSAVEC) if f.rule == "native-instruction"]
    assert found and "xsavec64" in found[0].message and "XCR0" in found[0].message, found
    assert _build(tmp_path / "s", SIMD) == []


def test_instruction_findings_name_the_function():
    facts = bf.Facts(instructions={"mov": (10, "f"), "syscall": (1, "g"), "rdtsc": (2, "h")})
    (finding,) = bj.instruction_findings(facts)
    assert "syscall (a system call) in g" in finding.message and "rdtsc (the time-stamp counter) in h" in finding.message


@pytest.mark.parametrize("row, bad", [
    (("relu", "relu", "T"), False), (("_ZN5local4mathEv", "local::math()", "T"), False),
    (("_ZSt4swapIiEvRT_S1_", "void std::swap<int>(int&, int&)", "W"), False),  # an instantiation: weak
    (("_ZNSt6vectorIiE9push_backEv", "std::vector<int>::push_back()", "T"), True),  # a strong std:: definition
    (("_ZN2at6Tensor5relu_Ev", "at::Tensor::relu_()", "T"), True), (("PyInit_evk_ext", "PyInit_evk_ext", "T"), True),
    (("PyRun_SimpleString", "PyRun_SimpleString", "T"), True), (("memcpy", "memcpy", "i"), True),
    # libtorch_python's THP* names (red-team round 2 defined THPVariable_Wrap), mangled or not
    (("_Z16THPVariable_WrapN2at10TensorBaseE", "THPVariable_Wrap(at::TensorBase)", "T"), True),
    (("THPModule_fn", "THPModule_fn", "T"), True),
])
def test_definitions_are_the_candidates_own_names(row, bad):
    assert bool(bj.definition_findings(bf.Facts(defined=[row]))) is bad


def _toks(code):
    return bf.tokenize([(i + 1, line) for i, line in enumerate(code.split("\n"))])


def test_attribute_names_not_their_arguments():
    names = [n for _, n in bj.attribute_names(_toks(
        '__attribute__((format(printf, 1, 2), aligned(64))) int f(const char*, ...);\n'
        '[[gnu::always_inline, nodiscard]] int g();\n[[using gnu: hot, cold]] void h();\n'
        '__declspec(noinline) void k();'))]
    assert names == ["format", "aligned", "always_inline", "nodiscard", "hot", "cold", "noinline"]


@pytest.mark.parametrize("code", [
    "[[gnu::constructor]] static void init() {}", "__attribute__((constructor)) static void i() {}",
    '__attribute__((section(".init_array"))) static void (*p)() = nullptr;', "[[using gnu: destructor]] void d();",
    "int f() __attribute__((weak));", '__attribute__((alias("g"))) int f();', "[[evil::thing]] int x;",
    '__attribute__((target_clones("avx2","default"))) int f() { return 0; }', '__attribute__((ifunc("r"))) int f();'])
def test_attributes_outside_the_list_are_refused(code):
    assert "native-attribute" in _rules(bj.token_findings(bf.Facts(tokens=_toks(code)), "cpp"))


@pytest.mark.parametrize("code, ok", [
    ("#pragma omp parallel for simd", True), ("#pragma GCC unroll 8", True), ('#pragma GCC target("avx2")', True),
    ("#pragma GCC ivdep", True), ("#pragma weak f = g", False), ("#pragma redefine_extname f g", False),
    ("#pragma GCC system_header", False), ("#pragma GCC poison x", False)])
def test_pragmas_are_a_positive_list(code, ok):
    found = _rules(bj.token_findings(bf.Facts(tokens=_toks(code)), "cpp"))
    assert ("native-pragma" not in found) is ok, found


@pytest.mark.parametrize("name, kind, ok", [
    ("cmath", "cpp", True), ("vector", "cpp", True), ("immintrin.h", "cpp", True), ("avx512fintrin.h", "cpp", True),
    ("omp.h", "cpp", True), ("stdint.h", "cpp", True), ("unistd.h", "cpp", False), ("sys/syscall.h", "cpp", False),
    ("dlfcn.h", "cpp", False), ("pthread.h", "cpp", False), ("Python.h", "cpp", False), ("sys/mman.h", "cpp", False),
    ("torch/extension.h", "cpp", False), ("torch/extension.h", "inline", True), ("ATen/Parallel.h", "inline", True),
    ("ATen/cpu/vec/vec.h", "inline", True), ("c10/util/Half.h", "inline", True), ("pybind11/pybind11.h", "inline", False),
    ("torch/python.h", "inline", False), ("Python.h", "inline", False), ("ATen/native/Activation.h", "inline", False),
    ("torch/script.h", "inline", False), ("torch/library.h", "inline", False), ("torch/csrc/utils/pybind.h", "inline", False)])
def test_headers_are_a_positive_list(name, kind, ok):
    assert allow.header_allowed(name, kind) is ok


def test_unjudgeable_builds_are_refused():
    assert _rules(bj.judge(bf.Facts(error="no output"), "cpp", bj.policy("cpp"))) == {"native-judge"}


# --- real builds: what the compiler makes of the text ----------------------------------------------------

@needs_gxx
def test_honest_kernel_passes(tmp_path):
    assert _build(tmp_path, HONEST) == []


@needs_gxx
@pytest.mark.parametrize("snippet, flags, rule", [
    # token pasting: no text rule sees "asm", the preprocessed code has it
    ('#define J(a,b) a##b\nextern "C" int f(){ J(__as,m__)("nop"); return 0; }', (), "native-asm"),
    # a -D macro from the flags
    ('extern "C" int f(){ X("nop"); return 0; }', ("-DX=__asm__",), "native-asm"),
    # digraph-spelled define
    ('%:define Y __asm__\nextern "C" int f(){ Y("nop"); return 0; }', (), "native-asm"),
    # C++11 attribute syntax and pasted attribute names
    ('[[gnu::constructor]] static void init() {}\nextern "C" int f(){ return 0; }', (), "native-attribute"),
    ('#define C(a,b) a##b\n__attribute__((C(constr,uctor))) static void init() {}\nextern "C" int f(){ return 0; }',
     (), "native-attribute"),
    ('__attribute__((section(".init_array"))) static void (*p)() = nullptr;\nextern "C" int f(){ return 0; }', (),
     "native-attribute"),
    # _Pragma builds a pragma the text never spells
    ('_Pragma("weak f")\nextern "C" int f(){ return 0; }', (), "native-pragma"),
    # a pasted, weakly declared CPython function, called (weak: the link cannot refuse it)
    ('#define P(a,b) a##b\nextern "C" int P(PyRun_,SimpleString)(const char*) __attribute__((weak));\n'
     'extern "C" int f(){ return PyRun_SimpleString("1"); }', (), "native-symbol"),
    # the time-stamp counter, the thread pointer and transactional memory via intrinsics (no symbol, no asm)
    ('#include <x86intrin.h>\nextern "C" long f(){ return (long)__rdtsc(); }', (), "native-instruction"),
    # (enabled by an allowed attribute or pragma, since the flags do not offer these ISAs)
    ('#include <immintrin.h>\n__attribute__((target("fsgsbase"))) void w(unsigned long v){ _writefsbase_u64(v); }\n'
     'extern "C" void f(unsigned long v){ w(v); }', (), "native-instruction"),
    ('#pragma GCC target("rtm")\n#include <immintrin.h>\nextern "C" int f(){ return (int)_xbegin(); }', (),
     "native-instruction"),
    ('#pragma GCC target("rdpid")\nextern "C" unsigned f(){ return __builtin_ia32_rdpid(); }', (),
     "native-instruction"),
    ('#pragma GCC target("pku")\n#include <immintrin.h>\nextern "C" void f(){ _wrpkru(0); }', (),
     "native-instruction"),
    # #line relabelling the candidate's code as a system header's
    ('#line 1 "/usr/include/stdio.h"\nextern "C" int f(){ asm("nop"); return 0; }', (), "native-line-directive"),
    # ... hidden behind a raw string holding a quote, the constructor pasted (red team rt10)
    ('static const char* q1 = R"(")";\nstatic const char* q2 = "/*";\n# 1 "/usr/include/stdio.h" 3\n'
     'static const char* q3 = "*/";\n#define A(a, b) __attribute__((a##b))\nA(construc, tor) static void g() {}\n'
     'extern "C" int f(){ return 0; }', (), "native-line-directive"),
    # using namespace std; thread
    ('#include <thread>\nusing namespace std;\nextern "C" void f(){ thread t([]{}); t.join(); }', (), "native-symbol"),
    # fopen64 / open64 / memfd_create
    ('#include <cstdio>\nextern "C" void f(){ FILE* p = fopen64("/tmp/x", "w"); if (p) fclose(p); }', (),
     "native-symbol"),
    # dlsym via pasting, and the header it needs
    ('#include <dlfcn.h>\n#define D(a,b) a##b\nextern "C" void* f(){ return D(dl,sym)(RTLD_DEFAULT, "sgemm_"); }', (),
     "native-header"),
    ('#include <dlfcn.h>\n#define D(a,b) a##b\nextern "C" void* f(){ return D(dl,sym)(RTLD_DEFAULT, "sgemm_"); }', (),
     "native-symbol"),
    # a header the list does not hold, reached through a macro
    ('#define H <sys/syscall.h>\n#include H\nextern "C" long f(){ return SYS_write; }', (), "native-header"),
    # a strong definition in a namespace the candidate does not own
    ('namespace std { void evk_probe() {} }\nextern "C" int f(){ return 0; }', (), "native-definition"),
    ('extern "C" int PyInit_evil() { return 0; }\nextern "C" int f(){ return 0; }', (), "native-definition"),
])
def test_what_the_text_rules_miss_the_judge_finds(tmp_path, snippet, flags, rule):
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
    assert sorted(p.name for p in first.path.parent.iterdir()) == [bf.FACTS_NAME, "lib.so"]
    plain = native_build.build_cpp(HONEST, (), tmp_path)  # user builds (load_cpp outside the verifier)
    assert plain.facts is None and plain.path != first.path


# --- the C++ library: a positive list of facilities (red team rt11: std_locale_host_probe) ---------------------

@pytest.mark.parametrize("dem, ok", [
    # a named locale: glibc's newlocale reads /usr/lib/locale (which locales the host has installed)
    ("std::locale::locale(char const*)", False),
    ("std::locale::locale(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&)",
     False),
    ("std::locale::locale(std::locale const&, char const*, int)", False), ("std::locale::global(std::locale const&)",
                                                                          False),
    # not locale, but files all the same: message catalogues from a directory, named facets, streams on files
    ("std::messages<char>::open(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > "
     "const&, std::locale const&, char const*) const", False),
    ("std::ctype_byname<char>::ctype_byname(char const*, unsigned long)", False),
    ("std::basic_ifstream<char, std::char_traits<char> >::open(char const*, std::_Ios_Openmode)", False),
    ("std::basic_filebuf<char, std::char_traits<char> >::open(char const*, std::_Ios_Openmode)", False),
    ("std::time_get<char, std::istreambuf_iterator<char, std::char_traits<char> > >::id", False),
    ("std::random_device::_M_init(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > "
     "const&)", False),
    # what string streams, strings, containers and exceptions compile into (none reads a file)
    ("std::locale::locale()", True), ("std::locale::~locale()", True), ("std::locale::classic()", True),
    ("std::ctype<char>::_M_widen_init() const", True), ("std::ios_base::Init::Init()", True),
    ("std::__cxx11::basic_ostringstream<char, std::char_traits<char>, std::allocator<char> >::~basic_ostringstream()",
     True),
    ("VTT for std::__cxx11::basic_istringstream<char, std::char_traits<char>, std::allocator<char> >", True),
    ("std::basic_ostream<char, std::char_traits<char> >& std::basic_ostream<char, std::char_traits<char> >::"
     "_M_insert<double>(double)", True),
    ("std::_Hash_bytes(void const*, unsigned long, unsigned long)", True),
    ("std::runtime_error::runtime_error(char const*)", True), ("typeinfo for std::runtime_error", True),
    ("std::__throw_bad_function_call()", True),
])
def test_the_cxx_library_is_a_positive_list_of_facilities(dem, ok):
    found = bj.symbol_findings(_facts(("_Zx", dem)), "cpp", bj.policy("cpp"))
    assert (found == []) == ok, found


LOCALE_PROBE = r'''
#include <locale>
#include <cstdio>
extern "C" int f() {
    try { std::locale loc("C.UTF-8"); (void)loc; return 1; } catch (...) { return 0; }
}
'''

# a deny-list that adds std::locale misses the catalogue reader next to it: messages<char>::open takes a directory
MESSAGES_PROBE = r'''
#include <locale>
#include <string>
extern "C" int f() {
    const std::messages<char>& m = std::use_facet<std::messages<char> >(std::locale::classic());
    return (int)m.open("evk", std::locale::classic(), "/usr/share/locale");
}
'''

STRING_STREAMS = r'''
#include <sstream>
#include <string>
#include <vector>
#include <map>
#include <unordered_map>
#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>
#include <iomanip>
extern "C" int f(const float* x, long n) {
    std::ostringstream os; os << "n=" << n << " " << std::setprecision(3) << x[0] << std::endl;
    std::string s = os.str() + std::to_string(n);
    std::vector<float> v(x, x + n); std::sort(v.begin(), v.end());
    std::map<int, int> m; m[1] = 2; std::unordered_map<std::string, int> u; u[s] = 1;
    std::mt19937 g(1); std::normal_distribution<float> d;
    std::istringstream is("3 4"); int a = 0, b = 0; is >> a >> b;
    if (n < 0) throw std::runtime_error("negative " + s);
    return (int)(std::accumulate(v.begin(), v.end(), 0.0f) + d(g) + m[1] + u[s] + a + b);
}
'''


@needs_gxx
@pytest.mark.parametrize("source, ok", [(LOCALE_PROBE, False), (MESSAGES_PROBE, False), (STRING_STREAMS, True)])
def test_named_locales_and_catalogues_are_refused_string_streams_are_not(tmp_path, source, ok):
    found = [f for f in _build(tmp_path, source) if f.rule == "native-symbol"]
    assert (found == []) == ok, found
