"""Building native code for CPU candidates (trusted side).

Two kinds of build, both cached by a hash of everything that determines the binary:

* ``cpp``: a `load_cpp` source -> ``g++ -O3 -march=native -fopenmp -shared -fPIC`` shared library,
  linked with ``--no-undefined`` so the code can reach libc, libm, libstdc++ and OpenMP but never a
  symbol of libtorch or Python (calling back into ATen fails at link time, not at run time);
* ``inline``: a KernelBench ``torch.utils.cpp_extension.load_inline`` extension, built by torch's
  own machinery (ninja) in a separate process that never imports the result (a C++ global's constructor
  would otherwise run at build time).

With ``judge=True`` (the verifier) a build also yields the binary judge's facts (binary_judge.py): the
compiler keeps the preprocessed translation unit (``-save-temps``), nm reads the library's undefined
symbols, and both are reduced to ``facts.json``, cached with the library.

The verifier runs every build through a sandboxed runner (no network, writes only to the build
directory); `build_cpp_local` is the unsandboxed path `evokernel.cpu.load_cpp` uses when a user
runs a candidate in their own Python.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from evokernel.cpu import CompileError
from evokernel.verifier.trusted import binary_judge, resource_limits
from evokernel.paths import default_cache_dir  # noqa: F401 - re-exported: native_build.default_cache_dir

BASE_FLAGS = ("-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", "-std=c++17")
LINK_FLAGS = ("-Wl,--no-undefined", "-lm")
SOURCE_NAME = "kernel.cpp"

# extra flags a candidate may pass; anything else (-Wl, -L, -l, -fplugin, -specs, -include ...) is refused
_SAFE_FLAG = re.compile(
    r"^-(O[0-3sg]|Ofast|ffast-math|funroll-loops|fno-[\w-]+|fopenmp-simd|fstrict-aliasing|ftree-vectorize"
    r"|march=[\w-]+|mtune=[\w-]+|m(avx\w*|fma|sse\w*|f16c|bmi2?|popcnt)|D[A-Za-z_]\w*(=[\w.+-]*)?"
    r"|std=(c|gnu)\+\+(11|14|17|20|2a|23|2b)|w|W(?!l,|a,|p,)[\w=-]+|g[0-3]?|DNDEBUG)$"
)

# Runner: (argv, cwd, timeout_s, writable_dir) -> (returncode, combined output). None rc = timeout.
Runner = Callable[[list[str], Path, float, Path], tuple[int | None, str]]


def clean_flags(flags: "tuple[str, ...] | list[str]") -> tuple[str, ...]:
    """Strip whitespace and drop empty flags (KernelBench's load_inline examples pass [""])."""
    return tuple(f.strip() for f in flags if f.strip())


def check_flags(flags: tuple[str, ...]) -> None:
    bad = [f for f in flags if not _SAFE_FLAG.match(f)]
    if bad:
        raise CompileError(
            f"load_cpp: compiler flag(s) not allowed: {' '.join(bad)} "
            "(allowed: -O*, -f* optimisation switches, -m* ISA switches, -D macros, -std=c++NN, -W warnings)"
        )


@functools.lru_cache(maxsize=None)
def compiler_id(cxx: str = "g++") -> str:
    try:
        out = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return cxx
    return out.splitlines()[0] if out else cxx


def cpp_cache_key(source: str, flags: tuple[str, ...]) -> str:
    h = hashlib.sha256()
    for part in (compiler_id(), " ".join(BASE_FLAGS + LINK_FLAGS), " ".join(flags), source):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def cpp_command(src: Path, out: Path, flags: tuple[str, ...]) -> list[str]:
    return ["g++", *BASE_FLAGS, *flags, str(src), "-o", str(out), *LINK_FLAGS]


_DIAG = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?:(?P<col>\d+):)? (?:fatal )?error: (?P<msg>.*)$")
_UNDEF = re.compile(r"undefined reference to [`'](?P<sym>[^'`]+)'")
_NOT_IN_STD = re.compile(r"[‘'](?P<name>\w+)[’'] is not a member of [‘']std[’']")
_NOTE_HEADER = re.compile(r"note: .*(?:is defined in header|probably fixable by adding).*")
# the header of std names small models use without including it (measured: std::accumulate and
# std::numeric_limits in real 1.5B replies; g++ 12 names the header for some names only)
STD_HEADERS = {
    **dict.fromkeys(("accumulate", "iota", "inner_product", "partial_sum", "reduce"), "<numeric>"),
    **dict.fromkeys(("max", "min", "fill", "sort", "copy", "min_element", "max_element", "clamp", "swap",
                     "transform", "fill_n", "copy_n"), "<algorithm>"),
    "numeric_limits": "<limits>",
    **dict.fromkeys(("sqrt", "exp", "log", "tanh", "erf", "pow", "fabs", "fmax", "fmin", "expf", "logf", "sqrtf",
                     "tanhf", "erff", "isnan", "isinf", "floor", "ceil", "log1p", "expm1"), "<cmath>"),
    **dict.fromkeys(("memcpy", "memset"), "<cstring>"),
    "vector": "<vector>", "array": "<array>", "unique_ptr": "<memory>", "abs": "<cmath> (or <cstdlib>)",
}


