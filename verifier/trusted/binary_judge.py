"""The binary judge: what a candidate's native code *is* once built, not what its text looks like.

The text rules (native_rules.py) read the source as written; token pasting, macros, ``using namespace``,
digraphs and weak declarations get past them. The judge reads two facts the compiler produced, in the
build's sandbox, and rules on them in the trusted parent:

1. **The preprocessed candidate code** (``-save-temps``: the translation unit after every macro, paste
   and include is resolved). Only the lines that come from the candidate's own source are judged (the
   compiler's line markers say which); there it refuses inline assembly (``asm``), the time-stamp counter,
   load-time/linkage attributes (constructor, destructor, init_priority, section, weak, alias, ifunc,
   symver), the Python C API, and in ``load_inline`` code, pybind11's doors into Python (import, eval,
   attr ...) and dispatcher bypasses (at::native, at::cpu, redispatch ...). Every file the translation
   unit includes must be a system header (flag 3 of its marker): no host file, no job file. A ``#line``
   directive, which would relabel the candidate's lines as a header's, is refused in the source text.
2. **The undefined dynamic symbols** of the built library (``nm -D --undefined-only``, weak ones
   included, demangled by ``c++filt``): everything the library can reach outside itself at run time.
   ``load_cpp`` code may reach a positive allow-list: memory and string functions of libc, every function
   libm defines, OpenMP's GOMP_/omp_get_ entry points, the C++ runtime (operator new/delete, exceptions,
   type info, strings, streams to stderr), stderr printing and the assertion/stack-protector hooks. So
   no file, socket, process, thread, time, environment, dynamic-loading, raw-syscall or Python symbol,
   however the source spelled it. ``load_inline`` code may in addition reach libtorch's tensor API, the
   ATen operators that only allocate or reshape (op_recorder.ALLOWED_OPS; a computing operator such as
   ``at::_ops::relu::call`` is refused) and the Python API pybind11's binding code uses (which part of it
   depends on the optimisation level), but not the part that runs Python code (PyRun_*, PyImport_*,
   PyEval_Eval*, compiling, sys, starting threads); never a kernel behind the dispatcher (at::cpu,
   at::native, at::cpublas ...), the dispatcher itself, TorchScript, or BLAS. Naming the Python API in the
   candidate's own code is refused by the token rules, so the binding is the only user of it.

Both facts are extracted once per build and cached with it (``facts.json``). The judge is pure: facts in,
findings out.
"""
from __future__ import annotations

import functools
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

from evokernel.verifier.trusted.findings import Finding

FACTS_NAME = "facts.json"
JUDGE_VERSION = "binary-judge-1"
MAX_SYMBOLS = 20_000
MAX_PREPROCESSED_BYTES = 96 * 1024 * 1024


# ---------------------------------------------------------------------------------------------------
# facts


@dataclass
class Facts:
    symbols: list[tuple[str, str, bool]] = field(default_factory=list)  # (mangled, demangled, weak)
    tokens: list[tuple[int, str]] = field(default_factory=list)  # candidate identifiers/punctuators, line
    includes: list[str] = field(default_factory=list)  # files the TU entered that are not system headers
    line_directives: list[int] = field(default_factory=list)
    error: str = ""  # facts could not be extracted (the judge then refuses the build)

    def to_json(self) -> str:
        return json.dumps({"version": JUDGE_VERSION, "symbols": self.symbols, "tokens": self.tokens,
                           "includes": self.includes, "line_directives": self.line_directives,
                           "error": self.error})

    @classmethod
    def from_json(cls, text: str) -> "Facts":
        d = json.loads(text)
        if d.get("version") != JUDGE_VERSION:
            raise ValueError("facts of another judge version")
        return cls([tuple(s) for s in d["symbols"]], [tuple(t) for t in d["tokens"]], list(d["includes"]),
                   list(d["line_directives"]), str(d.get("error", "")))


