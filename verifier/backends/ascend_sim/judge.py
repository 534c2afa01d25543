"""The binary judge for Ascend C builds: what the candidate's kernel and host objects *are*, not what their text
looks like (the counterpart of `verifier/trusted/binary_judge.py` for CPU builds, whose generic pieces it reuses).

The emulator's counters, its address translation and its memory live in the same process as the kernel, so
only the Ascend C API may touch global memory and the Unified Buffer. Each translation unit (the kernel TU:
the build's prelude + kernel_src + the tiling header; the host TU: host_operator_src + the tiling header) is
compiled to its own object; the emulator runtime is a separate, trusted object. From each build the sandbox
keeps three facts, and this module rules on them with positive lists:

1. **Tokens the candidate spelled.** The TU preprocessed with ``-fdebug-cpp`` gives every token its spelling
   location, so a token written in the candidate's files (including one made by pasting in the candidate's own
   macro) is told apart from one written in an emulator header (the expansion of ``GET_TILING_DATA`` or
   ``ASCEND_IS_AIV``, which legitimately reaches the runtime). Refused: names of the emulator's private
   namespaces and machinery (``evk_sim``, ``evk_detail``, ``EVK_*``, any ``evk``-prefixed name but the
   registrars the API's own registration macros paste), stack and frame introspection and non-local jumps
   (``__builtin_frame_address``, ``__builtin_longjmp`` ...), and through `binary_judge.token_findings`:
   inline assembly, the time-stamp counter, load-time/linkage attributes, ``#line``, the Python C API.
2. **The files the TU read** (``-MD``): emulator headers, the candidate's own files, system headers; nothing else.
3. **The object's undefined symbols** (``nm --undefined-only``, demangled): what the candidate's code reaches
   outside itself. Allowed: what the emulator runtime defines (the API behind the headers), libm, libc's memory,
   string and conversion functions, printing to stderr (kernel and host) and stdout (host only: CANN prints a
   TilingFunc's output harmlessly), the C++ runtime (new/delete, exceptions, strings, containers). Everything
   else is refused by what it gives access to: memory mappings and protection (mmap, mprotect, pkey_*), raw
   system calls, files, the network, processes and signals, threads (OpenMP included: the emulated blocks are
   not thread-safe), clocks, the environment, dynamic loading, non-local jumps.

Raw global-memory access (dereferencing a ``GM_ADDR``, ``__gm__ T*``, ``GlobalTensor::address_`` or
``GetPhyAddr()``) is not a static rule: real operators hold such pointers (the tiling is read word by word through
one in Ascend's kernel-launch samples; GreaterEqual writes its unaligned tail through ``address_``), and the
emulator makes every such dereference fault at run time (the kernel's GM addresses point at an unbacked window:
``gm_raw_access``), which a text rule cannot match.

Facts are extracted once per build (build.py) and cached with it; the judge is pure: facts in, findings out.
"""
from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from evokernel.verifier.trusted import binary_facts, binary_judge
from evokernel.verifier.trusted.binary_facts import Facts
from evokernel.verifier.trusted.findings import Finding

JUDGE_VERSION = "ascend-judge-4"  # 2: __FILE__ names /build (-fmacro-prefix-map); 3: -Werror=date-time; 4: line directives (rt10)
MAX_TOKENS = 400_000

# the candidate's files as the build writes them -> the candidate string they hold
KERNEL_FILE, HOST_FILE = "kernel_src.cpp", "host_operator_src.cpp"
TILING_LABEL = "host_tiling_src"

# ---------------------------------------------------------------------------------------------------
# facts