def reduce_diagnostics(log: str, limit: int = 12) -> str:
    """Compiler/linker output -> short ``file:line: error: message`` lines an LLM can act on."""
    lines: list[str] = []
    seen: set[str] = set()
    for raw in log.splitlines():
        m = _DIAG.match(raw.strip())
        if m:
            line = f"{Path(m['file']).name}:{m['line']}: error: {m['msg'].strip()}"
        elif (u := _UNDEF.search(raw)) is not None:
            line = (
                f"link: error: undefined reference to {u['sym']} (native code may use only libc, libm, "
                "libstdc++ and OpenMP; it must not call into ATen/torch or Python)"
            )
        else:
            continue
        if line not in seen:
            seen.add(line)
            lines.append(line)
        if len(lines) >= limit:
            break
    hints = []
    for raw in log.splitlines():
        if (n := _NOTE_HEADER.search(raw)) is not None:
            hints.append(n.group(0).strip())
        elif (m := _NOT_IN_STD.search(raw)) is not None and m["name"] in STD_HEADERS:
            hints.append(f"note: std::{m['name']} is declared in {STD_HEADERS[m['name']]}: add "
                         f"#include {STD_HEADERS[m['name']].split(' ')[0]} at the top of the C++ source")
    lines += [h for h in dict.fromkeys(hints) if h not in seen][:4]
    if not lines:
        tail = [ln for ln in log.strip().splitlines() if ln.strip()][-8:]
        lines = tail or ["build failed without diagnostics"]
    if "memory exhausted" in log or "out of memory allocating" in log or "std::bad_alloc" in log:
        lines.append(f"the compiler exceeded the build's memory limit ({resource_limits.BUILD_AS_MB // 1024} GiB): "
                     "simplify the source (deep template recursion, huge constant arrays)")
    if "File size limit exceeded" in log or "file too large" in log.lower():
        lines.append(f"a build output exceeded the build's file size limit ({resource_limits.BUILD_FILE_MB} MiB): "
                     "no huge initialised arrays in the source")
    return "\n".join(lines)


def _local_runner(argv: list[str], cwd: Path, timeout: float, writable: Path) -> tuple[int | None, str]:
    try:
        p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, ""
    return p.returncode, p.stdout + p.stderr


@dataclass
class BuildResult:
    path: Path
    cached: bool
    seconds: float
    facts: "binary_judge.Facts | None" = None


FactsFn = Callable[[Path], "binary_judge.Facts"]


def _build_into_cache(
    key: str, out_name: str, cache_root: Path, prepare: Callable[[Path], list[str]], runner: Runner, timeout: float,
    facts_fn: FactsFn | None = None,
) -> BuildResult:
    import time

    final_dir = cache_root / key
    final = final_dir / out_name
    if final.exists():
        facts = None
        if facts_fn is not None:
            try:
                facts = binary_judge.Facts.from_json((final_dir / binary_judge.FACTS_NAME).read_text())
            except (OSError, ValueError, KeyError, TypeError) as exc:
                facts = binary_judge.Facts(error=f"cached facts unreadable ({type(exc).__name__})")
        return BuildResult(final, True, 0.0, facts)
    cache_root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=cache_root))
    try:
        argv = prepare(work)
        t0 = time.perf_counter()
        rc, log = runner(argv, work, timeout, work)
        if rc is None:
            raise CompileError(f"build timed out after {timeout:.0f} s")
        if rc != 0 or not (work / out_name).exists():
            raise CompileError(reduce_diagnostics(log))
        facts = None
        if facts_fn is not None:
            facts = facts_fn(work)
            (work / binary_judge.FACTS_NAME).write_text(facts.to_json())
        seconds = time.perf_counter() - t0
        try:
            os.replace(work, final_dir)  # atomic publish; a concurrent identical build may win
        except OSError:
            if not final.exists():
                raise
        return BuildResult(final, False, seconds, facts)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)


