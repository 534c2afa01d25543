"""Building native code for CPU candidates (trusted side).

The candidate's C++ is always compiled as a translation unit and object of its own (``-c``), and the binary
judge's facts are read from that object (binary_facts.py), so what is judged is exactly the candidate's code:

* ``cpp``: a `load_cpp` source -> ``kernel.o`` (``g++ -O3 -march=native -fopenmp -fPIC``) -> a shared library
  linked with ``--no-undefined`` (libc, libm, libstdc++ and OpenMP only: calling into ATen or Python fails at
  link time, not at run time);
* ``inline``: a KernelBench ``torch.utils.cpp_extension.load_inline`` extension -> ``candidate.o`` (the
  candidate's sources against torch's C++ API without Python) and ``binding.o`` (the pybind11 binding the
  verifier generates from the exported functions' types: inline_binding.py; cached by its text), linked with
  the binding first. torch's own ``load_inline`` is not used: it would paste the binding (and ``functions``'
  unescaped docstrings) into the candidate's unit. Nothing built is ever loaded here.

Every build is cached by a hash of everything that determines it, with its facts (``facts.json``) when built
for the verifier (``judge=True``: ``-save-temps`` keeps the preprocessed unit, nm and objdump read the object).
The verifier runs every command through a sandboxed runner (no network, writes only to the build directory,
which it sees at /build; torch's headers and libraries at /opt/evk: no host path at all, build_sandbox.py);
`build_cpp_local` is the unsandboxed path `evokernel.cpu.load_cpp` uses when a user runs a candidate in their
own Python.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from evokernel.cpu import CompileError
from evokernel.runtime import build_cache
from evokernel.runtime.paths import default_cache_dir  # noqa: F401 - re-exported: native_build.default_cache_dir
from evokernel.verifier.trusted import binary_facts, binary_judge, build_sandbox, inline_binding, resource_limits

BASE_FLAGS = ("-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", "-std=c++17")
LINK_FLAGS = ("-Wl,--no-undefined", "-lm")
SOURCE_NAME = "kernel.cpp"

# extra flags a candidate may pass; anything else (-Wl, -L, -l, -fplugin, -specs, -include ...) is refused.
# Warnings: -W<warning> and -Wno-<warning>, never one that turns an error the build relies on back into a warning or
# silence (-w, -Wno-error..., -Wno-date-time: -Werror=date-time keeps __DATE__/__TIME__ out of the code). Standards:
# the ISO modes before C++17 (-std=c++11/14) replace trigraphs (??= is #), which the source scans do not read:
# gnu++11/14 or c++17 and later.
_SAFE_FLAG = re.compile(
    r"^-(O[0-3sg]|Ofast|ffast-math|funroll-loops|fno-[\w-]+|fopenmp-simd|fstrict-aliasing|ftree-vectorize"
    r"|march=[\w-]+|mtune=[\w-]+|m(avx\w*|fma|sse\w*|f16c|bmi2?|popcnt)|D[A-Za-z_]\w*(=[\w.+-]*)?"
    r"|std=(gnu\+\+(11|14|17|20|2a|23|2b)|c\+\+(17|20|2a|23|2b))"
    r"|W(?!l,|a,|p,|no-error|no-date-time)[\w=-]+|g[0-3]?|DNDEBUG)$"
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
            "(allowed: -O*, -f* optimisation switches, -m* ISA switches, -D macros, -std=gnu++NN or -std=c++17 and "
            "later, -W warnings; not -w or -Wno-error)"
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
    for part in (compiler_id(), build_sandbox.LAYOUT, " ".join(BASE_FLAGS + LINK_FLAGS), " ".join(flags), source):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def cpp_command(src: Path, out: Path, flags: tuple[str, ...]) -> list[str]:
    """One command: compile and link (user builds outside the verifier)."""
    return ["g++", *BASE_FLAGS, *flags, str(src), "-o", str(out), *LINK_FLAGS]


def cpp_object_command(src: Path, obj: Path, flags: tuple[str, ...], judge: bool) -> list[str]:
    """The candidate's object (``-save-temps=obj`` keeps its preprocessed unit for the judge)."""
    compile_flags = tuple(f for f in BASE_FLAGS if f != "-shared")
    return ["g++", *(["-save-temps=obj"] if judge else []), *compile_flags, *flags, *unit_flags(src.parent),
            "-c", str(src), "-o", str(obj)]