@dataclass
class UnitFacts:
    """What one translation unit of a candidate is: per candidate string (kernel_src, host_operator_src,
    host_tiling_src) the tokens it spelled (as binary_facts.Facts, with its #line directives), the object's
    undefined symbols, the files the TU read that are neither emulator, candidate nor system headers."""
    unit: str  # "kernel" or "host"
    files: dict[str, Facts] = field(default_factory=dict)
    symbols: list[tuple[str, str, bool]] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)
    error: str = ""

    def to_json(self) -> str:
        return json.dumps({"version": JUDGE_VERSION, "unit": self.unit, "symbols": self.symbols,
                           "foreign": self.foreign, "error": self.error,
                           "files": {k: {"tokens": f.tokens, "line_directives": f.line_directives}
                                     for k, f in self.files.items()}})

    @classmethod
    def from_json(cls, text: str) -> "UnitFacts":
        d = json.loads(text)
        if d.get("version") != JUDGE_VERSION:
            raise ValueError("facts of another judge version")
        files = {k: Facts(tokens=[tuple(t) for t in v["tokens"]], line_directives=list(v["line_directives"]))
                 for k, v in d["files"].items()}
        return cls(str(d["unit"]), files, [tuple(s) for s in d["symbols"]], list(d["foreign"]), str(d["error"]))


# one token of `g++ -E -fdebug-cpp`: {P:<spelling file>;F:<includer>;L:<line>;C:<column>;S:..;M:..;E:..,LOC:..,R:..}
_DEBUG_TOKEN = re.compile(r"\{P:([^;{}]*);F:[^;{}]*;L:(\d+);C:\d+;S:\d+;M:[^;{}]*;E:\d+,LOC:\d+,R:\d+\}")


def spelled_tokens(debug_lines: str, labels: dict[str, str]) -> tuple[dict[str, list[tuple[int, str]]], int]:
    """The tokens of a ``-fdebug-cpp`` preprocessing (already reduced to the lines that hold a candidate token)
    whose spelling location is a candidate file: label -> [(line, token)], and the number of annotations seen.
    ``labels`` maps the candidate files' paths (as the compiler names them) to their labels; tokens spelled
    anywhere else (emulator headers, system headers, the build's prelude) are not the candidate's."""
    out: dict[str, list[tuple[int, str]]] = {label: [] for label in set(labels.values())}
    seen = 0
    for raw in debug_lines.split("\n"):
        parts = _DEBUG_TOKEN.split(raw)  # [before, file, line, text, file, line, text, ...]
        for i in range(1, len(parts) - 2, 3):
            seen += 1
            label = labels.get(os.path.normpath(parts[i]))
            if label is None:
                continue
            text = parts[i + 2]
            # the text after an annotation is the token's spelling plus the spacing before the next one; a
            # preprocessing directive kept in the output (#pragma) is spelled without annotations
            for line, tok in binary_facts.tokenize([(int(parts[i + 1]), text)]):
                out[label].append((line, tok))
    return out, seen


def parse_deps(text: str) -> list[str]:
    """The prerequisites of a ``-MD`` dependency file (``target: a b \\`` lines)."""
    body = text.replace("\\\n", " ")
    _, _, rest = body.partition(": ")
    return [p.replace("\\ ", " ") for p in re.split(r"(?<!\\)\s+", rest.strip()) if p]


def foreign_files(deps: list[str], work: Path, include: Path) -> list[str]:
    """Files the TU read that are neither the candidate's (the build folder), the emulator's headers, nor system
    headers. ``work`` and ``include`` are named as the build saw them (build.py passes its view's: ``/build`` and
    ``/opt/evk/ascend/include`` in the sandbox), like the paths of the ``-MD`` list."""
    ok_roots = (str(work).rstrip("/") + "/", str(include).rstrip("/") + "/", *binary_facts.SYSTEM_ROOTS)
    out = []
    for d in deps:
        path = os.path.normpath(d if os.path.isabs(d) else os.path.join(work, d))
        if not path.startswith(ok_roots):
            out.append(path)
    return out


# ---------------------------------------------------------------------------------------------------
# token rules (on the tokens the candidate spelled)

