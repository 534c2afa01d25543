"""The binary judge: what a candidate's native code *is* once compiled, judged against positive lists.

The candidate's C++ is compiled as a translation unit and object of its own (native_build.py); for
``load_inline`` the Python binding is a separate object the verifier generates from the exported functions'
types (inline_binding.py), so the candidate's object contains no binding code and needs no Python at all.
The facts of that object (binary_facts.py) are ruled on here:

1. **what it reaches** -- every undefined symbol must be on the allow-list: libc's memory, string, character
   and stderr functions, every function libm/libmvec define, libgcc's arithmetic helpers, OpenMP's runtime
   and its thread-team queries by name (not its settings, clock or host queries), the C++ runtime without threads, clocks, files or the standard streams; for
   ``load_inline`` in addition libtorch's tensor API by name (data pointers, sizes, options, TORCH_CHECK's
   failure path, the parallel-for helpers) and the ATen operators that only allocate, view or copy
   (op_recorder.ALLOWED_OPS, through ``at::_ops::<op>::call``). No Python symbol at all, no pybind11, no
   out-of-line computing method (``at::Tensor::relu_``), no dispatcher, no TorchScript, no BLAS;
2. **what it executes** -- every instruction of its code is in the families of ordinary compiled code
   (native_allowlists.instruction_allowed): no system call, interrupt, time-stamp or performance counter,
   protection key, FS/GS base, transactional memory, user wait or processor identity (``cpuid``, ``xgetbv``),
   however it was spelled (an inline header function such as <cpuid.h>'s ``__get_cpuid`` included);
3. **what it defines** -- its own names only: no strong definition in std::, at::, c10::, torch::,
   pybind11:: or of the Python API, no indirect function (ifunc);
4. **what its own lines are, after preprocessing** -- only allow-listed headers included directly (and no
   file outside a system directory entered at all), only allow-listed attributes and pragmas, no inline
   assembly, no ``#line`` (which would relabel the candidate's lines as a header's); for ``load_inline`` the
   candidate's own lines do not name torch's Python bridge or dispatcher internals (header code reaches them
   legitimately, and inline header code shows in no symbol table: this one rule is a list of names).

No rule exempts any line. The judge is pure: facts in, findings out.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from evokernel.verifier.trusted import native_allowlists as allow
from evokernel.verifier.trusted.binary_facts import Facts
from evokernel.verifier.trusted.findings import Finding

JUDGE_VERSION = "binary-judge-4"  # 3: std::__ internals by a positive list (rt10); 4: std:: facilities (rt11)


# ---------------------------------------------------------------------------------------------------
# the candidate's own lines

_ASM = {"asm", "__asm", "__asm__"}
# load_inline: torch's bridge to the Python interpreter and its dispatcher, as named in its headers (reached by
# inline code, which no symbol shows)
_TORCH_INTERNALS = {"getGlobalPyInterpreter", "PyInterpreter", "PyInterpreterVTable", "pyobj_slot", "PyObjectSlot",
                    "load_pyobj", "pyobj_interpreter", "python_dispatcher", "PythonDispatcherTLS", "SafePyObject",
                    "PythonTLSSnapshot", "TorchDispatchModeTLS", "PyHandleCache", "incref_pyobject",
                    "decref_pyobject", "redispatch", "Dispatcher", "OperatorHandle", "findSchema", "findSchemaOrThrow",
                    "callBoxed", "ExcludeDispatchKeyGuard", "IncludeDispatchKeyGuard", "AutoDispatchBelowAutograd",
                    "AutoDispatchBelowADInplaceOrView", "AutoDispatchSkipFunctionalize", "_AutoDispatchBelowAutograd",
                    "tls_set_dispatch_key_excluded", "tls_set_dispatch_key_included", "DispatchKeyGuard", "jit",
                    "_force_tls_local_dispatch_key_set", "raw_local_dispatch_key_set"}
_AT_BYPASS = {"native", "cpu", "meta", "cpublas", "vml", "compositeexplicitautograd", "compositeimplicitautograd",
              "compositeexplicitautogradnonfunctional", "mkldnn", "fbgemm"}


def attribute_names(tokens: list[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """The attribute *names* of ``__attribute__((a, b(args)))``, ``__declspec(...)`` and ``[[ns::a(args), b]]``
    (not their arguments: ``format(printf, 1, 2)`` names ``format``)."""
    i, n = 0, len(tokens)
    while i < n:
        line, tok = tokens[i]
        if tok in ("__attribute__", "__attribute", "__declspec") and i + 1 < n and tokens[i + 1][1] == "(":
            depth, j, want = 0, i + 1, tok == "__declspec"
            while j < n:
                t = tokens[j][1]
                if t == "(":
                    depth += 1
                    want = depth == (1 if tok == "__declspec" else 2)
                elif t == ")":
                    depth -= 1
                    if depth == 0:
                        break
                elif t == ",":
                    want = depth == (1 if tok == "__declspec" else 2)
                elif want and re.match(r"^[A-Za-z_]\w*$", t):
                    yield tokens[j]
                    want = False
                j += 1
            i = j
        elif tok == "[[":
            depth, j, want = 0, i + 1, True
            if j + 2 < n and tokens[j][1] == "using" and tokens[j + 2][1] == ":":
                j += 3  # [[using gnu: a, b]]
            while j < n and not (tokens[j][1] == "]]" and depth == 0):
                t = tokens[j][1]
                if t in "([{":
                    depth += 1
                elif t in ")]}":
                    depth -= 1
                elif t == "," and depth == 0:
                    want = True
                elif want and depth == 0 and re.match(r"^[A-Za-z_]\w*$", t):
                    if j + 1 < n and tokens[j + 1][1] == "::":
                        if t not in allow.ATTRIBUTE_NAMESPACES:
                            yield tokens[j]  # an unknown attribute namespace
                        j += 2
                        continue
                    yield tokens[j]
                    want = False
                j += 1
            i = j
        i += 1


def pragmas(tokens: list[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """``#pragma`` lines of the candidate (``_Pragma`` operators appear as such lines after preprocessing), as
    (line, first word [+ second word for GCC/clang pragmas])."""
    for k, (line, tok) in enumerate(tokens):
        if tok == "pragma" and k and tokens[k - 1][1] == "#" and tokens[k - 1][0] == line:
            words = [t for ln, t in tokens[k + 1:k + 3] if ln == line]
            if not words:
                continue
            yield line, (" ".join(words[:2]) if words[0] in ("GCC", "clang") and len(words) > 1 else words[0])


def _include_name(path: str, include_dirs: tuple[str, ...]) -> str:
    """A resolved header path as the name it is included by (below the deepest include directory)."""
    norm = str(Path(path))
    best = ""
    for d in include_dirs:
        d = d.rstrip("/") + "/"
        if norm.startswith(d) and len(d) > len(best):
            best = d
    return norm[len(best):] if best else norm


def token_findings(facts: Facts, kind: str, include_dirs: tuple[str, ...] = ()) -> list[Finding]:
    found: dict[str, Finding] = {}

    def add(rule: str, line: int, message: str) -> None:
        found.setdefault(rule, Finding(rule, line, message))

    for line in facts.line_directives:
        add("native-line-directive", line, "#line directives are not allowed (they relabel the candidate's code)")
    for path in facts.includes:
        add("native-include", 0, f"the code includes {Path(path).name!r}, which is not a system header: "
                                 "include only the C++ standard library and system headers")
    for line, path in facts.direct_includes:
        name = _include_name(path, include_dirs or default_include_dirs(kind))
        if not allow.header_allowed(name, kind):
            add("native-header", line, f"#include <{name}> is not allowed; a kernel may include "
                                       f"{allow.HEADER_HINT.get(kind, allow.HEADER_HINT['cpp'])}")
    toks = facts.tokens
    for line, name in attribute_names(toks):
        if name.strip("_") not in allow.ATTRIBUTES and name not in allow.ATTRIBUTES:
            add("native-attribute", line, f"the attribute {name.strip('_')!r} is not allowed (load-time code, custom "
                                          "sections, aliases and weak symbols are how a kernel hides work)")
    for line, what in pragmas(toks):
        if what not in allow.PRAGMAS and what.split(" ")[0] not in allow.PRAGMAS:
            add("native-pragma", line, f"#pragma {what} is not allowed (allowed: omp, GCC unroll/ivdep/optimize/"
                                       "target/push_options/pop_options/diagnostic)")
    for i, (line, tok) in enumerate(toks):
        if tok in _ASM:
            add("native-asm", line, f"inline assembly is not allowed (after preprocessing the code contains {tok!r});"
                                    " write C++ and intrinsics")
        elif kind == "inline" and tok in _TORCH_INTERNALS:
            add("native-torch-internal", line, f"{tok!r} is torch's bridge to the Python interpreter or its "
                                               "dispatcher; call your own loops on data_ptr() instead")
        elif kind == "inline" and tok in _AT_BYPASS and i > 1 and toks[i - 1][1] == "::" and toks[i - 2][1] == "at":
            add("native-torch-internal", line, f"at::{tok}:: calls ATen's kernels behind the dispatcher")
    return sorted(found.values(), key=lambda f: f.line)


@functools.lru_cache(maxsize=None)
def compiler_include_dirs() -> tuple[str, ...]:
    """The C++ compiler's own include directories (``g++ -E -v``)."""
    import subprocess

    try:
        err = subprocess.run(["g++", "-xc++", "-E", "-v", "-"], input="", capture_output=True, text=True,
                             timeout=60).stderr
    except (OSError, subprocess.TimeoutExpired):
        return ("/usr/include",)
    dirs, on = [], False
    for line in err.splitlines():
        if line.startswith("#include <...> search starts here"):
            on = True
        elif line.startswith("End of search list"):
            break
        elif on and line.startswith(" "):
            dirs.append(str(Path(line.strip()).resolve()))
    return tuple(dirs) or ("/usr/include",)