def unit_flags(work: Path) -> list[str]:
    """Flags of every candidate unit that keep host facts out of what its code can compute (encoded on stderr,
    spelled as template arguments in a compiler error: scrubbing the feedback cannot catch an encoding):
    ``__FILE__`` and ``__builtin_FILE()`` name /build, never the build folder (the compiler's own line markers
    keep the real path: the judges read them); ``__DATE__``, ``__TIME__`` and ``__TIMESTAMP__`` (the build host's
    clock) are errors (red-team rt4_has_include_oracle printed them)."""
    return [f"-fmacro-prefix-map={work}=/build", "-Werror=date-time"]


def cpp_link_command(obj: Path, out: Path) -> list[str]:
    return ["g++", "-shared", "-fopenmp", str(obj), "-o", str(out), *LINK_FLAGS]


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
    facts: "binary_facts.Facts | None" = None
    pin: "build_cache.Pin | None" = None  # the entry stays in the cache while this is open (build_cache.py)


def _run(runner: Runner, argv: list[str], work: Path, timeout: float) -> str:
    """One build command; CompileError with reduced diagnostics when it fails."""
    rc, log = runner(argv, work, timeout, work)
    if rc is None:
        raise CompileError(f"build timed out after {timeout:.0f} s")
    if rc != 0:
        raise CompileError(reduce_diagnostics(log))
    return log


BuildFn = Callable[[Path], "binary_facts.Facts | None"]  # builds into the work folder; returns the facts (or None)


def _build_into_cache(key: str, out_name: str, cache_root: Path, area: str, build: BuildFn, judged: bool,
                      budget: "build_cache.CandidateBudget | None" = None) -> BuildResult:
    """The entry ``<cache_root>/<area>/<key>``: found (pinned) or built in a work folder and published by an atomic
    rename. ``budget``: the candidate's (build_cache.CandidateBudget); a build over it is refused before it is
    published, so nothing of it stays. A failed build leaves nothing either."""
    import time

    if area not in build_cache.AREAS:
        raise ValueError(f"unknown build cache area {area!r}")
    area_dir = cache_root / area
    final_dir = area_dir / key
    final = final_dir / out_name

    def refused(exc: build_cache.CacheCapError) -> CompileError:
        return CompileError(f"build refused: {exc}")

    if budget is not None:
        try:
            budget.check_count(final_dir)
        except build_cache.CacheCapError as exc:
            raise refused(exc) from None
    build_cache.note_use(cache_root, None)
    pin = build_cache.lookup(final_dir, out_name)
    if pin is not None:
        facts = None
        try:
            if judged:
                facts = binary_facts.Facts.from_json((final_dir / binary_facts.FACTS_NAME).read_text())
        except (OSError, ValueError, KeyError, TypeError):
            # a cache entry without readable facts (an interrupted publish, another version's layout) is not the
            # candidate's doing: build it again rather than refuse it
            pin.close()
            pin = None
            build_cache.evict(final_dir)
        if pin is not None:
            if budget is not None:
                try:
                    budget.admit(final_dir, build_cache.entry_bytes(final_dir), pin)
                except build_cache.CacheCapError as exc:
                    pin.close()
                    raise refused(exc) from None
            return BuildResult(final, True, 0.0, facts, pin)
    area_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=area_dir))
    work_pin = build_cache.Pin.take(work)  # held from the start: a running build is never a dead one's leftover
    try:
        t0 = time.perf_counter()
        facts = build(work)
        if not (work / out_name).exists():
            raise CompileError("the build produced no library")
        if facts is not None:
            (work / binary_facts.FACTS_NAME).write_text(facts.to_json())
        for temp in work.iterdir():  # keep the library and its facts only
            if temp.name not in (out_name, binary_facts.FACTS_NAME):
                shutil.rmtree(temp, ignore_errors=True) if temp.is_dir() else temp.unlink(missing_ok=True)
        seconds = time.perf_counter() - t0
        nbytes = build_cache.entry_bytes(work)
        if budget is not None:
            try:  # charged before it is published: a refused build is deleted with its work folder
                budget.admit(final_dir, nbytes, None)
            except build_cache.CacheCapError as exc:
                raise refused(exc) from None
        published = False
        for _ in range(3):
            try:
                os.replace(work, final_dir)  # atomic publish; the work folder's pin now holds the entry
                pin, work_pin, published = work_pin, None, True
                os.utime(final_dir)
                break
            except OSError:  # a concurrent identical build won: use its entry
                pin = build_cache.lookup(final_dir, out_name)
                if pin is not None:
                    break
        else:
            raise CompileError("the build could not be published in the build cache")
        if budget is not None and pin is not None:
            budget.admit(final_dir, nbytes, pin)  # charged above: keeps the pin for the verdict
        build_cache.note_use(cache_root, nbytes if published else 0)
        return BuildResult(final, False, seconds, facts, pin)
    finally:
        if work_pin is not None:
            work_pin.close()
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)


