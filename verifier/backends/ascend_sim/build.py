"""Building an Ascend C operator project against the emulator (trusted side).

Two libraries, so that the candidate's host code and its kernel never share a process:

* the **kernel library**, one per dtype combination: the emulator runtime (compiled once per version of the
  emulator, cached) + the kernel translation unit (a prelude + kernel_src, with the `-DDTYPE_<NAME>` macros
  msopgen would define). It runs in the candidate worker, which holds the data;
* the **host library**, one per project: the runtime + the host translation unit (host_operator_src with the
  tiling header beside it: TilingFunc, InferShape, OpDef). It runs in a separate host process (host.py) that
  sees shapes, dtypes and attributes only.

Each translation unit is compiled to its own object and judged as a binary (judge.py): the build keeps the
tokens the candidate spelled (``-E -fdebug-cpp``), the files the unit read (``-MD``) and the object's undefined
symbols (``nm``). Every compile runs through the verifier's sandboxed runner (no network, writes only to the
build directory) and is cached by a hash of everything that determines the binary, its facts with it.

The runner (`sandbox`: a build_sandbox.BuildSandbox) shows only neutral paths, as for cpu builds: the build
folder at ``/build`` (the runtime object copied into it), the emulator's headers at ``/opt/evk/ascend/include``,
its runtime source at ``/opt/evk/ascend/src/runtime.cpp``, the toolchain at its system paths; no Python, no
``/proc``, nothing whose path depends on where the checkout, the virtualenv, ``$HOME`` or the cache live. A
candidate's ``__has_include`` probe of a host path answers 0, and every flag, ``-MD`` list and path in the
libraries names those neutral places. Commands are composed with host paths (the unsandboxed runner of the tests
runs them as they are); the view rewrites them, and the facts are read in its terms (`_unit_facts`).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
from pathlib import Path
from typing import Callable

from evokernel.cpu import CompileError
from evokernel.runtime import build_cache
from evokernel.verifier.trusted import binary_facts, build_sandbox, native_build
from evokernel.verifier.trusted.build_sandbox import BuildView
from evokernel.verifier.trusted.launcher import Limits
from evokernel.verifier.trusted.native_build import BuildResult, Runner, compiler_id

from . import judge
from .project import LIBC_NAMES, Project

SIM_DIR = Path(__file__).resolve().parent
INCLUDE = SIM_DIR / "include"
RUNTIME = SIM_DIR / "runtime.cpp"
CXX = "g++"
# -O1: the emulated instructions are loops over UB bytes; -O1 compiles 2-3x faster than -O2 and runs
# close to it. -Werror=narrowing: the device compiler (clang-based) rejects narrowing in braces.
CXXFLAGS = ("-std=c++17", "-O1", "-fPIC", "-Werror=narrowing", "-fno-gnu-unique")
LINK = ("-shared", "-Wl,-Bsymbolic", "-Wl,--no-undefined", "-lm")

# where a sandboxed build sees the emulator (build_sandbox.BuildView); part of every cache key
NEUTRAL_INCLUDE = "/opt/evk/ascend/include"
NEUTRAL_RUNTIME_SRC = "/opt/evk/ascend/src/runtime.cpp"
LAYOUT = "ascend-neutral-1"
RUNTIME_OBJ = "runtime.o"  # the runtime object's name in a unit's build folder (a copy of the cached one)


def neutral_mounts() -> list[tuple[str, str]]:
    """(host path, neutral path) of what an ascend-sim build reads besides its own folder: the emulator's
    headers and its runtime source (the compiled runtime is copied into the build folder)."""
    return [(str(INCLUDE), NEUTRAL_INCLUDE), (str(RUNTIME), NEUTRAL_RUNTIME_SRC)]


def sandbox(limits: Callable[[float], Limits], threads: int = 2) -> build_sandbox.BuildSandbox:
    """The verifier's runner for ascend-sim builds: bubblewrap showing only neutral paths (`neutral_mounts`,
    the build folder at /build), the build's seccomp filter, no Python; two threads (a unit compiles its object
    and its -fdebug-cpp preprocessing side by side)."""
    return build_sandbox.BuildSandbox(limits, threads=threads, name="build", mounts=neutral_mounts)


def emulator_hash() -> str:
    """Hash of the emulator's sources (runtime and headers): part of every cache key."""
    h = hashlib.sha256()
    for p in sorted([RUNTIME, *INCLUDE.rglob("*.h")]):
        h.update(str(p.relative_to(SIM_DIR)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:24]


def _key(*parts: str) -> str:
    h = hashlib.sha256()
    for part in (compiler_id(CXX), build_sandbox.LAYOUT, LAYOUT, " ".join(CXXFLAGS + LINK), *parts):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


class _Kept:
    """What a build keeps beside its output in the cache (native_build writes ``to_json()`` to its facts file)."""

    def __init__(self, text: str):
        self.text = text

    def to_json(self) -> str:
        return self.text


def build_runtime(cache_root: Path, runner: Runner, timeout: float) -> BuildResult:
    """runtime.o, compiled once per emulator version (~5 s); its facts file lists the symbols it defines (the
    judge's allow-list for what a candidate's object may reach through the headers): `runtime_symbols`."""
    key = _key("runtime", "with-defined-symbols", emulator_hash())  # a runtime.o cached without its symbol list is not reused

    def run(work: Path) -> _Kept:
        q = shlex.quote
        obj, names = work / "runtime.o", work / "runtime.defined"
        native_build._run(runner, ["/bin/sh", "-c",
                                   f"{CXX} {' '.join(CXXFLAGS)} -I{q(str(INCLUDE))} -c {q(str(RUNTIME))} -o {q(str(obj))} && "
                                   f"nm --defined-only --format=posix {q(str(obj))} | cut -d' ' -f1 > {q(str(names))}"],
                          work, timeout)
        return _Kept(json.dumps(sorted(set(names.read_text().split()))))

    return native_build._build_into_cache(key, "runtime.o", cache_root, "ascend_sim/runtime", run, False)


def runtime_symbols(runtime: BuildResult) -> Path:
    """The file listing what runtime.o defines (a JSON list of names)."""
    return runtime.path.parent / binary_facts.FACTS_NAME


_CUBE_API = re.compile(r"\b(Mmad|LoadData|Fixpipe|Nd2NzParams|Matmul\s*<|MatmulImpl\s*<)|TPosition::(A1|A2|B1|B2|CO1|C1|C2)\b")
_VECTOR_SIDE = re.compile(r"\bASCEND_IS_AIV\b|TPosition::VEC(IN|OUT|CALC)\b|QuePosition::VEC(IN|OUT|CALC)\b|TBuf\s*<\s*>")


def kernel_cores(kernel_src: str) -> int:
    """Which cores the kernel needs, as the device compiler decides it from the code: 0 vector cores only, -1
    cube cores only, 1 or 2 a MIX kernel (one cube core and that many vector cores per block). An explicit
    KERNEL_TYPE_* says it outright."""
    if "KERNEL_TYPE_MIX_AIC_1_1" in kernel_src:
        return 1
    if "KERNEL_TYPE_MIX_AIC_1_2" in kernel_src:
        return 2
    if "KERNEL_TYPE_AIV_ONLY" in kernel_src:
        return 0
    # the high-level Matmul API makes a MIX kernel (the AIC serves the AIVs' requests) unless the kernel says
    # it is cube-only, as CANN builds it
    if (re.search(r"\b(Matmul|MatmulImpl)\s*<", kernel_src) and "ASCENDC_CUBE_ONLY" not in kernel_src
            and "KERNEL_TYPE_AIC_ONLY" not in kernel_src):
        return 2
    cube = bool(_CUBE_API.search(kernel_src)) or "KERNEL_TYPE_AIC_ONLY" in kernel_src
    if not cube:
        return 0
    if "KERNEL_TYPE_AIC_ONLY" in kernel_src:
        return -1
    return 2 if _VECTOR_SIDE.search(kernel_src) else -1


def kernel_prelude(project: Project) -> str:
    cores = kernel_cores(project.sources["kernel_src"])
    return (
        "// generated by the ascend-sim build: what msopgen's kernel build provides\n"
        "#define EVK_SIM_KERNEL 1\n"
        + (f"#define EVK_SIM_MIX {cores}  // the cores this kernel runs on (build.py: kernel_cores)\n" if cores else "")
        # the kernel runs on the CPU, as in CANN's CPU debug build: sources keep their NPU-only parts (the
        # <<<>>> launch helper of the samples' op_kernel files) under #ifndef ASCENDC_CPU_DEBUG, or under
        # #ifndef __CCE_KT_TEST__, the CPU-debug macro of older CANN releases (community projects made with
        # them keep `xxx_do(...) { xxx<<<...>>>(...); aclrtSynchronizeStream(...); }` in op_kernel)
        + "#define ASCENDC_CPU_DEBUG 1\n#define __CCE_KT_TEST__ 1\n"
        '#include "kernel_operator.h"\n'
        f'#include "{project.tiling_header}"\n'
        "namespace optiling {}\n"
        "using namespace optiling;  // kernel code names the tiling struct without its namespace\n"
        # a kernel named like a C library function (asinh, div, fmax) would clash with its declaration in the
        # host C library the emulator links; the device has none: the entry is renamed (Project.kernel_symbol)
        + (f"#define {project.kernel_name} evk_kernel_{project.kernel_name}\n"
           if project.kernel_name in LIBC_NAMES else "")
        + '#include "kernel_src.cpp"\n'
        + launch_adapter(project)
    )


def launch_adapter(project: Project) -> str:
    """A kernel-launch sample's entry takes its own parameters (Project.launch_args): an adapter with the
    operator's arguments (inputs..., outputs..., workspace, tiling) calls it with each in its place."""
    if project.launch_args is None:
        return ""
    n_in, n_out = len(project.inputs), len(project.outputs)
    names = [f"evk_in{i}" for i in range(n_in)] + [f"evk_out{j}" for j in range(n_out)] + ["evk_ws", "evk_tiling"]
    pick = {"input": lambda k: f"evk_in{k}", "output": lambda k: f"evk_out{k}", "workspace": lambda k: "evk_ws",
            "tiling": lambda k: "evk_tiling"}
    call = ", ".join(pick[kind](k) for kind, k in project.launch_args)
    return (f'// a kernel-launch entry, called with its own parameters (project.launch_arguments)\n'
            f'extern "C" void {project.kernel_symbol}({", ".join("GM_ADDR " + n for n in names)}) '
            f"{{ {project.kernel_name}({call}); }}\n")


def _write_sources(work: Path, project: Project) -> None:
    """The project's files as msopgen lays them out (the tiling header beside the host source, and wherever the
    sources include it from); file names = the candidate's string names, so diagnostics point at them."""
    src = project.sources
    (work / "op_host").mkdir()
    tiling = work / "op_host" / Path(project.tiling_header).name
    tiling.write_text(src["host_tiling_src"])
    if project.tiling_header != tiling.name:  # included with a relative path, e.g. "op_host/x_tiling.h"
        # ... or "../op_kernel/x_tiling.h" from op_host/ (a tiling struct kept with the kernel)
        for alias in (work / project.tiling_header, work / "op_host" / project.tiling_header):
            if work in alias.resolve().parents and not alias.resolve().exists():
                alias.resolve().parent.mkdir(parents=True, exist_ok=True)
                alias.resolve().write_text(src["host_tiling_src"])
    (work / judge.HOST_FILE).write_text(src["host_operator_src"])
    (work / judge.KERNEL_FILE).write_text(src["kernel_src"])


# one translation unit: the object (with its dependency list), the tokens the candidate spelled (the lines of
# the -fdebug-cpp preprocessing that hold a token of a file in the build folder) and the object's undefined
# symbols; then the link with the runtime object. $1 unit name, $2 source, $3 output library, $4 runtime.o,
# $5 the build folder, then the compiler flags.
_UNIT_SCRIPT = (
    'unit=$1; src=$2; out=$3; rt=$4; work=$5; shift 5; '
    f'({CXX} "$@" -MD -MF "$unit.d" -c "$src" -o "$unit.o" 2>"$unit.log"; echo $? > "$unit.rc") & '
    f'({CXX} "$@" -E -fdebug-cpp "$src" 2>/dev/null | grep -F "{{P:$work/" > "$unit.tok"; true) & '
    'wait; cat "$unit.log" >&2; [ "$(cat "$unit.rc")" = 0 ] || exit 1; '
    'nm --undefined-only --format=posix "$unit.o" > "$unit.und" && '
    'cut -d" " -f1 "$unit.und" | sed "s/@.*//" | c++filt > "$unit.dem" && '
    # the kernel's libm calls go to the runtime's counting wrappers (evk_libm_<name>, listed from its symbols);
    # the judge's facts above keep the names the candidate's code reached
    '{ [ "$unit" != kernel ] || { nm -g --defined-only --format=posix "$rt" | '
    'awk \'$1 ~ /^evk_libm_/ { n = $1; sub(/^evk_libm_/, "", n); print n, $1 }\' > "$unit.redef" && '
    'objcopy --redefine-syms="$unit.redef" "$unit.o"; }; } && '
    f'{CXX} {LINK[0]} -o "$out" "$unit.o" "$rt" {" ".join(LINK[1:])}'
)


def _unit_facts(work: Path, unit: str, project: Project, view: BuildView) -> judge.UnitFacts:
    """The judge's facts of one compiled unit in ``work`` (the build's scratch files are removed). The compiler
    named every file as the build saw it (``view``: /build, /opt/evk/ascend/include in the sandbox), so the
    candidate's files and the roots an include may land in are named that way too."""
    facts = judge.UnitFacts(unit)
    names = [judge.KERNEL_FILE] if unit == "kernel" else [judge.HOST_FILE]
    labels = {view.inside(str(work / n)): n.rsplit(".", 1)[0] for n in names}
    for p in work.rglob("*.h"):  # the tiling header and its aliases
        labels[os.path.normpath(view.inside(str(p)))] = judge.TILING_LABEL
    try:
        tok = work / f"{unit}.tok"
        if not tok.exists() or tok.stat().st_size > binary_facts.MAX_PREPROCESSED_BYTES:
            facts.error = "the preprocessed translation unit is missing or too large to judge"
            return facts
        spelled, seen = judge.spelled_tokens(tok.read_text(errors="replace"), labels)
        if not seen:
            facts.error = "the compiler's token locations (-fdebug-cpp) could not be read"
            return facts
        sources = {"kernel_src": project.sources["kernel_src"], "host_operator_src": project.sources["host_operator_src"],
                   judge.TILING_LABEL: project.sources["host_tiling_src"]}
        for label, toks in spelled.items():
            if len(toks) > judge.MAX_TOKENS:
                facts.error = f"{label} is too large to judge"
                return facts
            facts.files[label] = binary_facts.Facts(tokens=toks,
                                                    line_directives=binary_facts.line_directives(sources[label]))
        facts.foreign = judge.foreign_files(judge.parse_deps((work / f"{unit}.d").read_text(errors="replace")),
                                            Path(view.inside(str(work))), Path(view.inside(str(INCLUDE))))[:20]
        facts.symbols = binary_facts.parse_symbols((work / f"{unit}.und").read_text(errors="replace").splitlines(),
                                                   (work / f"{unit}.dem").read_text(errors="replace").splitlines())
    except OSError as exc:
        facts.error = f"the build left no facts ({type(exc).__name__})"
    finally:
        for ext in ("tok", "d", "und", "dem", "o", "log", "rc", "redef"):
            (work / f"{unit}.{ext}").unlink(missing_ok=True)
        (work / RUNTIME_OBJ).unlink(missing_ok=True)
    return facts


def _build_unit(unit: str, project: Project, key_parts: list[str], cache_root: Path, runner: Runner,
                timeout: float, flags: list[str], budget: "build_cache.CandidateBudget | None" = None) -> BuildResult:
    runtime = build_runtime(cache_root, runner, timeout)
    key = _key(unit, judge.JUDGE_VERSION, "libm-charged", emulator_hash(), *key_parts)
    source = "kernel_tu.cpp" if unit == "kernel" else judge.HOST_FILE

    def run(work: Path) -> judge.UnitFacts:
        _write_sources(work, project)
        if unit == "kernel":
            (work / "kernel_tu.cpp").write_text(kernel_prelude(project))
        # the runtime object at a fixed place in the build folder (a copy: the build folder is writable)
        shutil.copyfile(runtime.path, work / RUNTIME_OBJ)
        common = [*CXXFLAGS, f"-I{INCLUDE}", f"-I{work}", f"-I{work / 'op_host'}", *flags,
                  *native_build.unit_flags(work)]
        native_build._run(runner, ["/bin/sh", "-c", _UNIT_SCRIPT, "sh", unit, str(work / source), str(work / "lib.so"),
                                   str(work / RUNTIME_OBJ), str(work), *common], work, timeout)
        # kept in the cache as the build's facts file
        return _unit_facts(work, unit, project, build_sandbox.view_of(runner, work))

    try:
        result = native_build._build_into_cache(key, "lib.so", cache_root, f"ascend_sim/{unit}s", run, False, budget)
    except CompileError as exc:
        raise CompileError(_ascend_diagnostics(exc.diagnostics, project)) from None
    try:  # fresh or cached, the facts are the published file's
        result.facts = judge.UnitFacts.from_json((result.path.parent / binary_facts.FACTS_NAME).read_text())
    except (OSError, ValueError, KeyError, TypeError) as exc:
        result.facts = judge.UnitFacts(unit, error=f"the build's facts are unreadable ({type(exc).__name__})")
    result.seconds += runtime.seconds
    return result


def build_kernel(project: Project, combo: int, cache_root: Path, runner: Runner, timeout: float = 300.0,
                 budget: "build_cache.CandidateBudget | None" = None) -> BuildResult:
    """The kernel library of dtype combination ``combo`` (runtime + kernel TU, linked with --no-undefined); its
    facts (judge.UnitFacts) in ``result.facts``."""
    macros = project.macros(combo)
    src = project.sources
    return _build_unit("kernel", project, [kernel_prelude(project), project.tiling_header, " ".join(macros),
                                           src["host_tiling_src"], src["kernel_src"]],
                       cache_root, runner, timeout, list(macros), budget)


# host code's getenv is the emulator's empty environment (include/evk_sim/host_env.h): the host object never
# reaches the process environment (judge.py), and a TilingFunc's tuning knob reads as unset
HOST_FLAGS = ("-include", "evk_sim/host_env.h")


def build_host(project: Project, cache_root: Path, runner: Runner, timeout: float = 300.0,
               budget: "build_cache.CandidateBudget | None" = None) -> BuildResult:
    """The host library (runtime + host TU: TilingFunc, InferShape, OpDef); its facts in ``result.facts``."""
    src = project.sources
    flags = list(HOST_FLAGS)
    return _build_unit("host", project, [project.tiling_header, " ".join(flags), src["host_tiling_src"],
                                         src["host_operator_src"]], cache_root, runner, timeout, flags, budget)


def _ascend_diagnostics(text: str, project: Project) -> str:
    """Diagnostics name the candidate's strings (kernel_src.cpp, host_operator_src.cpp, host_tiling_src)."""
    out = []
    tiling = Path(project.tiling_header).name
    for line in text.splitlines():
        if line.startswith(tiling + ":"):
            line = f"host_tiling_src ({tiling}):" + line[len(tiling) + 1:]
        elif line.startswith("kernel_tu.cpp"):
            line = "kernel prelude: " + line
        elif line.startswith("link: error: undefined reference"):
            line = line.split(" (native code")[0] + " (a function or member the emulator does not provide, or " \
                   "one declared in the kernel/host source but never defined)"
        out.append(line)
    return "\n".join(out)