def default_include_dirs(kind: str) -> tuple[str, ...]:
    if kind != "inline":
        return compiler_include_dirs()
    from evokernel.verifier.trusted.inline_binding import torch_include_dirs

    return compiler_include_dirs() + tuple(torch_include_dirs())


# ---------------------------------------------------------------------------------------------------
# what the object executes and defines

def instruction_findings(facts: Facts) -> list[Finding]:
    bad = {m: v for m, v in facts.instructions.items() if not allow.instruction_allowed(m)}
    if not bad:
        return []
    shown = ", ".join(f"{m} ({allow.INSTRUCTION_WHAT.get(m, 'not an instruction of ordinary compiled code')}) in "
                      f"{first or '?'}" for m, (_, first) in sorted(bad.items())[:4])
    return [Finding("native-instruction", 0, f"the compiled code executes {shown}; a kernel is ordinary arithmetic, "
                                             "memory and SIMD instructions")]


# defined, global, not weak (nm letters; "u", GNU-unique, holds the static locals of inline functions and is
# as shared as a weak definition); "i": an indirect function
_STRONG = set("TDBRGSC")


def definition_findings(facts: Facts) -> list[Finding]:
    bad: list[str] = []
    for name, dem, kind in facts.defined:
        if kind == "i":
            bad.append(f"{dem or name} (an indirect function, resolved at load time)")
        elif kind in _STRONG and (dem.startswith(allow.RESERVED_NAMESPACES) or re.match(r"^_?(Py|THP)", name) or re.match(r"^(_?Py|THP)", dem or "")):
            bad.append(dem or name)
    if not bad:
        return []
    return [Finding("native-definition", 0, "the code defines names it does not own: " + ", ".join(sorted(bad)[:4]) +
                    (" ..." if len(bad) > 4 else "") + "; define your own functions (specialising or replacing the "
                    "library's and the Python API's names is not allowed)")]