# the registrars the API's own registration macros paste from the candidate's names (REGISTER_TILING_DATA_CLASS,
# OP_ADD, IMPL_OP): spelled at the candidate's line, made by the emulator's macros (tests check this list against
# every paste in the headers)
PASTED_REGISTRARS = ("evk_tiling_reg_", "evk_op_def_reg_", "evk_impl_op_")
_INTERNAL = re.compile(r"^_*evk", re.IGNORECASE)
# stack/frame introspection and non-local jumps: how a kernel would find and leave the emulator's frames
_INTROSPECTION = {"__builtin_frame_address", "__builtin_return_address", "__builtin_extract_return_addr",
                  "__builtin_frob_return_addr", "__builtin_dwarf_cfa", "__builtin_stack_address",
                  "__builtin_setjmp", "__builtin_longjmp", "__builtin_unwind_init", "__builtin_eh_return",
                  "__builtin_eh_return_data_regno", "__builtin_init_dwarf_reg_size_table", "__builtin_apply",
                  "__builtin_apply_args", "__builtin_return", "__builtin_sponentry"}


def _token_findings(label: str, facts: Facts) -> list[Finding]:
    found: dict[str, Finding] = {}

    def add(rule: str, line: int, message: str) -> None:
        found.setdefault(rule, Finding(rule, line, f"{label}: {message}"))

    for f in binary_judge.token_findings(facts, "cpp"):
        if f.rule == "native-python":  # an Ascend C name may start with Py (a PyramidTile); the symbols decide
            continue
        add(f.rule, f.line, f.message)
    for line, tok in facts.tokens:
        if _INTERNAL.match(tok) and not tok.startswith(PASTED_REGISTRARS):
            add("ascend-internals", line, f"{tok!r} is part of the emulator's machinery (its counters, address "
                                          "translation and memory), not of Ascend C; after preprocessing the code "
                                          "names it (token pasting and macros included). Use the Ascend C API only")
        elif tok in _INTROSPECTION:
            add("ascend-introspection", line, f"{tok} (stack/frame introspection or a non-local jump) is not "
                                              "allowed in Ascend C code")
    return list(found.values())


# ---------------------------------------------------------------------------------------------------
# symbol rules (positive: what the object may reach)

_LIBC = frozenset({
    # memory, strings, conversions
    "malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign", "memalign",
    "memcpy", "memmove", "memset", "memcmp", "memchr", "memrchr", "strlen", "strnlen", "strcmp", "strncmp",
    "strcpy", "strncpy", "strcat", "strncat", "strchr", "strrchr", "strstr", "strdup", "strndup", "strtol",
    "strtoll", "strtoul", "strtoull", "strtod", "strtof", "atoi", "atol", "atof", "abs", "labs", "llabs",
    "qsort", "bsearch", "__memcpy_chk", "__memmove_chk", "__memset_chk", "__strcpy_chk", "__strcat_chk",
    "__strncpy_chk", "bzero", "__ctype_b_loc", "__ctype_tolower_loc", "__ctype_toupper_loc", "__isoc99_sscanf",
    "__isoc23_sscanf", "__isoc23_strtol", "__isoc23_strtoll", "__isoc23_strtoul", "__isoc23_strtoull", "sscanf",
    "__errno_location", "strerror",
    # formatting into strings; printing to stderr
    "snprintf", "__snprintf_chk", "vsnprintf", "__vsnprintf_chk", "sprintf", "__sprintf_chk", "vsprintf",
    "__vsprintf_chk", "stderr", "fprintf", "__fprintf_chk", "vfprintf", "__vfprintf_chk", "fputs", "fputc", "putc",
    "fwrite", "fflush",
    # hooks the compiler emits
    "__stack_chk_fail", "__assert_fail", "abort", "__cxa_finalize", "__cxa_atexit", "atexit", "__tls_get_addr",
    "__libc_single_threaded", "__gmon_start__", "_ITM_registerTMCloneTable", "_ITM_deregisterTMCloneTable",
    "_Unwind_Resume", "__gxx_personality_v0", "__dynamic_cast", "__cxa_demangle", "_GLOBAL_OFFSET_TABLE_",
    "__dso_handle",
    # the locks static locals and std::call_once use (no thread creation)
    "pthread_once", "pthread_mutex_lock", "pthread_mutex_unlock", "pthread_key_create", "pthread_getspecific",
    "pthread_setspecific", "__pthread_key_create",
})
# host code may print to stdout, as CANN's TilingFuncs do
_HOST_STDOUT = frozenset({"stdout", "printf", "__printf_chk", "vprintf", "__vprintf_chk", "puts", "putchar"})
_CXX_ALLOWED = re.compile(r"^(operator new|operator delete|std::|typeinfo for |typeinfo name for |vtable for |"
                          r"VTT for |__cxa_|__cxxabiv1::|__gnu_cxx::|construction vtable for |guard variable for )")