# A marker of the preprocessed output: # <line> "<file>" <flags>
_MARKER = re.compile(r'^# (\d+) "((?:\\.|[^"\\])*)"((?: \d)*)\s*$')

# C++ tokens, in priority order: raw strings (which may hold quotes and span lines), strings, pp-numbers
# (which may hold digit separators), character literals, identifiers, ::, any other character.
_TOKEN = re.compile(
    r'(?P<raw>(?:u8|u|U|L)?R"(?P<d>[^()\\\s"]{0,16})\((?:.|\n)*?\)(?P=d)")'
    r'|(?P<str>(?:u8|u|U|L)?"(?:\\.|[^"\\\n])*")'
    r"|(?P<num>\.?\d(?:[eEpP][+-]|'[0-9A-Za-z_]|[\w.])*)"
    r"|(?P<chr>(?:u8|u|U|L)?'(?:\\.|[^'\\\n])*')"
    r"|(?P<id>[A-Za-z_]\w*)"
    r"|(?P<scope>::)"
    r"|(?P<punct>\[\[|\]\]|[^\s])"
)


# where system headers live: a header reached by <../../etc/x> through a system directory is marked as a
# system header by the compiler, but does not live here
SYSTEM_ROOTS = ("/usr/", sys.base_prefix.rstrip("/") + "/", sys.prefix.rstrip("/") + "/")


def candidate_lines(ii_text: str, own_file: str, line_range: tuple[int, int] | None = None
                    ) -> tuple[list[tuple[int, str]], list[str]]:
    """The lines of the preprocessed output that come from ``own_file`` (optionally only source lines
    ``line_range[0] <= n < line_range[1]``), as (source line, text); and every entered file that is not a
    system header."""
    out: list[tuple[int, str]] = []
    foreign: list[str] = []
    current, line = "", 0
    for raw in ii_text.split("\n"):
        if raw.startswith("# "):
            m = _MARKER.match(raw)
            if m:
                line, current = int(m.group(1)), m.group(2)
                flags = m.group(3).split()
                if "1" in flags and current != own_file and (
                        "3" not in flags or not os.path.normpath(current).startswith(SYSTEM_ROOTS)):
                    foreign.append(current)
                continue
        if current == own_file and (line_range is None or line_range[0] <= line < line_range[1]):
            out.append((line, raw))
        line += 1
    return out, foreign