# ---------------------------------------------------------------------------------------------------
# what the object reaches

_LIBC_ALLOWED = {
    # memory and strings
    "malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign", "memalign", "valloc",
    "memcpy", "memmove", "memset", "memcmp", "memchr", "memrchr", "strlen", "strnlen", "strcmp", "strncmp",
    "strcpy", "strncpy", "strcat", "strncat", "strchr", "strrchr", "strstr", "strdup", "strndup", "strtol",
    "strtoll", "strtoul", "strtoull", "strtod", "strtof", "atoi", "atol", "atof", "abs", "labs", "llabs",
    "qsort", "bsearch", "rand", "srand", "rand_r", "__memcpy_chk", "__memmove_chk", "__memset_chk",
    "__strcpy_chk", "__strcat_chk", "__strncpy_chk", "__explicit_bzero_chk", "bzero", "explicit_bzero",
    "__ctype_b_loc", "__ctype_tolower_loc", "__ctype_toupper_loc", "__isoc99_sscanf", "__isoc23_strtol",
    "__isoc23_strtoll", "__isoc23_strtoul", "__isoc23_strtoull", "sscanf", "__errno_location",
    # printing to stderr and to strings
    "stderr", "fprintf", "__fprintf_chk", "vfprintf", "__vfprintf_chk", "fputs", "fputc", "putc", "fwrite",
    "fflush", "snprintf", "__snprintf_chk", "vsnprintf", "__vsnprintf_chk", "sprintf", "__sprintf_chk",
    "vsprintf", "__vsprintf_chk", "strerror",
    # hooks the compiler emits
    "__stack_chk_fail", "__assert_fail", "abort", "__cxa_finalize", "__cxa_atexit", "atexit", "__tls_get_addr",
    "__libc_single_threaded", "__gmon_start__", "_ITM_registerTMCloneTable", "_ITM_deregisterTMCloneTable",
    "_Unwind_Resume", "__gxx_personality_v0", "__dynamic_cast", "__cxa_demangle", "_GLOBAL_OFFSET_TABLE_",
    "__dso_handle",
    # locks std::call_once, static locals and thread_local need (no thread creation)
    "pthread_mutex_lock", "pthread_mutex_unlock", "pthread_mutex_trylock", "pthread_mutex_init",
    "pthread_mutex_destroy", "pthread_once", "pthread_key_create", "pthread_key_delete", "pthread_getspecific",
    "pthread_setspecific", "__pthread_key_create", "pthread_cond_wait", "pthread_cond_signal",
    "pthread_cond_broadcast", "pthread_cond_destroy", "pthread_rwlock_rdlock", "pthread_rwlock_wrlock",
    "pthread_rwlock_unlock", "pthread_self", "pthread_equal",
}
# OpenMP: the runtime the compiler's pragmas call (GOMP_*), locks, and the queries about the current thread team --
# by name: omp_get_wtime/wtick are clocks, omp_get_num_procs/place_*/partition_* describe the host's processors
_OMP_QUERIES = frozenset({"omp_get_thread_num", "omp_get_num_threads", "omp_get_max_threads", "omp_get_level",
                          "omp_get_active_level", "omp_get_team_size", "omp_get_ancestor_thread_num", "omp_in_parallel",
                          "omp_in_final"})