_CXX_REFUSED = re.compile(
    r"^(std::thread|std::jthread|std::this_thread|std::async|std::__future_base|std::chrono|std::filesystem|"
    r"std::(__cxx11::)?basic_[io]?fstream|std::basic_filebuf|std::__basic_file|std::random_device|"
    r"std::condition_variable|std::(__cxx11::)?basic_ifstream|std::(__cxx11::)?basic_ofstream|std::system|"
    r"typeinfo for std::thread|vtable for std::thread|std::cin|std::wcin|std::getenv)")
_STDOUT_STREAMS = re.compile(r"^std::(cout|wcout|clog|wclog)\b")

_CATEGORIES = [
    (r"^(mmap|mmap64|munmap|mprotect|pkey_\w+|madvise|posix_madvise|mremap|remap_file_pages|mlock\w*|munlock\w*|"
     r"shmat|shmdt|shmget|shmctl|memfd_create|msync|mincore|brk|sbrk)$", "memory mappings and protection"),
    (r"^(syscall)$", "raw system calls"),
    (r"^(dl(open|sym|vsym|mopen|close|info|error|iterate_phdr|addr)|_dl_\w+)$", "dynamic loading"),
    (r"^(f?open(64|at|at64)?|fopen(64)?|freopen|creat|read|write|pread\w*|pwrite\w*|readv|writev|close|unlink\w*|"
     r"rename\w*|remove|mkdir\w*|f?stat\w*|lstat\w*|access|readlink\w*|opendir|readdir\w*|fdopen|fread|fgets|getline|"
     r"fscanf|ftruncate\w*|truncate\w*|sendfile\w*|dup\d?|pipe\d?|fcntl\w*|ioctl|__xstat\w*|__fxstat\w*|lseek\w*|"
     r"tmpfile\w*|mkstemp\w*|fseek\w*|ftell\w*|rewind)$", "files"),
    (r"^(socket|connect|bind|listen|accept\d?|send\w*|recv\w*|getaddrinfo|gethostby\w+)$", "the network"),
    (r"^(fork|vfork|clone\d?|exec\w*|system|popen|pclose|posix_spawn\w*|kill|tgkill|raise|signal|sigaction|"
     r"sigprocmask|pthread_sigmask|ptrace|wait\w*|daemon|setsid|prctl|sched_\w+|setpriority|nice|setrlimit|"
     r"prlimit\w*|alarm|setitimer|sigaltstack)$", "processes and signals"),
    (r"^(pthread_\w+|thrd_\w+|GOMP_\w+|omp_\w+|__kmpc_\w+)$", "threads (the emulated blocks are not thread-safe)"),
    (r"^(time|clock|gettimeofday|nanosleep|usleep|sleep|timer_\w+|clock_\w+|times|__rdtsc|ftime)$",
     "clocks and sleeping"),
    (r"^(getenv|secure_getenv|setenv|putenv|unsetenv|environ|__environ|clearenv)$", "the environment"),
    (r"^(setjmp|_setjmp|__sigsetjmp|sigsetjmp|longjmp|_longjmp|siglongjmp|__longjmp_chk|getcontext|setcontext|"
     r"makecontext|swapcontext)$", "non-local jumps and contexts"),
    (r"^(stdout|stdin|printf|__printf_chk|vprintf|__vprintf_chk|puts|putchar|getchar|scanf|gets)$",
     "stdout/stdin (print debugging output to stderr)"),
    (r"^(exit|_exit|_Exit|quick_exit|at_quick_exit)$", "exiting the process"),
]