def build_cpp(
    source: str, flags: tuple[str, ...], cache_root: Path, runner: Runner = _local_runner, timeout: float = 120.0,
    judge: bool = False, budget: "build_cache.CandidateBudget | None" = None,
) -> BuildResult:
    """A `load_cpp` library (``budget``: the candidate's, when the verifier builds it: build_cache.py)."""
    flags = clean_flags(flags)
    check_flags(flags)
    key = cpp_cache_key(source, flags + ((binary_judge.JUDGE_VERSION, binary_facts.FACTS_VERSION) if judge else ()))

    def build(work: Path) -> binary_facts.Facts | None:
        src = work / SOURCE_NAME
        src.write_text(source)
        if not judge:
            _run(runner, cpp_command(src, work / "lib.so", flags), work, timeout)
            return None
        # compile the object, link it: one sandboxed shell, two commands
        both = f"{shlex.join(cpp_object_command(src, work / 'kernel.o', flags, judge=True))} && " \
               f"{shlex.join(cpp_link_command(work / 'kernel.o', work / 'lib.so'))}"
        _run(runner, ["/bin/sh", "-c", both], work, timeout)
        return binary_facts.extract(work, work / "kernel.o", work / "kernel.ii", str(src), source, runner,
                                    host_path=build_sandbox.view_of(runner, work).host)

    return _build_into_cache(key, "lib.so", cache_root, "cpp", build, judge, budget)


_LOADED: list[BuildResult] = []  # the user's own load_cpp libraries stay pinned while their process lives


def build_cpp_local(source: str, flags: tuple[str, ...]) -> str:
    result = build_cpp(source, flags, default_cache_dir())
    _LOADED.append(result)  # pinned until the process exits: the caller loads it after this returns
    return str(result.path)


# --- torch load_inline extensions -------------------------------------------------------------

_NAME = re.compile(r"^[A-Za-z_]\w{0,63}$")
INLINE_LIBRARY = f"{inline_binding.MODULE}.so"


def inline_cache_key(spec: dict) -> str:
    import torch

    h = hashlib.sha256(json.dumps(spec, sort_keys=True).encode())
    h.update(torch.__version__.encode())
    h.update(compiler_id().encode())
    h.update(build_sandbox.LAYOUT.encode())
    return h.hexdigest()[:32]


