"""What candidate native code may reach, as positive lists: the binary judge's data (binary_judge.py rules
with it; binary_facts.py reads the facts it is applied to).

Every list here says what **is** allowed; anything not on it is refused, whatever it is called:

* **headers** the candidate's own lines may include (resolved by the compiler, so a macro-built or
  ``<../..>`` name is judged by where it lands);
* **attributes** and **pragmas** in the candidate's preprocessed lines (load-time code, aliases, sections
  and weak symbols are not on them);
* **instructions** the candidate's object may execute, as families of x86-64 mnemonics the compiler emits for
  ordinary code (no system call, interrupt, time-stamp or performance counter, protection-key, FS/GS-base,
  transactional-memory or user-wait instruction, no ``cpuid``/``xgetbv`` (the host's identity), no instruction that
  writes the processor's state to memory (``xsave*``/``fxsave``/``fsave``: their headers carry XCR0 or MXCSR_MASK)
  nor reads a processor or descriptor register (``rdpid``, ``rdpkru``, ``rdfsbase``, ``sgdt``, ``smsw``, ``str``,
  ``lsl``, ...): none of those is in a family);
* **symbols** the object may reach (libc's memory/string/stderr functions, libm, libgcc's arithmetic helpers,
  OpenMP's runtime and its thread-team queries by name, the C++ runtime; for ``load_inline`` in addition libtorch's tensor API and the ATen operators that
  only allocate, view or copy) -- the symbol rules live in binary_judge.py with their feedback;
* **definitions** the object may add: its own names only (no strong definition in std::, at::, c10::,
  torch::, pybind11:: or of the Python API, no ifunc).
"""
from __future__ import annotations

import re

# --- headers --------------------------------------------------------------------------------------------

CXX_HEADERS = frozenset("""
algorithm any array atomic barrier bit bitset cassert ccomplex cctype cerrno cfenv cfloat charconv chrono cinttypes
ciso646 climits clocale cmath codecvt compare complex concepts condition_variable coroutine csetjmp csignal cstdalign
cstdarg cstdbool cstddef cstdint cstdio cstdlib cstring ctgmath ctime cuchar cwchar cwctype deque exception execution
expected filesystem format forward_list fstream functional future initializer_list iomanip ios iosfwd iostream istream
iterator latch limits list locale map mdspan memory memory_resource mutex new numbers numeric optional ostream print
queue random ranges ratio regex scoped_allocator semaphore set shared_mutex source_location span spanstream sstream
stack stacktrace stdexcept stdfloat stop_token streambuf string string_view strstream syncstream system_error thread
tuple type_traits typeindex typeinfo unordered_map unordered_set utility valarray variant vector version
""".split())
C_HEADERS = frozenset("""
assert.h complex.h ctype.h errno.h fenv.h float.h inttypes.h iso646.h limits.h locale.h math.h stdalign.h stdarg.h
stdatomic.h stdbool.h stddef.h stdint.h stdio.h stdlib.h string.h strings.h tgmath.h time.h uchar.h wchar.h wctype.h
alloca.h malloc.h omp.h
""".split())
# the compiler's intrinsics: x86 (immintrin.h and the per-extension headers it includes), arm
_INTRINSICS = re.compile(r"^(\w*intrin\.h|mm_malloc\.h|mm3dnow\.h|cpuid\.h|arm_(neon|sve|fp16|bf16|acle)\.h)$")
# load_inline: the torch C++ API (torch/extension.h is the verifier's own, without Python: see inline_binding.py)
_TORCH_HEADERS = re.compile(
    r"^(torch/(extension|torch|all|types)\.h"
    r"|ATen/(ATen|Dispatch|Dispatch_v2|Parallel|OpMathType|Tensor|TensorAccessor|TensorUtils|AccumulateType|"
    r"Functions|TensorOperators|ExpandUtils|WrapDimUtils|ScalarOps|TensorIndexing|DimVector|Utils)\.h"
    r"|ATen/cpu/vec/[\w/]+\.h|ATen/core/(Tensor|TensorAccessor|TensorBody|ScalarType|DimVector)\.h"
    r"|c10/util/[\w/]+\.h|c10/core/(ScalarType|ScalarTypeToTypeMeta|TensorOptions|Scalar|Device|DeviceType|Layout|"
    r"MemoryFormat|SymInt|SymIntArrayRef)\.h|c10/macros/\w+\.h)$")