@dataclass(frozen=True)
class SymbolPolicy:
    runtime: frozenset[str]  # what the emulator runtime defines (the API the headers call)
    libm: frozenset[str]
    libgcc: frozenset[str] = frozenset()  # the compiler's arithmetic helpers (half conversions, 128-bit division)


def _category(name: str, dem: str) -> str | None:
    for pattern, what in _CATEGORIES:
        if re.match(pattern, name):
            return what
    if dem.startswith(("std::thread", "std::jthread", "std::this_thread", "std::async", "typeinfo for std::thread",
                       "vtable for std::thread")):
        return "threads (the emulated blocks are not thread-safe)"
    if dem.startswith("std::chrono"):
        return "clocks and sleeping"
    if dem.startswith(("std::filesystem", "std::basic_filebuf", "std::__basic_file")) or "fstream" in dem:
        return "files"
    return None


def _judge_symbol(name: str, dem: str, unit: str, policy: SymbolPolicy) -> str | None:
    if name in policy.runtime or name in _LIBC or name in policy.libm or name in policy.libgcc:
        return None
    if unit == "host" and (name in _HOST_STDOUT or _STDOUT_STREAMS.match(dem)):
        return None
    why = _category(name, dem)
    if why:
        return why
    if _STDOUT_STREAMS.match(dem):
        return "stdout/stdin (print debugging output to stderr)"
    if _CXX_REFUSED.match(dem):
        return "a part of the C++ library outside the allow-list (threads, clocks, files, processes)"
    if _CXX_ALLOWED.match(dem):
        return None
    return "a function outside the Ascend C allow-list"


def symbol_findings(facts: UnitFacts, policy: SymbolPolicy) -> list[Finding]:
    refused: dict[str, list[str]] = {}
    for name, dem, _weak in facts.symbols:
        why = _judge_symbol(name, binary_judge.qualified_name(dem) if dem else name, facts.unit, policy)
        if why:
            refused.setdefault(why, []).append(dem or name)
    unit = "kernel_src" if facts.unit == "kernel" else "host_operator_src"
    return [Finding("native-symbol", 0, f"{unit}: the compiled {facts.unit} code reaches {why}: "
                    + ", ".join(sorted(set(names))[:4]) + (" ..." if len(set(names)) > 4 else ""))
            for why, names in refused.items()]


def judge(facts: UnitFacts, policy: SymbolPolicy) -> list[Finding]:
    """Findings for one translation unit of an Ascend C build (kernel or host)."""
    if facts.error:
        return [Finding("native-judge", 0, f"the {facts.unit} code could not be judged: {facts.error}")]
    findings: list[Finding] = []
    for label, f in sorted(facts.files.items()):
        findings += _token_findings(label, f)
    for path in facts.foreign[:3]:
        findings.append(Finding("native-include", 0, f"the {facts.unit} code includes {Path(path).name!r}, which is "
                                                     "neither an Ascend C header, the op's own file nor a system "
                                                     "header"))
    return findings + symbol_findings(facts, policy)


@functools.lru_cache(maxsize=8)
def policy(runtime_symbols_file: str) -> SymbolPolicy:
    """The symbol policy for builds linked with the runtime whose defined symbols that file lists (JSON)."""
    names = frozenset(str(n) for n in json.loads(Path(runtime_symbols_file).read_text()))
    return SymbolPolicy(names, binary_judge.libm_functions(), binary_judge.libgcc_helpers())