def _binding_object(binding: inline_binding.Binding, cache_root: Path, runner: Runner, timeout: float) -> BuildResult:
    """The generated binding's object, cached by its text (trusted: it depends on the exported types only)."""
    text = binding.source()
    key = inline_cache_key({"binding": text, "flags": inline_binding.binding_flags()})

    def build(work: Path) -> None:
        (work / "binding.cpp").write_text(text)
        _run(runner, ["g++", *inline_binding.binding_flags(), "-c", str(work / "binding.cpp"), "-o",
                      str(work / "binding.o")], work, timeout)
        return None

    return _build_into_cache(key, "binding.o", cache_root, "binding", build, False)  # pinned while it is copied


def build_inline(spec: dict, cache_root: Path, runner: Runner = _local_runner, timeout: float = 300.0,
                 judge: bool = False, budget: "build_cache.CandidateBudget | None" = None) -> BuildResult:
    """Build a load_inline extension (``spec``: name, cpp_sources, functions, extra_cflags) as the candidate's
    object plus the verifier's binding; the library defines the module ``evk_ext``. ``budget``: the candidate's
    (the binding object is the verifier's: not charged to it)."""
    name = spec.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise CompileError(f"load_inline: invalid extension name {name!r}")
    for key in ("cpp_sources", "extra_cflags"):
        if not isinstance(spec.get(key), list) or not all(isinstance(s, str) for s in spec[key]):
            raise CompileError(f"load_inline: {key} must be a list of strings")
    flags = clean_flags(spec["extra_cflags"])
    check_flags(flags)
    exports = inline_binding.exported_functions(spec.get("functions"))
    sources = []
    for src in spec["cpp_sources"]:
        kept, pairs = inline_binding.split_module_blocks(src)
        sources.append(kept)
        exports += [p for p in pairs if p not in exports]
    if not exports:
        raise CompileError("load_inline: no function to bind: list the C++ functions Python calls in "
                           "functions=[...] (the verifier generates the binding)")
    if len({py for py, _ in exports}) != len(exports):
        raise CompileError("load_inline: two functions bound under one name")
    unit, line_range = inline_binding.candidate_unit(sources, exports)
    key = inline_cache_key({"unit": unit, "flags": list(flags), "cflags": inline_binding.candidate_flags(),
                            "exports": exports, "link": inline_binding.link_flags(), "judge": [binary_judge.JUDGE_VERSION, binary_facts.FACTS_VERSION]
                            if judge else None})

    def build(work: Path) -> binary_facts.Facts | None:
        src = work / "candidate.cpp"
        src.write_text(unit)
        obj = work / "candidate.o"
        # -save-temps always: the probes' types are read from the object with the judge's own reader
        _run(runner, ["g++", "-save-temps=obj", *inline_binding.candidate_flags(), *flags, *unit_flags(work),
                      "-c", str(src), "-o", str(obj)], work, timeout)
        facts = binary_facts.extract(work, obj, work / "candidate.ii", str(src), "\n".join(sources), runner,
                                     line_range, binary_facts.SYSTEM_ROOTS + (str(inline_binding.INCLUDE) + "/",),
                                     build_sandbox.view_of(runner, work).host)
        if facts.error:
            raise CompileError(f"load_inline: the build could not be read: {facts.error}")
        n = len(dict.fromkeys(c for _, c in exports))
        binding = inline_binding.make_binding(exports, inline_binding.probe_types(facts.defined, n))
        bound = _binding_object(binding, cache_root, runner, timeout)
        shutil.copyfile(bound.path, work / "binding.o")  # the sandbox sees work/
        del bound  # unpinned
        _run(runner, ["g++", str(work / "binding.o"), str(obj), *inline_binding.link_flags(), "-o",
                      str(work / INLINE_LIBRARY)], work, timeout)
        return facts if judge else None

    return _build_into_cache(key, INLINE_LIBRARY, cache_root, "inline", build, judge, budget)