_OMP_ALLOWED = re.compile(r"^(GOMP_(?!critical_name)\w+|omp_(init|set|unset|test|destroy)_(nest_)?lock)$")
# C++ runtime (demangled): allowed prefixes, refused ones checked first
_CXX_REFUSED = re.compile(
    r"^(std::thread|std::jthread|std::this_thread|std::chrono|std::filesystem|std::__cxx11::basic_[io]?fstream|"
    r"std::basic_[io]?fstream|std::basic_filebuf|std::__basic_file|std::random_device|std::cout|std::wcout|"
    r"std::cin|std::wcin|std::clog|std::wclog|std::__future_base|std::condition_variable_any|"
    r"typeinfo for std::thread|vtable for std::thread)")
# The C++ library's internals: a name component after std:: that starts with __ is reserved to the implementation
# (std::__atomic_futex_unsigned_base is a futex wait with a wall-clock deadline). An object may reach only those the
# standard interface a kernel uses compiles into calls to, listed here (the inline namespace __cxx11 is no component).
_CXX_RESERVED = re.compile(r"\bstd::(?:__cxx11::)?(?!__cxx11::)(__\w+(?:::\w+)?)")
_CXX_INTERNALS = re.compile(r"^(__throw_\w+|__once_call(able)?|__glibcxx_assert_fail|__exception_ptr::\w+|"
                            r"__detail::(_Prime_rehash_policy|__prime_list|_List_node_base)|"
                            # stream insertion and extraction (operator<< of a C string: TORCH_CHECK's message)
                            # and number formatting's locale helpers
                            r"__ostream_insert|__istream_extract|__numeric_limits_base::\w+|__num_base::\w+|"
                            r"__verify_grouping|__numpunct_cache|__ctype_abstract_base|__codecvt_abstract_base)$")
