"""Text rules over the native source a candidate asks to build: the fast first filter of the hack
gate, with feedback an LLM can act on. They run in the trusted parent before anything is compiled.

They are a filter, not the boundary: the binary judge (what the built object references and
contains) and the sandbox (what the code may do) are. Token pasting, macros and raw bytes get past
any text rule; they do not get past those.
"""
from __future__ import annotations

import re

from evokernel.source_text import lex_source, strip_comments
from evokernel.verifier.trusted.findings import Finding


_CPP_RULES: list[tuple[str, re.Pattern[str], str]] = [
    ("cpp-torch", re.compile(r"#\s*include\s*[<\"](?:(torch|ATen|c10|caffe2|pybind11)/|(torch|ATen|pybind11)\.h\b|Python\.h)"),
     "load_cpp code must not include torch/ATen/Python headers; work on raw pointers"),
    ("cpp-torch", re.compile(r"\b(at|torch|c10|caffe2)\s*::"), "load_cpp code must not call into ATen/torch"),
    ("cpp-torch", re.compile(r"\bnamespace\s+(at|torch|c10)\b"), "declaring torch namespaces is not allowed"),
    ("cpp-python", re.compile(r"\bPy[A-Z_]\w*\s*\("), "calling the Python C API is not allowed"),
    ("cpp-dynamic-load", re.compile(r"\b(dlopen|dlsym|dlvsym|dlmopen|RTLD_\w+)\b"),
     "dynamic symbol lookup is not allowed (it reaches libtorch behind the verifier's back)"),
    ("cpp-process", re.compile(r"\b(fork|vfork|clone|execv\w*|execl\w*|posix_spawn\w*|system|popen|daemon)\s*\("),
     "starting processes is not allowed"),
    ("cpp-threads", re.compile(r"\b(pthread_create|pthread_detach)\b|std\s*::\s*(thread|jthread|async)\b"),
     "raw threads are not allowed; use OpenMP (#pragma omp) for parallelism"),
    ("cpp-signals", re.compile(r"\b(signal|sigaction|raise|alarm|setitimer|kill|tgkill|abort)\s*\("),
     "signals are not allowed"),
    ("cpp-exit", re.compile(r"\b(_exit|_Exit|exit|quick_exit)\s*\("), "exiting the process is not allowed"),
    ("cpp-syscall", re.compile(r"\b(syscall|ptrace|mprotect|mmap|munmap|prctl|ioctl)\s*\(|\b(__)?asm(__)?\b"),
     "raw system calls and inline assembly are not allowed"),
    ("cpp-file", re.compile(r"\b(fopen|freopen|open|openat|creat|remove|rename|unlink)\s*\(|\b(fstream|ofstream|ifstream)\b"),
     "file access is not allowed in a kernel (caching results on disk is a hack)"),
    ("cpp-proc", re.compile(r"/proc/|/dev/shm|/tmp/"), "touching /proc, /dev/shm or /tmp is not allowed"),
    ("cpp-static-init", re.compile(r"__attribute__\s*\(\(\s*(constructor|destructor)"),
     "load-time constructors are not allowed"),
    ("cpp-env", re.compile(r"\b(getenv|setenv|putenv|environ)\b"), "reading or changing the environment is not allowed"),
    ("cpp-stdout", re.compile(r"\b(printf|puts|putchar)\s*\(|std\s*::\s*cout\b|\bstdout\b"),
     "kernels must not write to stdout (use stderr/fprintf(stderr, ...) for debugging)"),
]
# torch load_inline sources legitimately use torch:: types; they are policed dynamically
_INLINE_SKIP = {"cpp-torch", "cpp-python"}
_INLINE_EXTRA: list[tuple[str, re.Pattern[str], str]] = [
    ("cpp-dispatch-bypass", re.compile(r"\bat\s*::\s*native\b|redispatch|Dispatch(Key|KeySet)|AutoDispatch|ExcludeDispatch"),
     "bypassing the dispatcher (at::native, redispatch, dispatch-key guards) is not allowed"),
]


def _strip_strings(code: str) -> str:
    """String and character literals (raw strings and prefixed forms too) emptied, read as the compiler does."""
    return lex_source(code, blank_strings=True)