def build_cpp(
    source: str, flags: tuple[str, ...], cache_root: Path, runner: Runner = _local_runner, timeout: float = 120.0,
    judge: bool = False,
) -> BuildResult:
    flags = clean_flags(flags)
    check_flags(flags)
    key = cpp_cache_key(source, flags + ((binary_judge.JUDGE_VERSION,) if judge else ()))

    def prepare(work: Path) -> list[str]:
        (work / SOURCE_NAME).write_text(source)
        argv = cpp_command(work / SOURCE_NAME, work / "lib.so", flags)
        return argv[:1] + ["-save-temps=obj"] + argv[1:] if judge else argv

    def facts(work: Path) -> binary_judge.Facts:
        ii = next(iter(sorted(work.glob("*.ii"))), None)
        try:
            return binary_judge.extract(work, work / "lib.so", ii, str(work / SOURCE_NAME), source, runner)
        finally:
            for temp in work.glob("lib.so-*"):  # -save-temps' object file
                temp.unlink(missing_ok=True)

    return _build_into_cache(key, "lib.so", cache_root / "cpp", prepare, runner, timeout, facts if judge else None)


def build_cpp_local(source: str, flags: tuple[str, ...]) -> str:
    return str(build_cpp(source, flags, default_cache_dir()).path)


# --- torch load_inline extensions -------------------------------------------------------------

_NAME = re.compile(r"^[A-Za-z_]\w{0,63}$")

# torch's own build (main.cpp, ninja, flags), minus the import at the end: the library is only loaded by
# the candidate's worker, never by the build
_INLINE_SCRIPT = """
import json, sys
spec = json.loads(open(sys.argv[1]).read())
import torch.utils.cpp_extension as ce
ce._import_module_from_library = lambda *args, **kwargs: None
ce.load_inline(name=spec["name"], cpp_sources=spec["cpp_sources"], functions=spec["functions"] or None,
               extra_cflags=spec["extra_cflags"] + spec.get("judge_cflags", []), build_directory=spec["build_dir"],
               verbose=False, with_cuda=False, is_python_module=True)
"""


def inline_cache_key(spec: dict) -> str:
    import torch

    h = hashlib.sha256(json.dumps(spec, sort_keys=True).encode())
    h.update(torch.__version__.encode())
    h.update(compiler_id().encode())
    return h.hexdigest()[:32]


def build_inline(spec: dict, cache_root: Path, runner: Runner = _local_runner, timeout: float = 300.0,
                 judge: bool = False) -> BuildResult:
    """Build a load_inline extension. ``spec``: name, cpp_sources (list[str]), functions, extra_cflags."""
    name = spec.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise CompileError(f"load_inline: invalid extension name {name!r}")
    for key in ("cpp_sources", "functions", "extra_cflags"):
        if not isinstance(spec.get(key), list) or not all(isinstance(s, str) for s in spec[key]):
            raise CompileError(f"load_inline: {key} must be a list of strings")
    spec = {k: spec[k] for k in ("name", "cpp_sources", "functions", "extra_cflags")}
    spec["extra_cflags"] = list(clean_flags(spec["extra_cflags"]))
    check_flags(tuple(spec["extra_cflags"]))
    key = inline_cache_key({**spec, "judge": binary_judge.JUDGE_VERSION} if judge else spec)
    source = "\n".join(spec["cpp_sources"])

    def prepare(work: Path) -> list[str]:
        extra = {"judge_cflags": ["-save-temps=obj"]} if judge else {}
        (work / "spec.json").write_text(json.dumps({**spec, **extra, "build_dir": str(work)}))
        (work / "build_inline.py").write_text(_INLINE_SCRIPT)
        return [sys.executable, str(work / "build_inline.py"), str(work / "spec.json")]

    def facts(work: Path) -> binary_judge.Facts:
        # main.cpp is torch's "#include <torch/extension.h>" line, then the candidate's sources, then the
        # binding torch generates from `functions`: only the candidate's lines are judged as its code
        lines = (2, 2 + source.count("\n") + 1)
        return binary_judge.extract(work, work / f"{name}.so", work / "main.ii", str(work / "main.cpp"), source,
                                    runner, lines)

    return _build_into_cache(key, f"{name}.so", cache_root / "inline", prepare, runner, timeout,
                             facts if judge else None)