# The C++ library by a positive list (rt11: std::locale("<name>") had glibc read the host's locale files behind a
# deny-list of prefixes): the first name component after std:: (and the inline namespace __cxx11) is one of these
# facilities -- exceptions and the runtime's support, strings and string streams (formatting to memory, with the
# facets that formatting reads from the default locale), containers, algorithms, numerics, memory, utilities,
# deterministic random engines and distributions, locks and atomics. Everything else is refused: files and streams
# on files, std::locale but its default, copy and "C" locale (which string streams construct: no file is read),
# named facets (*_byname), message catalogues, threads, clocks, random_device, the standard streams but cerr.
_STD_FACILITIES = frozenset("""
exception bad_alloc bad_array_new_length bad_cast bad_typeid bad_function_call bad_optional_access bad_variant_access
bad_weak_ptr bad_exception logic_error domain_error invalid_argument length_error out_of_range runtime_error
range_error overflow_error underflow_error system_error error_code error_condition error_category generic_category
system_category nested_exception terminate set_terminate get_terminate unexpected uncaught_exception
uncaught_exceptions rethrow_exception current_exception make_exception_ptr exception_ptr nothrow nothrow_t
align_val_t type_info get_new_handler set_new_handler destroying_delete_t
basic_string basic_string_view string string_view wstring char_traits to_string to_wstring stoi stol stoll stoul
stoull stof stod stold hash
basic_ostringstream basic_istringstream basic_stringstream basic_stringbuf basic_ostream basic_istream basic_iostream
basic_ios ios_base basic_streambuf endl ends flush ws cerr wcerr ctype num_put num_get numpunct use_facet has_facet
operator setprecision setw setfill fixed scientific hex dec oct boolalpha noboolalpha showpos uppercase left right
internal defaultfloat hexfloat resetiosflags setiosflags
vector array deque list forward_list map multimap set multiset unordered_map unordered_multimap unordered_set
unordered_multiset stack queue priority_queue bitset span initializer_list valarray slice gslice
_Rb_tree _Rb_tree_increment _Rb_tree_decrement _Rb_tree_insert_and_rebalance _Rb_tree_rebalance_for_erase
_Rb_tree_node_base _Hash_bytes _Fnv_hash_bytes _Hashtable _List_node_base _Sp_counted_base _Sp_make_shared_tag
_Sp_counted_ptr_inplace _Sp_counted_ptr _Sp_counted_deleter _Vector_base _Deque_base _Function_base _Function_handler
_Bit_iterator _Bit_const_iterator _Bit_reference _Bvector_base
sort stable_sort partial_sort partial_sort_copy nth_element min_element max_element minmax_element min max minmax
clamp fill fill_n copy copy_n copy_backward move move_backward swap swap_ranges iter_swap transform for_each
for_each_n find find_if find_if_not count count_if equal mismatch lower_bound upper_bound equal_range binary_search
reverse rotate unique remove remove_if replace replace_if merge inplace_merge includes set_union set_intersection
set_difference make_heap push_heap pop_heap sort_heap is_sorted partition stable_partition next_permutation
prev_permutation shuffle all_of any_of none_of generate generate_n search adjacent_find lexicographical_compare
accumulate inner_product partial_sum adjacent_difference iota reduce transform_reduce inclusive_scan exclusive_scan
gcd lcm midpoint lerp
complex abs fabs sqrt cbrt exp exp2 expm1 log log2 log10 log1p pow sin cos tan asin acos atan atan2 sinh cosh tanh
asinh acosh atanh erf erfc tgamma lgamma floor ceil round lround llround trunc rint lrint nearbyint fmod remainder
remquo fma fmin fmax fdim hypot isnan isinf isfinite isnormal signbit copysign nextafter nexttoward frexp ldexp modf
scalbn ilogb logb norm arg conj polar real imag proj numeric_limits
unique_ptr shared_ptr weak_ptr make_unique make_shared allocate_shared allocator allocator_traits default_delete
enable_shared_from_this align addressof launder get_temporary_buffer return_temporary_buffer uninitialized_copy
uninitialized_fill pointer_traits
pair tuple make_pair make_tuple tie get forward declval optional variant any function mem_fn bind ref cref
reference_wrapper invoke less greater less_equal greater_equal equal_to not_equal_to plus minus multiplies divides
modulus negate logical_and logical_or logical_not bit_and bit_or bit_xor integral_constant enable_if conditional
decay ratio iterator_traits reverse_iterator back_insert_iterator move_iterator distance advance next prev begin end
mersenne_twister_engine linear_congruential_engine subtract_with_carry_engine discard_block_engine
independent_bits_engine shuffle_order_engine uniform_int_distribution uniform_real_distribution normal_distribution
bernoulli_distribution generate_canonical seed_seq minstd_rand mt19937 mt19937_64
mutex recursive_mutex lock_guard unique_lock scoped_lock call_once once_flag condition_variable atomic atomic_flag
atomic_thread_fence atomic_signal_fence memory_order shared_mutex shared_lock
ostream istream iostream ostringstream istringstream stringstream streambuf stringbuf ios getline streamsize
istreambuf_iterator ostreambuf_iterator ostream_iterator istream_iterator back_inserter front_inserter inserter
type_index visit in_place monostate variant_alternative bad_any_cast exchange apply forward_as_tuple integer_sequence
index_sequence uninitialized_fill_n uninitialized_move destroy destroy_at construct_at bit_cast byte size data empty
ssize
""".split())
_STD_NAME = re.compile(r"^(?:typeinfo for |typeinfo name for |vtable for |VTT for |construction vtable for )?"
                       r"std::(?:__cxx11::)?(operator|\w+)")
# std::locale: the default, copy and "C" locale only (no name, so no locale file: a named one is newlocale's read)
_STD_LOCALE_ALLOWED = re.compile(r"^(?:std::locale::(?:locale\(\)|locale\(std::locale const&\)|~locale\(\)|"
                                 r"operator=\(std::locale const&\)|classic\(\)|id::_M_id\(\) const)|"
                                 r"(?:typeinfo for |vtable for )?std::locale::facet\b.*)$")


