"""Toolchain and device output -> short, actionable `Diagnosis` records for the LLM.

Every matcher below keys on a text the toolchain notes record (ascend-toolchain.md §2, §4, §8):

- build:   clang-style `file:line:col: error: ...` from the kernel compiler; `opbuild run failed!` (host
           sources fail during CMake configure, preceded by `build ops lib error: <gcc diagnostics>`);
           `[ERROR] TBE` markers; `No rule to make target 'package'` (the make step after a failed configure);
           a build that "succeeds" without `build_out/custom_opp_*.run`.
- install: no `libcust_opapi.so` under `<install>/vendors/*/op_api/lib/`.
- runtime: `EZ3003` (op not installed / not found), `EZ9999` with `aivec error`, `retCode=0x31` (vector core
           exception, 507035), `retCode=0x30` (vector core timeout, 507034), `retCode=0x25` (aicore timeout,
           507014), `fftsplus timeout` / 507048. After these faults the device context is unusable
           (`device_fault=True`: health-check the device before the next candidate).
- import:  `import torch_npu` without a loadable CANN names `libhccl.so` / `libascendcl.so` and says to
           "source set_env.sh".

Where the notes do not record an exact text, the matcher is conservative (see the comments) and the
generic fall-back keeps the tail of the output rather than guessing. Pure Python.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

MAX_ERRORS = 12
MAX_LINE = 300
STAGES = ("build", "install", "binding", "runtime", "import")


@dataclass
class Diagnosis:
    stage: str            # build | install | binding | runtime | import
    kind: str             # e.g. compile_error, opbuild_failed, aivec_error (see the matchers)
    message: str          # one sentence for the LLM
    lines: list[str] = field(default_factory=list)  # the evidence: source-mapped error lines, log excerpts
    device_fault: bool = False  # the device needs a health check before it is trusted again

    def text(self) -> str:
        return "\n".join([f"[{self.stage}] {self.message}"] + [f"  {ln}" for ln in self.lines])


def _str(x) -> str:
    if x is None:
        return ""
    if isinstance(x, bytes):
        # build logs may hold binary bytes (§4: "use grep -a")
        return x.decode("utf-8", errors="replace")
    return str(x)


def _clip(s: str) -> str:
    s = s.rstrip()
    return s if len(s) <= MAX_LINE else s[:MAX_LINE] + " ..."


# ---------------------------------------------------------------------------------------------------------
# generated project paths -> candidate string names
# ---------------------------------------------------------------------------------------------------------
_SOURCE_PATTERNS = (
    # (regex on the path with '/' separators, candidate field). Order matters: tiling header before host .cpp.
    (re.compile(r"(^|/)op_host/[^/]*_tiling\.h$"), "host_tiling_src"),
    (re.compile(r"(^|/)op_host/[^/]+\.(cpp|cc)$"), "host_operator_src"),
    (re.compile(r"(^|/)op_kernel/[^/]+\.(cpp|cc|h)$"), "kernel_src"),
    (re.compile(r"(^|/)csrc/op\.cpp$"), "python_bind_src"),
)


def source_field(path: str) -> str | None:
    """'.../AddCustom/op_kernel/add_custom.cpp' -> 'kernel_src'; None for files the candidate did not write."""
    p = path.replace("\\", "/")
    for rx, name in _SOURCE_PATTERNS:
        if rx.search(p):
            return name
    return None


# clang/gcc diagnostics. bisheng/ccec are clang-based (§4); gcc (host, `build ops lib error:`) uses the same
# `file:line:col: error:` shape. `fatal error:` (missing include) is an error too. Searched, not anchored:
# the host errors come prefixed (`build ops lib error: <path>:23:9: error: ...`). Paths with spaces: not matched.
_DIAG = re.compile(r"(?:^|\s)(?P<file>[^\s:]+?):(?P<line>\d+):(?:(?P<col>\d+):)?\s*(?:fatal\s+)?error:\s*(?P<msg>.+)$")


@dataclass(frozen=True)
class CompilerError:
    file: str
    line: int
    col: int | None
    message: str
    field: str | None

    def text(self) -> str:
        where = self.field or self.file
        col = f":{self.col}" if self.col is not None else ""
        return _clip(f"{where}:{self.line}{col}: error: {self.message}")


def compiler_errors(text, max_errors: int = MAX_ERRORS) -> tuple[list[CompilerError], int]:
    """Distinct compiler errors (first max_errors, in order) and how many distinct ones there were."""
    seen: dict[tuple, CompilerError] = {}
    for raw in _str(text).splitlines():
        m = _DIAG.search(raw.strip())
        if not m:
            continue
        f = m["file"]
        e = CompilerError(file=f, line=int(m["line"]), col=int(m["col"]) if m["col"] else None,
                          message=m["msg"].strip(), field=source_field(f))
        key = (e.field or e.file, e.line, e.col, e.message)
        seen.setdefault(key, e)
    errs = list(seen.values())
    return errs[:max_errors], len(errs)


def _grep(text: str, rx: re.Pattern, limit: int = 6) -> list[str]:
    out = []
    for ln in text.splitlines():
        if rx.search(ln):
            c = _clip(ln.strip())
            if c not in out:
                out.append(c)
            if len(out) >= limit:
                break
    return out


def _tail(text: str, n: int = 15) -> list[str]:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return [_clip(ln) for ln in lines[-n:]]


# ---------------------------------------------------------------------------------------------------------
# build (msopgen, build.sh)
# ---------------------------------------------------------------------------------------------------------
_OPBUILD = re.compile(r"opbuild run failed", re.I)
_OPS_LIB = re.compile(r"build ops lib error", re.I)
_TBE = re.compile(r"\[ERROR\]\s*TBE")
_NO_PACKAGE = re.compile(r"No rule to make target\s+['`\"]?package")
_CMAKE_ERROR = re.compile(r"CMake Error")


def analyze_build(rc: int | None, stdout="", stderr="", stage: str = "build") -> list[Diagnosis]:
    """Diagnoses of a failed (or suspicious) msopgen / build.sh run. Empty list: nothing recognised and rc == 0."""
    text = _str(stdout) + "\n" + _str(stderr)
    out: list[Diagnosis] = []
    errs, total = compiler_errors(text)
    host_failed = bool(_OPBUILD.search(text))
    if errs:
        fields = sorted({e.field for e in errs if e.field})
        where = ", ".join(fields) if fields else "the sources"
        more = f" (showing {len(errs)} of {total})" if total > len(errs) else ""
        out.append(Diagnosis(stage, "compile_error", f"compilation failed in {where}{more}",
                             [e.text() for e in errs]))
    if host_failed:
        ev = _grep(text, _OPS_LIB) + _grep(text, _OPBUILD, 2)
        out.append(Diagnosis(stage, "opbuild_failed",
                             "the host sources (host_operator_src / host_tiling_src) did not compile: msopgen's "
                             "opbuild step failed while configuring the project (tiling function, InferShape or "
                             "OpDef)", ev))
    tbe = _grep(text, _TBE)
    if tbe and not errs:
        # the notes record the marker only, not its wording: pass the lines through
        out.append(Diagnosis(stage, "tbe_error", "the kernel compile step (TBE/ccec) reported an error", tbe))
    if _NO_PACKAGE.search(text) and not host_failed and not errs:
        # recorded as the make step after a failed configure; on its own the cause is above it in the log
        out.append(Diagnosis(stage, "no_package_target",
                             "make found no 'package' target: the CMake configure step failed earlier",
                             _grep(text, _CMAKE_ERROR) + _grep(text, _NO_PACKAGE, 1)))
    if rc not in (0, None) and not out:
        out.append(Diagnosis(stage, "build_failed", f"the build exited with code {rc}", _tail(text)))
    return out


def check_build_artifacts(project_dir: str | Path) -> Diagnosis | None:
    """After build.sh: the installer `build_out/custom_opp_*.run` must exist."""
    build_out = Path(project_dir) / "build_out"
    if not sorted(build_out.glob("custom_opp_*.run")):
        return Diagnosis("build", "missing_artifact",
                         "the build produced no installer (build_out/custom_opp_*.run): the operator was not "
                         "packaged", [f"missing: {build_out}/custom_opp_*.run"])
    return None


def installer_path(project_dir: str | Path) -> Path | None:
    """The installer the reference flow runs: the first `build_out/custom_opp_*.run`, sorted."""
    runs = sorted((Path(project_dir) / "build_out").glob("custom_opp_*.run"))
    return runs[0] if runs else None


def check_install_artifacts(install_dir: str | Path, vendor: str = "customize") -> Diagnosis | None:
    """After `custom_opp_*.run --install-path=DIR`: DIR/vendors/<vendor>/op_api/lib/libcust_opapi.so."""
    lib = Path(install_dir) / "vendors" / vendor / "op_api" / "lib" / "libcust_opapi.so"
    if not lib.is_file():
        return Diagnosis("install", "missing_artifact",
                         "the installed operator package has no libcust_opapi.so: the aclnn entry point cannot "
                         "be loaded", [f"missing: {lib}"])
    return None


# ---------------------------------------------------------------------------------------------------------
# runtime (device subprocess) and import
# ---------------------------------------------------------------------------------------------------------
# (kind, regex, message, device_fault), most specific first; the first match names the fault, all matching
# lines are kept as evidence.
_FAULTS = (
    ("vector_core_exception", re.compile(r"retCode=0x31|\b507035\b"),
     "vector core exception on the device (e.g. an out-of-range GM access: check offsets, lengths and the "
     "last block's tail)", True),
    ("vector_core_timeout", re.compile(r"retCode=0x30|\b507034\b"),
     "vector core timeout (the kernel hung: unpaired SetFlag/WaitFlag, a queue EnQue/DeQue mismatch or an "
     "endless loop)", True),
    ("aicore_timeout", re.compile(r"retCode=0x25|\b507014\b"),
     "AI core timeout (the kernel did not finish in time: a hang or far too much work per launch)", True),
    ("fftsplus_timeout", re.compile(r"fftsplus timeout|\b507048\b", re.I),
     "task timeout on the device (fftsplus timeout, 507048)", True),
    ("aivec_error", re.compile(r"EZ9999.*aivec error|aivec error", re.I),
     "the kernel raised a vector core (aivec) error on the device", True),
)
_EZ9999 = re.compile(r"EZ9999")
_EZ3003 = re.compile(r"EZ3003")
_EVIDENCE = re.compile(r"EZ\d{4}|retCode=0x|\b5070\d\d\b|aivec error|fftsplus timeout|MPU address|core id is",
                       re.I)
_IMPORT = re.compile(r"lib(hccl|ascendcl)\.so")
_SET_ENV = re.compile(r"set_env\.sh")


def analyze_runtime(rc: int | None, stdout="", stderr="", stage: str = "runtime") -> list[Diagnosis]:
    text = _str(stdout) + "\n" + _str(stderr)
    out: list[Diagnosis] = []
    imp = analyze_import(text)
    if imp:
        return [imp]
    for kind, rx, msg, fault in _FAULTS:
        if rx.search(text):
            out.append(Diagnosis(stage, kind, msg, _grep(text, _EVIDENCE, 8), device_fault=fault))
            break
    if not out and _EZ9999.search(text):
        # EZ9999 is the generic "Inner Error!" code: without a recognised cause, keep the lines and be safe
        out.append(Diagnosis(stage, "inner_error", "the device runtime reported an inner error (EZ9999)",
                             _grep(text, _EVIDENCE, 8), device_fault=True))
    if _EZ3003.search(text):
        out.append(Diagnosis(stage, "op_not_found",
                             "no kernel was found for the operator (EZ3003): it is not installed where the binding "
                             "looks (ASCEND_CUSTOM_OPP_PATH) or the op name/type does not match the project",
                             _grep(text, _EZ3003, 3)))
    if rc not in (0, None) and not out:
        out.append(Diagnosis(stage, "run_failed", f"the run exited with code {rc}", _tail(text)))
    return out


def analyze_import(text) -> Diagnosis | None:
    """`import torch_npu` without a loadable CANN (§4, §7): the ImportError names libhccl/libascendcl.so and
    asks to source set_env.sh; torch_npu then calls sys.exit(). An environment problem, not the candidate's."""
    t = _str(text)
    lib = _IMPORT.search(t)
    if lib and (_SET_ENV.search(t) or re.search(r"ImportError|cannot open shared object", t)):
        return Diagnosis("import", "cann_not_loaded",
                         f"torch_npu could not load the CANN runtime ({lib.group(0)}): the device environment is "
                         "not set up (source <cann>/set_env.sh); not a fault of the candidate",
                         _grep(t, re.compile(r"lib(hccl|ascendcl)\.so|set_env\.sh|ERR00008"), 4))
    return None


def timeout_diagnosis(stage: str, seconds: float) -> Diagnosis:
    """For the orchestration: a subprocess killed at its deadline. A device-side hang leaves the device
    suspect, so runtime timeouts are device faults."""
    return Diagnosis(stage, "timeout", f"the {stage} step did not finish within {seconds:g} s and was killed",
                     [], device_fault=stage == "runtime")


def format_feedback(diagnoses: list[Diagnosis], max_chars: int = 4000) -> str:
    text = "\n".join(d.text() for d in diagnoses)
    return text if len(text) <= max_chars else text[:max_chars] + "\n  ... (truncated)"


def needs_health_check(diagnoses: list[Diagnosis]) -> bool:
    return any(d.device_fault for d in diagnoses)