def tokenize(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Identifier, ``::``, ``[[``/``]]`` and punctuation tokens with their source line (literals dropped)."""
    if not lines:
        return []
    text = "\n".join(t for _, t in lines)
    starts = [n for n, _ in lines]
    offsets, pos = [], 0
    for _, t in lines:
        offsets.append(pos)
        pos += len(t) + 1
    import bisect

    tokens: list[tuple[int, str]] = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind in ("raw", "str", "num", "chr", "d"):
            continue
        tokens.append((starts[bisect.bisect_right(offsets, m.start()) - 1], m.group(0)))
    return tokens


_LINE_DIRECTIVE = re.compile(r"^[ \t]*(?:#|%:)[ \t]*(?:line\b|\d)", re.M)


def line_directives(source: str) -> list[int]:
    """Lines of ``#line`` / ``# <n>`` directives (digraph ``%:`` and line splices included)."""
    from evokernel.cpu import strip_comments

    code = strip_comments(source.replace("\\\r\n", "").replace("\\\n", ""))
    return [code.count("\n", 0, m.start()) + 1 for m in _LINE_DIRECTIVE.finditer(code)]


def parse_symbols(raw_lines: Iterable[str], demangled_lines: Iterable[str]) -> list[tuple[str, str, bool]]:
    """``nm -D --undefined-only --format=posix`` lines and c++filt's output for their names."""
    rows = []
    for raw, dem in zip(raw_lines, demangled_lines):
        parts = raw.split()
        if len(parts) < 2:
            continue
        name = parts[0].split("@", 1)[0]
        rows.append((name, dem.strip().split("@", 1)[0], parts[1] in ("w", "v")))
        if len(rows) >= MAX_SYMBOLS:
            break
    return rows


SYMBOL_SCRIPT = ('nm -D --undefined-only --format=posix "$1" > "$2.raw" && '
                 'cut -d" " -f1 "$2.raw" | sed "s/@.*//" | c++filt > "$2.dem"')

Runner = Callable[[list[str], Path, float, Path], "tuple[int | None, str]"]


def extract(work: Path, lib: Path, preprocessed: Path | None, own_file: str, source: str,
            runner: Runner, line_range: tuple[int, int] | None = None) -> Facts:
    """Facts of one build in ``work`` (symbols via nm + c++filt in the build sandbox; the preprocessed
    output parsed here). The preprocessed file is deleted afterwards (it is large and not cached)."""
    facts = Facts(line_directives=line_directives(source))
    rc, log = runner(["/bin/sh", "-c", SYMBOL_SCRIPT, "sh", str(lib), str(work / "syms")], work, 60.0, work)
    try:
        if rc != 0:
            facts.error = f"could not read the library's symbols: {log.strip()[-300:]}"
        else:
            facts.symbols = parse_symbols((work / "syms.raw").read_text(errors="replace").splitlines(),
                                          (work / "syms.dem").read_text(errors="replace").splitlines())
        if preprocessed is None or not preprocessed.exists():
            facts.error = facts.error or "the compiler left no preprocessed output"
        elif preprocessed.stat().st_size > MAX_PREPROCESSED_BYTES:
            facts.error = "the preprocessed translation unit is too large to judge"
        else:
            lines, foreign = candidate_lines(preprocessed.read_text(errors="replace"), own_file, line_range)
            facts.tokens, facts.includes = tokenize(lines), foreign[:20]
    finally:
        for p in (work / "syms.raw", work / "syms.dem"):
            p.unlink(missing_ok=True)
        if preprocessed is not None:
            for p in preprocessed.parent.glob("*.ii"):
                p.unlink(missing_ok=True)
            for p in preprocessed.parent.glob("*.s"):
                p.unlink(missing_ok=True)
    return facts


# ---------------------------------------------------------------------------------------------------
# token rules (the candidate's own lines, after preprocessing)

_ASM = {"asm", "__asm", "__asm__"}
_TSC = {"__rdtsc", "__rdtscp", "_rdtsc", "__builtin_ia32_rdtsc", "__builtin_ia32_rdtscp",
        "__builtin_readcyclecounter", "_rdpmc", "__rdpmc", "__builtin_ia32_rdpmc"}
_BAD_ATTRIBUTES = {"constructor", "destructor", "init_priority", "section", "weak", "weakref", "alias", "ifunc",
                   "symver", "__constructor__", "__destructor__", "__init_priority__", "__section__", "__weak__",
                   "__weakref__", "__alias__", "__ifunc__", "__symver__"}
_PY_IDENT = re.compile(r"^_?Py[A-Z_a-z]\w*$")
_PYBIND_DOORS = {"import", "exec", "eval", "eval_file", "attr", "getattr", "setattr", "hasattr", "delattr",
                 "globals", "builtins", "module_", "module", "gil_scoped_acquire", "reinterpret_borrow",
                 "reinterpret_steal", "PYBIND11_EMBEDDED_MODULE", "scoped_interpreter"}
_DISPATCH_BYPASS = {"redispatch", "Dispatcher", "OperatorHandle", "findSchema", "findSchemaOrThrow", "callBoxed",
                    "ExcludeDispatchKeyGuard", "IncludeDispatchKeyGuard", "AutoDispatchBelowAutograd",
                    "AutoDispatchBelowADInplaceOrView", "AutoDispatchSkipFunctionalize",
                    "_AutoDispatchBelowAutograd", "tls_set_dispatch_key_excluded",
                    "tls_set_dispatch_key_included", "DispatchKeyGuard", "jit"}
_AT_BYPASS = {"native", "cpu", "meta", "cpublas", "vml", "compositeexplicitautograd",
              "compositeimplicitautograd", "compositeexplicitautogradnonfunctional", "mkldnn", "fbgemm"}


def _attribute_spans(tokens: list[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """Identifiers inside ``__attribute__((...))`` and ``[[...]]``."""
    i, n = 0, len(tokens)
    while i < n:
        line, tok = tokens[i]
        if tok in ("__attribute__", "__attribute", "__declspec") and i + 1 < n and tokens[i + 1][1] == "(":
            depth, j = 0, i + 1
            while j < n:
                t = tokens[j][1]
                depth += t == "("
                depth -= t == ")"
                if depth == 0:
                    break
                yield tokens[j]
                j += 1
            i = j
        elif tok == "[[":
            j = i + 1
            while j < n and tokens[j][1] != "]]":
                yield tokens[j]
                j += 1
            i = j
        i += 1


def token_findings(facts: Facts, kind: str, exempt_lines: set[int] | frozenset[int] = frozenset()) -> list[Finding]:
    found: dict[str, Finding] = {}

    def add(rule: str, line: int, message: str) -> None:
        found.setdefault(rule, Finding(rule, line, message))

    for line in facts.line_directives:
        add("native-line-directive", line, "#line directives are not allowed (they relabel the candidate's code)")
    for path in facts.includes:
        add("native-include", 0, f"the code includes {Path(path).name!r}, which is not a system header: "
                                 "include only the C++ standard library and system headers")
    toks = facts.tokens
    for line, tok in _attribute_spans(toks):
        if tok in _BAD_ATTRIBUTES:
            add("native-attribute", line, f"the attribute {tok.strip('_')!r} is not allowed (load-time code, "
                                          "custom sections and symbol aliasing are how a kernel hides work)")
    for i, (line, tok) in enumerate(toks):
        if tok in _ASM:
            add("native-asm", line, "inline assembly is not allowed (after preprocessing the code contains "
                                    f"{tok!r}); write C++ and intrinsics")
        elif tok in _TSC:
            add("native-time", line, f"reading the time-stamp counter ({tok}) is not allowed in a kernel")
        elif _PY_IDENT.match(tok) and line not in exempt_lines:
            add("native-python", line, f"the Python C API ({tok}) is not allowed in native code")
        elif kind == "inline" and line not in exempt_lines:
            prev = toks[i - 1][1] if i else ""
            prev2 = toks[i - 2][1] if i > 1 else ""
            if tok in _PYBIND_DOORS and prev in ("::", ".", "->"):
                add("native-python", line, f"pybind11's {tok!r} reaches the Python interpreter; an extension "
                                           "may only take and return tensors and numbers")
            elif tok in _DISPATCH_BYPASS:
                add("native-dispatch-bypass", line, f"{tok!r} bypasses or drives the dispatcher directly; call "
                                                    "your own loops on data_ptr() instead")
            elif tok in _AT_BYPASS and prev == "::" and prev2 == "at":
                add("native-dispatch-bypass", line, f"at::{tok}:: calls ATen's kernels behind the dispatcher")
    return sorted(found.values(), key=lambda f: f.line)


# ---------------------------------------------------------------------------------------------------
# symbol rules

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
    "_Unwind_Resume", "__gxx_personality_v0", "__dynamic_cast", "__cxa_demangle",
    # locks std::call_once, static locals and thread_local need (no thread creation)
    "pthread_mutex_lock", "pthread_mutex_unlock", "pthread_mutex_trylock", "pthread_mutex_init",
    "pthread_mutex_destroy", "pthread_once", "pthread_key_create", "pthread_key_delete", "pthread_getspecific",
    "pthread_setspecific", "__pthread_key_create", "pthread_cond_wait", "pthread_cond_signal",
    "pthread_cond_broadcast", "pthread_cond_destroy", "pthread_rwlock_rdlock", "pthread_rwlock_wrlock",
    "pthread_rwlock_unlock", "pthread_self", "pthread_equal",
}
_OMP_ALLOWED = re.compile(r"^(GOMP_(?!critical_name)\w+|omp_get_\w+|omp_in_parallel|omp_(init|set|unset|test|destroy)"
                          r"_(nest_)?lock)$")
# C++ runtime (demangled): allowed prefixes, refused ones checked first
_CXX_REFUSED = re.compile(
    r"^(std::thread|std::jthread|std::this_thread|std::chrono|std::filesystem|std::__cxx11::basic_[io]?fstream|"
    r"std::basic_[io]?fstream|std::basic_filebuf|std::__basic_file|std::random_device|std::cout|std::wcout|"
    r"std::cin|std::wcin|std::clog|std::wclog|std::__future_base|std::condition_variable_any|"
    r"std::__cxx11::basic_[io]?fstream|typeinfo for std::thread|vtable for std::thread)")
_CXX_ALLOWED = re.compile(
    r"^(operator new|operator delete|std::|typeinfo for |typeinfo name for |vtable for |VTT for |"
    r"__cxa_|__cxxabiv1::|__gnu_cxx::)")
_TORCH_REFUSED = re.compile(
    r"^(at::(native|cpu|meta|cpublas|vml|mkldnn|fbgemm|compositeexplicitautograd\w*|compositeimplicitautograd\w*|"
    r"redispatch)::|at::_ops::\w+::redispatch|c10::Dispatcher|c10::OperatorHandle|c10::impl::OperatorEntry|"
    r"torch::jit::|c10::impl::tls_set|fbgemm::|dnnl|mkl|cblas|at::globalContext|at::Context::)")
_TORCH_ALLOWED = re.compile(r"^(at::|c10::|caffe2::|torch::|pybind11::|vtable for (at|c10|torch|caffe2|pybind11)::|"
                            r"typeinfo for (at|c10|torch|caffe2|pybind11)::|VTT for (at|c10|torch)::)")
_OPS_CALL = re.compile(r"^at::_ops::(\w+)::(call|redispatch)\b")
_PY_SYMBOL = re.compile(r"^_?Py")
# the part of the Python API that runs or loads Python code, or reaches the interpreter's machinery
_PY_RUNS_CODE = re.compile(r"^_?Py(Run_|_Compile|_Main|_BytesMain|_Initialize|_Finalize|_NewInterpreter|_EndInterpreter|"
                           r"Import_|Eval_Eval|Eval_GetGlobals|Eval_GetLocals|Eval_GetFrame|Sys_|Thread_start|OS_|"
                           r"Marshal_|Code_|Function_|Frame_New|Interpreter_|_AtExit|Eval_SetTrace|Eval_SetProfile|"
                           r"Exec|_Exec)")


@dataclass
class SymbolPolicy:
    libm: frozenset[str]  # every function libm defines
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
    return None


def symbol_findings(facts: Facts, kind: str, policy: SymbolPolicy) -> list[Finding]:
    refused: dict[str, list[str]] = {}
    for name, dem, weak in facts.symbols:
        why = _judge_symbol(name, dem, kind, policy)
        if why:
            refused.setdefault(why, []).append(dem or name)
    findings = []
    for why, names in refused.items():
        shown = ", ".join(sorted(set(names))[:4]) + (" ..." if len(set(names)) > 4 else "")
        findings.append(Finding("native-symbol", 0, f"the built library reaches {why}: {shown}"))
    return findings


_SPECIAL = ("typeinfo", "vtable", "VTT", "operator", "guard variable", "construction vtable", "non-virtual thunk",
            "virtual thunk", "covariant return thunk", "transaction clone", "TLS")


def qualified_name(dem: str) -> str:
    """The function's qualified name without the return type c++filt prints for templates:
    ``float* at::TensorBase::data_ptr<float>() const`` -> ``at::TensorBase::data_ptr<float>() const``."""
    if dem.startswith(_SPECIAL):
        return dem
    depth, last_space = 0, -1
    for i, ch in enumerate(dem):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif ch == "(" and depth == 0:
            break
        elif ch == " " and depth == 0:
            last_space = i
    return dem[last_space + 1:] if last_space >= 0 else dem


def _judge_symbol(name: str, dem: str, kind: str, policy: SymbolPolicy) -> str | None:
    full, dem = dem, qualified_name(dem)
    if full != dem and (_TORCH_REFUSED.match(full) or _CXX_REFUSED.match(full)):
        dem = full  # judged by its refused spelling
    if name in _LIBC_ALLOWED or name in policy.libm or _OMP_ALLOWED.match(name):
        return None
    if kind == "inline":
        m = _OPS_CALL.match(dem)
        if m:
            if m.group(2) == "redispatch":
                return "the dispatcher below its Python layer (redispatch)"
            op = policy.ops.get(m.group(1), m.group(1))
            if op not in policy.allowed_ops:
                return ("an ATen operator that computes (PyTorch doing the work; allowed: allocation, views, "
                        "copies)")
            return None
        if _TORCH_REFUSED.match(dem) or re.match(r"^(cblas_|sgemm|dgemm|mkl_|dnnl_|openblas)", name):
            return "ATen's kernels, BLAS or the dispatcher behind the recorder"
        if _TORCH_ALLOWED.match(dem):
            return None
        if _PY_SYMBOL.match(name):
            return "Python code execution" if _PY_RUNS_CODE.match(name) else None
    why = _category(name, dem)
    if why:
        return why
    if _CXX_REFUSED.match(dem):
        return "a refused part of the C++ library (threads, clocks, files, stdout)"
    if _CXX_ALLOWED.match(dem):
        return None
    if kind == "cpp" and re.match(r"^(at|c10|torch|caffe2)::", dem):
        return "libtorch (load_cpp code works on raw pointers only)"
    return "a function outside the native allow-list"


def judge(facts: Facts, kind: str, policy: SymbolPolicy, source: str = "") -> list[Finding]:
    """Findings of the binary judge for one build (``kind``: "cpp" or "inline")."""
    if facts.error:
        return [Finding("native-judge", 0, f"the build could not be judged: {facts.error}")]
    exempt: set[int] = set()
    if kind == "inline" and source:
        # a hand-written PYBIND11_MODULE expands into Python API calls on its own line(s)
        for i, text in enumerate(source.split("\n"), start=2):  # main.cpp line 1 is torch's #include
            if "PYBIND11_MODULE" in text:
                exempt.add(i)
    return token_findings(facts, kind, exempt) + symbol_findings(facts, kind, policy)


# ---------------------------------------------------------------------------------------------------
# the policy's data, read from this machine's libraries and torch


def _defined_functions(library: str) -> frozenset[str]:
    import subprocess

    try:
        path = subprocess.run(["gcc", f"-print-file-name={library}"], capture_output=True, text=True,
                              timeout=30).stdout.strip()
        out = subprocess.run(["nm", "-D", "--defined-only", "--format=posix", path], capture_output=True,
                             text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    return frozenset(line.split()[0].split("@", 1)[0] for line in out.splitlines() if line.split())


@functools.lru_cache(maxsize=None)
def libm_functions() -> frozenset[str]:
    """Every symbol libm and libmvec (the vectorised math the compiler may call) define."""
    return _defined_functions("libm.so.6") | _defined_functions("libmvec.so.1")


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
        return SymbolPolicy(libm_functions())
    from evokernel.verifier.sandboxed.op_recorder import ALLOWED_OPS

    return SymbolPolicy(libm_functions(), aten_op_structs(), frozenset(ALLOWED_OPS))