def header_allowed(name: str, kind: str) -> bool:
    """May the candidate's own lines include header ``name`` (its path below an include directory)?"""
    if name in CXX_HEADERS or name in C_HEADERS or _INTRINSICS.match(name):
        return True
    return kind == "inline" and bool(_TORCH_HEADERS.match(name))


HEADER_HINT = {
    "cpp": "the C++ standard library, the C headers of the standard (math.h, stdint.h, ...), omp.h and the "
           "compiler's intrinsics headers (immintrin.h, ...)",
    "inline": "<torch/extension.h> (torch/torch.h, ATen/ATen.h, ATen/Dispatch.h, ATen/Parallel.h, ATen/cpu/vec/, "
              "c10/util/), the C++ standard library, the C headers of the standard, omp.h and the compiler's "
              "intrinsics headers",
}

# --- attributes and pragmas -------------------------------------------------------------------------------

ATTRIBUTES = frozenset("""
aligned always_inline noinline hot cold unused maybe_unused used noreturn pure const flatten optimize target
vector_size packed may_alias nodiscard likely unlikely fallthrough deprecated warn_unused_result nonnull
returns_nonnull malloc alloc_size alloc_align assume_aligned format format_arg visibility nothrow leaf artificial
gnu_inline no_instrument_function noclone noipa mode transparent_union cleanup access nonstring uninitialized assume
no_unique_address carries_dependency sentinel error warning designated_init externally_visible no_stack_protector
no_split_stack no_sanitize no_sanitize_address no_sanitize_thread no_sanitize_undefined nocommon common
tls_model unavailable noinit expected_throw
""".split())
# [[gnu::x]], [[omp::directive(...)]]: the namespace is not the attribute
ATTRIBUTE_NAMESPACES = frozenset({"gnu", "omp", "clang", "__gnu__"})
# #pragma <first word> [<second word>] allowed in the candidate's lines
PRAGMAS = frozenset({"omp", "GCC unroll", "GCC ivdep", "GCC optimize", "GCC target", "GCC push_options",
                     "GCC pop_options", "GCC reset_options", "GCC diagnostic", "GCC novector", "message", "unroll",
                     "once", "pack", "STDC"})

# --- instructions -----------------------------------------------------------------------------------------

_GP = frozenset("""
mov movabs movzx movsx movsxd movbe xchg cmpxchg cmpxchg8b cmpxchg16b xadd bswap push pop lea leave enter
add adc adcx adox sub sbb imul mul mulx idiv div neg inc dec cmp test and andn or xor not
shl shr sar sal rol ror rcl rcr shld shrd sarx shlx shrx rorx bt bts btr btc bsf bsr lzcnt tzcnt popcnt
bextr blsi blsmsk blsr bzhi pdep pext crc32 cbw cwde cdqe cwd cdq cqo
stos stosb stosw stosd stosq movs movsb movsw movsd movsq cmps cmpsb cmpsw cmpsd cmpsq scas scasb scasw scasd scasq
lods lodsb lodsw lodsd lodsq lahf sahf clc stc cmc cld std
call ret jmp loop loope loopne jrcxz jecxz nop endbr64 endbr32 pause ud2 lfence sfence mfence
clflush clflushopt clwb cldemote rdrand rdseed ldmxcsr stmxcsr vldmxcsr vstmxcsr emms femms
""".split())
_JCC = re.compile(r"^(j[a-z]{1,4}|cmov[a-z]{1,4}|set[a-z]{1,4}|prefetch\w*)$")
# x87: every f-mnemonic (arithmetic, loads/stores, control word, constants)
_X87 = re.compile(r"^f[a-z0-9]+$")
# SSE/AVX/AVX-512 and their integer forms: the v- and p- spellings (objdump spells AVX's compare predicates
# after an underscore: vcmpgt_oqps), and SSE's unprefixed ones
_SIMD = re.compile(
    r"^(v[a-z0-9]+(_[a-z0-9]+)?|p[a-z0-9]+|(add|sub|mul|div|min|max|sqrt|rsqrt|rcp|and|andn|or|xor|cmp|comi|ucomi|mov|shuf|unpck|"
    r"cvt|round|blend|dp|extract|insert|hadd|hsub|addsub|lddqu|maskmov|mpsadbw|aes|sha|gf2p8|pclmul)[a-z0-9]*"
    r"|k(and|andn|or|xor|xnor|not|mov|add|shiftl|shiftr|test|ortest|unpck)[bwdq]{1,2})$")  # AVX-512 opmasks