# Ascend C sources (kernel, host, tiling header) are built against the emulator's headers: on top of
# the C++ rules they may include only the Ascend C / CANN headers and the C++ standard library, and
# must not touch the emulator's own machinery (whose counters the latency model reads).
_ASCEND_SKIP = {"cpp-stdout"}  # kernels print through AscendC's printf (to stderr and the report)
_ASCEND_EXTRA: list[tuple[str, re.Pattern[str], str]] = [
    ("ascend-internals", re.compile(r"\b(evk_\w*|EVK_\w*|evk_sim)\b"),
     "the emulator's internals (evk_*, EVK_*) are not part of Ascend C and must not be used"),
    ("ascend-include", re.compile(r'#\s*include\s*[<"](?!(kernel_operator\.h|register/|tiling/|graph/|exe_graph/|'
                                  r'lib/|op_common/|platform/|acl/|kernel_tiling/kernel_tiling\.h"|[a-z_]+\.h[">]|'
                                  r'c[a-z]+>|[a-z_]+>|(\./|\.\./op_kernel/)?[\w]+_tiling\.h"))'
                                  r'[^>"]*[>"]'),
     "Ascend C sources may include kernel_operator.h, the CANN headers (register/, tiling/, graph/, exe_graph/, "
     "lib/, kernel_tiling/kernel_tiling.h), the op's tiling header and the C++ standard library only"),
]


# An Ascend C candidate's host code (TilingFunc, a kernel-launch sample's main()) runs on the host, where CANN's
# host code may read its environment (a sample's main() takes its sizes or device id from it); the verifier
# runs it with a cleared environment (launcher.base_env: thread counts and paths, no secrets), so reading it
# yields nothing to exploit. Changing the environment stays refused, and kernels (device code) may not touch it.
_ASCEND_HOST_ENV: list[tuple[str, re.Pattern[str], str]] = [
    ("cpp-env", re.compile(r"\b(setenv|putenv|unsetenv|clearenv|environ)\b"), "changing the environment is not allowed"),
]


# An Ascend C candidate's binding (python_bind_src): compiled as a torch extension by the ascend backend
# and run in the device process. It may allocate outputs and call EXEC_NPU_CMD; reaching device memory,
# the ACL runtime or torch_npu's internals itself would let it compute (or fake results) outside the
# operator, where neither the ATen recorder nor the profiler sees it.
_BINDING_EXTRA: list[tuple[str, re.Pattern[str], str]] = [
    ("binding-device", re.compile(r"\bdata_ptr\b|\bacl\w*\s*\(|\b(at_npu|c10_npu|torch_npu)\s*::|"
                                  r"\bOpCommand\b|\bmemcpy\s*\("),
     "the binding may allocate outputs and call EXEC_NPU_CMD(aclnn<Op>, ...) only: no raw device pointers, "
     "ACL runtime calls, torch_npu internals or memcpy"),
    ("binding-include", re.compile(r'#\s*include\s*[<"](?!(torch/|ATen/|c10/|pybind11/|pytorch_npu_helper\.hpp"|'
                                   r'[a-z_]+>|c[a-z]+>))[^>"]*[>"]'),
     "the binding may include torch/ATen/c10/pybind11 headers, pytorch_npu_helper.hpp and the C++ standard "
     "library only"),
]


# The macros of CANN's CPU-debug build (ASCENDC_CPU_DEBUG; __CCE_KT_TEST__ in older releases). A build that
# defines them (or leaves them undefined) never compiles the other branch of a conditional on them: an Ascend C
# kernel-launch sample keeps its NPU launcher (ACL calls, the device id from the environment) under
# #ifndef ASCENDC_CPU_DEBUG, which the emulator's build skips. active_code blanks such branches.
CPU_DEBUG_MACROS = frozenset({"ASCENDC_CPU_DEBUG", "__CCE_KT_TEST__"})
_COND = re.compile(r"^\s*#\s*(ifdef|ifndef|if|elif|else|endif)\b(.*)$")
_DEFINE = re.compile(r"^\s*#\s*(define|undef)\s+([A-Za-z_]\w*)")