def _std_facility(qual: str, dem: str) -> str | None:
    """Why a C++ library name (std::...) is refused, or None: `_STD_FACILITIES`; a std::__ component was judged by
    the internals rule before this."""
    m = _STD_NAME.match(qual) or _STD_NAME.match(dem)
    if m is None:
        return None
    comp = m.group(1)
    if comp.startswith("__"):
        return None
    if comp == "locale":
        return None if _STD_LOCALE_ALLOWED.match(dem.split("@")[0]) else (
            "std::locale by name (a named locale reads the host's locale files; the default and \"C\" locales only)")
    if comp in _STD_FACILITIES:
        return None
    return ("a part of the C++ library outside its positive list (containers, algorithms, numerics, cmath, limits, "
            "memory, utilities, strings and string streams, exceptions, locks; no files, streams on files, "
            "named locales, message catalogues, threads or clocks)")


_CXX_ALLOWED = re.compile(
    r"^(operator new|operator delete|std::|typeinfo for |typeinfo name for |vtable for |VTT for |"
    r"__cxa_|__cxxabiv1::|__gnu_cxx::)")
# load_inline: libtorch by name (qualified names, without parameters or return types)
_TORCH_ALLOWED = re.compile(r"^(?:" + "|".join([
    r"at::TensorBase::((mutable_|const_)?data_ptr<[^()]*>|__dispatch_contiguous|toString|print|enforce_invariants|"
    r"fill_|zero_|name)$",
    r"at::Tensor::(new_empty|new_empty_symint|new_zeros|new_zeros_symint|new_full|narrow|select|expect_contiguous)$",
    r"at::(get_num_threads|get_thread_num|in_parallel_region|init_num_threads|get_num_interop_threads)$",
    r"at::internal::(set_thread_num|lazy_init_num_threads|invoke_parallel\w*|_parallel_run|GRAIN_SIZE)$",
    r"c10::(TensorImpl|UndefinedTensorImpl|StorageImpl|SymbolicShapeMeta|SymBool|SymInt|SymFloat|SymNode|"
    r"AutogradMetaInterface|intrusive_ptr_target|ParallelGuard|GradMode|AutoGradMode|AutogradState|InferenceMode|"
    r"Error|ValueError|IndexError|TypeError|NotImplementedError|EnforceFiniteError|OutOfMemoryError|LinAlgError|"
    r"Warning|WarningUtils|SourceLocation|Device|TensorOptions|Scalar|Half|BFloat16|DispatchKeySet|"
    r"impl::SizesAndStrides|Storage)::~?\w+(<[^()]*>)?$",
    r"c10::SmallVectorBase<[^()]*>::grow_pod$", r"c10::IValue::reportToTensorTypeError$",
    r"(\w[\w:<>, *&]* )?c10::detail::(torchCheckFail|torchInternalAssertFail|maybe_wrap_dim_slow<[^()]*>|_str\w*|"
    r"torchCheckMsgImpl)$",
    r"c10::(toString|warn|get_backtrace|demangle|str|typeMetaToScalarType|scalarTypeToTypeMeta|"
    r"impl::getGlobalPyInterpreter|impl::tls_local_dispatch_key_set)$",
    # torch's factory functions (torch::empty_like ...) hold an AutoDispatchBelowADInplaceOrView, inline: honest
    # load_inline code reaches these guards; a leaked one is caught at run time (sandboxed/dispatch_tls.py)
    r"c10::impl::(Exclude|Include)DispatchKeyGuard::~?(Exclude|Include)DispatchKeyGuard$",
    r"caffe2::(TypeMeta|detail)::\w+(<[^()]*>)?$",
    r"(typeinfo|typeinfo name|vtable) for (c10::\w*Error|c10::Warning\w*|torch::autograd::AutogradMeta|"
    r"c10::TensorImpl|c10::UndefinedTensorImpl|c10::AutogradMetaInterface|c10::intrusive_ptr_target)$",
]) + ")")
_OPS_CALL = re.compile(r"^at::_ops::(\w+)::(call|redispatch)\b")
_PY_SYMBOL = re.compile(r"^_?Py")


@dataclass
class SymbolPolicy:
    libm: frozenset[str]  # every function libm defines
    libgcc: frozenset[str] = frozenset()  # libgcc's helpers (128-bit and complex arithmetic, popcount ...)
    ops: dict[str, str] = field(default_factory=dict)  # at::_ops struct name -> operator name
    allowed_ops: frozenset[str] = frozenset()