# in those families, the ones that are not ordinary computation: VMX, protection keys, platform config,
# processor trace, user interrupts, user wait, direct stores
_NOT_COMPUTE = frozenset({
    "vmcall", "vmclear", "vmfunc", "vmlaunch", "vmload", "vmmcall", "vmptrld", "vmptrst", "vmread", "vmresume",
    "vmrun", "vmsave", "vmwrite", "vmxoff", "vmxon", "verr", "verw", "pconfig", "ptwrite", "pvalidate", "psmash",
    "movdir64b", "movdiri", "monitor", "monitorx", "mwait", "mwaitx", "fxch4", "fstp1",
    # processor-state save areas (x87's f-family spells them too): xsave's header holds XCOMP_BV (= XCR0, what
    # xgetbv reads: red-team rt5_xsavec_reads_xcr0), fxsave's holds MXCSR_MASK; no compiler emits them for a kernel
    "fxsave", "fxsave64", "fxrstor", "fxrstor64", "fsave", "fnsave", "frstor"})


def instruction_allowed(mnemonic: str) -> bool:
    """Is ``mnemonic`` (Intel syntax, prefixes stripped) one of the families of ordinary compiled code?"""
    if mnemonic in _NOT_COMPUTE:
        return False
    return (mnemonic in _GP or bool(_JCC.match(mnemonic)) or bool(_X87.match(mnemonic))
            or bool(_SIMD.match(mnemonic)))


# what the instructions outside the families give access to (feedback only: the rule is the families above)
INSTRUCTION_WHAT = {
    "syscall": "a system call", "sysenter": "a system call", "int": "an interrupt (a system call on x86)",
    "int3": "a debug trap", "into": "an interrupt", "rdtsc": "the time-stamp counter", "rdtscp": "the time-stamp "
    "counter", "rdpmc": "a performance counter", "rdpid": "the processor id", "wrpkru": "memory protection keys",
    "rdpkru": "memory protection keys", "wrfsbase": "the thread pointer (FS base)", "wrgsbase": "the GS base",
    "rdfsbase": "the thread pointer (FS base)", "rdgsbase": "the GS base", "xbegin": "transactional memory",
    "xend": "transactional memory", "xabort": "transactional memory", "xtest": "transactional memory",
    "rdsspq": "the shadow-stack pointer", "rdsspd": "the shadow-stack pointer", "umonitor": "user-mode waiting", "umwait": "user-mode waiting", "tpause": "user-mode waiting",
    "cpuid": "the processor's identity (model, features, hypervisor)", "xgetbv": "the processor's enabled state "
    "(host features)", "(bad)": "bytes that are not instructions",
    **dict.fromkeys(("xsave", "xsave64", "xsavec", "xsavec64", "xsaveopt", "xsaveopt64", "xsaves", "xsaves64",
                     "xrstor", "xrstor64", "xrstors", "xrstors64"), "the processor's state save area (its header is "
                                                                    "the enabled state, XCR0: host features)"),
    **dict.fromkeys(("fxsave", "fxsave64", "fxrstor", "fxrstor64", "fsave", "fnsave", "frstor"),
                    "the processor's state save area (host features)"),
    **dict.fromkeys(("sgdt", "sidt", "sldt", "smsw", "str", "lsl", "lar"), "a descriptor-table or control register "
                                                                          "(the host's kernel layout, the CPU number)"),
}

# --- definitions -------------------------------------------------------------------------------------------

RESERVED_NAMESPACES = ("std::", "__gnu_cxx::", "__cxxabiv1::", "at::", "c10::", "torch::", "caffe2::", "pybind11::",
                       "typeinfo for std::", "vtable for std::")