def _cond_value(kind: str, expr: str, defined: set[str]) -> bool | None:
    """True/False for a condition on the CPU-debug macros alone, None for anything else (both branches kept)."""
    expr = expr.strip()
    if kind in ("ifdef", "ifndef"):
        name = expr.split()[0] if expr else ""
        if name not in CPU_DEBUG_MACROS:
            return None
        return (name in defined) == (kind == "ifdef")
    m = re.fullmatch(r"(!\s*)?(?:defined\s*\(\s*([A-Za-z_]\w*)\s*\)|defined\s+([A-Za-z_]\w*)|([A-Za-z_]\w*))"
                     r"(?:\s*==\s*1)?", expr)
    if not m:
        return None
    name = m.group(2) or m.group(3) or m.group(4)
    if name not in CPU_DEBUG_MACROS:
        return None
    return (name in defined) != bool(m.group(1))


def active_code(code: str, defined: frozenset[str] | set[str]) -> str:
    """``code`` (comments removed) with the lines a build never compiles blanked: the inactive branches of
    conditionals on the CPU-debug macros, given which of them the build defines (a #define/#undef of one in an
    active part of the text counts from there on). Other conditionals keep both branches."""
    defined = set(defined)
    out: list[str] = []
    stack: list[tuple[bool, bool | None, bool]] = []  # (enclosing active, this branch's value, a branch taken)
    active = True
    for line in code.split("\n"):
        m = _COND.match(line)
        if m:
            kind, expr = m.group(1), m.group(2)
            if kind in ("ifdef", "ifndef", "if"):
                v = _cond_value(kind, expr, defined)
                stack.append((active, v, v is True))
                active = active and v is not False
            elif kind == "elif" and stack:
                outer, prev, taken = stack[-1]
                v = _cond_value("if", expr, defined) if prev is not None else None
                v = False if taken else v
                stack[-1] = (outer, v, taken or v is True)
                active = outer and v is not False
            elif kind == "else" and stack:
                outer, prev, taken = stack[-1]
                v = None if prev is None else not taken
                stack[-1] = (outer, v, True)
                active = outer and v is not False
            elif kind == "endif" and stack:
                active = stack.pop()[0]
            out.append(line)
            continue
        if active:
            d = _DEFINE.match(line)
            if d and d.group(2) in CPU_DEBUG_MACROS:
                (defined.add if d.group(1) == "define" else defined.discard)(d.group(2))
        out.append(line if active else "")
    return "\n".join(out)


def check_native(source: str, kind: str = "cpp", defined: frozenset[str] | set[str] | None = None) -> list[Finding]:
    """Rules over native source a candidate asks to build (``kind``: "cpp", "inline", "ascend" (an Ascend C
    kernel), "ascend-host" (its host sources) or "binding", an Ascend C candidate's python_bind_src). ``defined``: the CPU-debug macros the build that
    compiles it defines (None: every branch is checked, as for a device build)."""
    code = strip_comments(source)
    if defined is not None:
        code = active_code(code, defined)
    includes_ok = code  # includes keep their quoted paths
    # an #include names a header; what the code does with it is in the code (`#include <fstream>` alone opens
    # nothing, `std::ofstream f(...)` does): the rules other than the include rules read the code without them
    body = re.sub(r"(?m)^\s*#\s*include\b.*$", "", _strip_strings(code))
    findings: list[Finding] = []
    if kind == "ascend":
        rules = [r for r in _CPP_RULES if r[0] not in _ASCEND_SKIP] + _ASCEND_EXTRA
    elif kind == "ascend-host":
        rules = [r for r in _CPP_RULES if r[0] not in _ASCEND_SKIP | {"cpp-env"}] + _ASCEND_EXTRA + _ASCEND_HOST_ENV
    elif kind == "binding":
        rules = [r for r in _CPP_RULES if r[0] not in _INLINE_SKIP] + _INLINE_EXTRA + _BINDING_EXTRA
    elif kind == "cpp":
        rules = _CPP_RULES
    else:
        rules = [r for r in _CPP_RULES if r[0] not in _INLINE_SKIP] + _INLINE_EXTRA
    for rule, pattern, message in rules:
        text = includes_ok if rule in {"cpp-torch", "cpp-proc", "ascend-include", "binding-include"} else body
        for m in pattern.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            findings.append(Finding(rule, line, f"{message} (found {m.group(0).strip()!r})"))
            break
    return findings