def _category(name: str, dem: str) -> str | None:
    """Why a symbol is refused, by what it gives access to (for feedback an LLM can act on)."""
    n = name.lstrip("_")
    table = [
        (r"^(dl(open|sym|vsym|mopen|close|info|error|iterate_phdr)|_dl_)", "dynamic loading"),
        (r"^(f?open(64|at|at64)?|fopen|freopen|creat|read|write|pread|pwrite|close|unlink|rename|remove|mkdir|"
         r"stat|fstat|lstat|access|readlink|opendir|readdir|mmap|munmap|mprotect|memfd_create|shm_open|fdopen|"
         r"fread|fgets|getline|fscanf|ftruncate|truncate|sendfile|dup2?|pipe|fcntl|ioctl|__xstat\w*)", "files and memory mappings"),
        (r"^(socket|connect|bind|listen|accept|send|recv|getaddrinfo|gethostby)", "the network"),
        (r"^(fork|vfork|clone|exec|system|popen|posix_spawn|kill|raise|signal|sigaction|ptrace|wait|daemon|setsid|"
         r"prctl|sched_set|setpriority|nice|setrlimit|prlimit)", "processes and signals"),
        (r"^(pthread_(create|detach|kill|cancel|attr_setaffinity|setaffinity|setschedparam|sigmask)|thrd_create)",
         "thread creation"),
        (r"^(time|clock|gettimeofday|nanosleep|usleep|sleep|timer_|clock_gettime|clock_nanosleep|times)$|^clock_",
         "clocks and sleeping"),
        (r"^(getenv|secure_getenv|setenv|putenv|unsetenv|environ|clearenv)$", "the environment"),
        (r"^(syscall)$", "raw system calls"),
        (r"^(stdout|stdin|puts|printf|vprintf|putchar|__printf_chk|__vprintf_chk|getchar|scanf)$", "stdout/stdin"),
        (r"^(exit|_exit|_Exit|quick_exit|at_quick_exit)$", "exiting the process"),
        (r"^(omp_set_\w+|omp_pause_resource\w*)$", "changing OpenMP's thread settings"),
        (r"^omp_get_(wtime|wtick)$", "clocks and sleeping"),
        (r"^omp_get_\w+$", "OpenMP's view of the host (processors, places, devices); a kernel may ask "
                           "omp_get_thread_num/num_threads/max_threads"),
    ]
    for pattern, what in table:
        if re.match(pattern, n) or re.match(pattern, name):
            return what
    if dem.startswith(("std::thread", "std::jthread", "std::this_thread", "typeinfo for std::thread",
                       "vtable for std::thread")):
        return "thread creation"
    if dem.startswith("std::chrono"):
        return "clocks and sleeping"
    if dem.startswith(("std::filesystem", "std::basic_filebuf", "std::__basic_file")) or "fstream" in dem:
        return "files and memory mappings"
    if dem.startswith(("std::cout", "std::wcout", "std::cin", "std::wcin")):
        return "stdout/stdin"
    if _PY_SYMBOL.match(name):
        return "the Python interpreter"
    if dem.startswith("pybind11::"):
        return "the Python interpreter (pybind11)"
    return None


_SPECIAL = ("typeinfo", "vtable", "VTT", "operator", "guard variable", "construction vtable", "non-virtual thunk",
            "virtual thunk", "covariant return thunk", "transaction clone", "TLS")


def qualified_name(dem: str) -> str:
    """The function's qualified name without the return type c++filt prints for templates and without its
    parameters: ``float* at::TensorBase::data_ptr<float>() const`` -> ``at::TensorBase::data_ptr<float>``."""
    if dem.startswith(_SPECIAL):
        return dem
    depth, last_space, end = 0, -1, len(dem)
    for i, ch in enumerate(dem):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif ch == "(" and depth == 0:
            end = i
            break
        elif ch == " " and depth == 0:
            last_space = i
    return dem[last_space + 1:end] if last_space >= 0 else dem[:end]


def _without_return_type(qual: str) -> str:
    """``long c10::detail::maybe_wrap_dim_slow<long>`` -> ``c10::detail::maybe_wrap_dim_slow<long>``."""
    m = re.search(r"(?:^|\s)((at|c10|caffe2|torch)::.*)$", qual)
    return m.group(1) if m else qual


def _judge_symbol(name: str, dem: str, kind: str, policy: SymbolPolicy) -> str | None:
    if (name in _LIBC_ALLOWED or name in policy.libm or name in policy.libgcc or name in _OMP_QUERIES
            or _OMP_ALLOWED.match(name)):
        return None
    qual = qualified_name(dem)
    if kind == "inline":
        m = _OPS_CALL.match(qual)
        if m:
            if m.group(2) == "redispatch":
                return "the dispatcher below its Python layer (redispatch)"
            op = policy.ops.get(m.group(1), m.group(1))
            if op not in policy.allowed_ops:
                return "an ATen operator that computes (PyTorch doing the work; allowed: allocation, views, copies)"
            return None
        if _TORCH_ALLOWED.match(_without_return_type(qual)) or _TORCH_ALLOWED.match(dem):
            return None
    why = _category(name, dem)
    if why:
        return why
    if _CXX_REFUSED.match(dem) or _CXX_REFUSED.match(qual):
        return "a refused part of the C++ library (threads, clocks, files, stdout)"
    internal = [m.group(1) for m in _CXX_RESERVED.finditer(qual) if not _CXX_INTERNALS.match(m.group(1))]
    if internal:
        return ("an internal of the C++ library (a std::__ name, reserved to the implementation; use the standard "
                "interface)")
    std_why = _std_facility(qual, dem)
    if std_why:
        return std_why
    if _CXX_ALLOWED.match(qual) or _CXX_ALLOWED.match(dem):
        return None
    if re.match(r"^(at|c10|torch|caffe2)::", qual):
        if kind == "cpp":
            return "libtorch (load_cpp code works on raw pointers only)"
        return "a part of libtorch outside the tensor API a kernel may use (data pointers, sizes, allocation, views)"
    return "a function outside the native allow-list"


def symbol_findings(facts: Facts, kind: str, policy: SymbolPolicy) -> list[Finding]:
    refused: dict[str, list[str]] = {}
    for name, dem, _weak in facts.symbols:
        why = _judge_symbol(name, dem, kind, policy)
        if why:
            refused.setdefault(why, []).append(dem or name)
    findings = []
    for why, names in refused.items():
        shown = ", ".join(sorted(set(names))[:4]) + (" ..." if len(set(names)) > 4 else "")
        findings.append(Finding("native-symbol", 0, f"the built code reaches {why}: {shown}"))
    return findings


def judge(facts: Facts, kind: str, policy: SymbolPolicy, include_dirs: tuple[str, ...] = ()) -> list[Finding]:
    """Findings of the binary judge for one candidate object (``kind``: "cpp" or "inline")."""
    if facts.error:
        return [Finding("native-judge", 0, f"the build could not be judged: {facts.error}")]
    return (token_findings(facts, kind, include_dirs) + symbol_findings(facts, kind, policy)
            + definition_findings(facts) + instruction_findings(facts))


# ---------------------------------------------------------------------------------------------------
# the policy's data, read from this machine's libraries and torch

def _defined_functions(library: str) -> frozenset[str]:
    import subprocess

    try:
        path = subprocess.run(["gcc", f"-print-file-name={library}"], capture_output=True, text=True,
                              timeout=30).stdout.strip()
        args = ["nm", "--defined-only", "--format=posix", path]
        if not library.endswith(".a"):
            args.insert(1, "-D")
        out = subprocess.run(args, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    return frozenset(p[0].split("@", 1)[0] for line in out.splitlines()
                     if len(p := line.split()) >= 2 and p[1] in "TtWwi")  # glibc's libm: many are ifuncs


@functools.lru_cache(maxsize=None)
def libm_functions() -> frozenset[str]:
    """Every symbol libm and libmvec (the vectorised math the compiler may call) define."""
    return _defined_functions("libm.so.6") | _defined_functions("libmvec.so.1")


@functools.lru_cache(maxsize=None)
def libgcc_helpers() -> frozenset[str]:
    """libgcc's arithmetic helpers the compiler calls (128-bit division, complex multiplication, popcount ...)."""
    arithmetic = re.compile(r"^__((bid|dfp|binary)\w+|(abs|add|sub|mul|div|neg|pow|mod|udiv|umod|divmod|udivmod|ashl|ashr|"
                            r"lshr|cmp|ucmp|clz|ctz|clrsb|ffs|parity|popcount|bswap|fix|fixuns|float|floatun|floatuns|"
                            r"extend|trunc|eq|ne|ge|gt|le|lt|unord)[a-z]*\d?|(avx|sse)_(resms|savms)64\w*)$")
    return frozenset(n for n in _defined_functions("libgcc.a") if arithmetic.match(n))


@functools.lru_cache(maxsize=None)
def aten_op_structs() -> dict[str, str]:
    """``at::_ops`` struct name (``add_Tensor``) -> operator name (``add``), from torch's registry."""
    import torch

    table: dict[str, str] = {}
    for full in torch._C._dispatch_get_all_op_names():
        ns, _, rest = full.partition("::")
        if ns == "aten":
            op, _, overload = rest.partition(".")
            table[f"{op}_{overload}" if overload else op] = op
    return table


def policy(kind: str) -> SymbolPolicy:
    if kind != "inline":
        return SymbolPolicy(libm_functions(), libgcc_helpers())
    from evokernel.verifier.sandboxed.op_recorder import ALLOWED_OPS

    return SymbolPolicy(libm_functions(), libgcc_helpers(), aten_op_structs(), frozenset(ALLOWED_OPS))
