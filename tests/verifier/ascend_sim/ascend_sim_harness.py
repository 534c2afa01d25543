"""Test harness for the Ascend C CPU emulator: builds kernels with g++ against the emulator's headers and
runtime, runs them, and reads back outputs and the JSON report. No dependency on the evokernel package."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
SIM = ROOT / "verifier" / "backends" / "ascend_sim"
INCLUDE = SIM / "include"
RUNTIME = SIM / "runtime.cpp"
CXX = os.environ.get("CXX", "g++")
CXXFLAGS = ["-std=c++17", "-O1", "-Werror=narrowing"]  # clang (bisheng) rejects narrowing in braces; g++ only warns

NP_TO_SPEC = {
    np.dtype(np.float32): "float32",
    np.dtype(np.float16): "float16",
    np.dtype(np.int32): "int32",
    np.dtype(np.int16): "int16",
    np.dtype(np.int8): "int8",
    np.dtype(np.uint8): "uint8",
    np.dtype(np.int64): "int64",
}

COMPILE_TIMES: dict[str, float] = {}


class CompileError(RuntimeError):
    pass


@dataclass
class Result:
    rc: int
    stderr: str
    report: dict
    outputs: dict = field(default_factory=dict)

    @property
    def violations(self) -> list[dict]:
        return self.report.get("violations", [])

    def rules(self, min_severity: str = "warning") -> set[str]:
        order = {"warning": 0, "error": 1, "fatal": 2}
        return {v["rule"] for v in self.violations if order[v["severity"]] >= order[min_severity]}

    def find(self, rule: str) -> list[dict]:
        return [v for v in self.violations if v["rule"] == rule]


class Sim:
    """One per test session: compiles runtime.cpp once and links it into every program."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.runtime_obj = workdir / "evk_runtime.o"
        self._host_objs: dict[int, Path] = {}
        t = time.perf_counter()
        self._gxx(["-c", str(RUNTIME), "-o", str(self.runtime_obj)], cwd=workdir)
        COMPILE_TIMES["runtime.cpp (once per session)"] = time.perf_counter() - t

    def _gxx(self, args: list[str], cwd: Path, extra_inc: list[Path] = ()) -> None:
        cmd = [CXX, *CXXFLAGS, f"-I{INCLUDE}", *[f"-I{p}" for p in extra_inc], *args]
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
        if r.returncode != 0:
            raise CompileError(f"{' '.join(cmd)}\n{r.stderr[-6000:]}")

    def build(self, d: Path, sources: list[Path], label: str, defines: dict | None = None,
              extra_inc: list[Path] = (), flags: list[str] = ()) -> Path:
        """Compile and link sources + the runtime object into d/prog (one g++ call)."""
        exe = d / "prog"
        defs = [f"-D{k}={v}" for k, v in (defines or {}).items()]
        t = time.perf_counter()
        self._gxx([*flags, *defs, *map(str, sources), str(self.runtime_obj), "-rdynamic", "-o", str(exe)], cwd=d,
                  extra_inc=[d, *extra_inc])
        COMPILE_TIMES[label] = time.perf_counter() - t
        return exe

    # ---- operator projects (msopgen layout: op_host + op_kernel) ----
    def op_project(self, d: Path, *, op: str, kernel_name: str, kernel_src: str, host_src: str,
                   tiling_src: str, tiling_header: str, dtypes: dict[str, str], label: str) -> Path:
        """Write an operator project like the MultiKernelBench candidate format lays it out, with the kernel-side
        prelude the emulator backend uses (the tiling header compiled into the kernel translation unit), and build
        it. dtypes maps tensor names to C types for the DTYPE_<NAME> macros."""
        (d / "op_host").mkdir(parents=True, exist_ok=True)
        (d / "op_kernel").mkdir(parents=True, exist_ok=True)
        (d / "op_host" / tiling_header).write_text(tiling_src)
        (d / "op_host" / f"{kernel_name}.cpp").write_text(host_src)
        (d / "op_kernel" / f"{kernel_name}.cpp").write_text(kernel_src)
        (d / "kernel_tu.cpp").write_text(
            "#define EVK_SIM_KERNEL 1\n#include \"kernel_operator.h\"\n"
            f"#include \"{tiling_header}\"\nnamespace optiling {{}}\nusing namespace optiling;\n"
            f"#include \"op_kernel/{kernel_name}.cpp\"\n")
        (d / "main.cpp").write_text(
            "#include <cstdio>\n#include <cstring>\n#include \"evk_sim/runtime.h\"\n"
            f"extern \"C\" void {kernel_name}();\n"
            "int main(int argc, char** argv) {\n"
            "    if (argc > 2 && !std::strcmp(argv[1], \"--describe\")) {\n"
            "        const char* s = evk_sim_describe_op(argv[2]);\n"
            "        std::puts(s ? s : \"null\");\n"
            "        return 0;\n"
            "    }\n"
            "    if (argc > 1 && !std::strcmp(argv[1], \"--list\")) { std::puts(evk_sim_list_ops()); return 0; }\n"
            f"    return evk_sim_main(argc, argv, (evk_kernel_fn)&{kernel_name});\n"
            "}\n")
        defines = {f"DTYPE_{k.upper()}": v for k, v in dtypes.items()}
        exe = d / "prog"
        t = time.perf_counter()
        # kernel TU (with DTYPE_ macros), host TU, launcher: one g++ call
        k_obj = d / "kernel.o"
        self._gxx([*[f"-D{k}={v}" for k, v in defines.items()], "-c", "kernel_tu.cpp", "-o", str(k_obj)], cwd=d,
                  extra_inc=[d, d / "op_host"])
        # the host TU does not depend on the dtypes: compiled once per distinct host source
        key = hash((host_src, tiling_src))
        h_obj = self._host_objs.get(key)
        if h_obj is None:
            h_obj = d / "host.o"
            self._gxx(["-c", f"op_host/{kernel_name}.cpp", "-o", str(h_obj)], cwd=d, extra_inc=[d / "op_host"])
            self._host_objs[key] = h_obj
        # -rdynamic: the runtime names the kernel function of a raw-GM fault (dladdr)
        self._gxx(["main.cpp", str(k_obj), str(h_obj), str(self.runtime_obj), "-rdynamic", "-o", str(exe)], cwd=d)
        COMPILE_TIMES[label] = time.perf_counter() - t
        return exe

    def run_op(self, exe: Path, d: Path, op: str, inputs: list[tuple[str, np.ndarray]],
               outputs: list[tuple[str, tuple, np.dtype]], attrs: dict | None = None,
               options: dict | None = None, timeout: float = 60) -> Result:
        lines = [f"op {op}", f"report {d / 'report.json'}"]
        for name, arr in inputs:
            p = d / f"in_{name}.bin"
            np.ascontiguousarray(arr).tofile(p)
            lines.append(f"input {name} {NP_TO_SPEC[arr.dtype]} {p} {arr.ndim} {' '.join(map(str, arr.shape))}")
        for name, shape, dt in outputs:
            p = d / f"out_{name}.bin"
            p.unlink(missing_ok=True)  # no stale output from an earlier run
            lines.append(f"output {name} {NP_TO_SPEC[np.dtype(dt)]} {p} {len(shape)} {' '.join(map(str, shape))}")
        for k, v in (attrs or {}).items():
            if isinstance(v, bool):
                lines.append(f"attr {k} bool {int(v)}")
            elif isinstance(v, int):
                lines.append(f"attr {k} int {v}")
            elif isinstance(v, float):
                lines.append(f"attr {k} float {v!r}")
            elif isinstance(v, str):
                lines.append(f"attr {k} str {v}")
            elif isinstance(v, (list, tuple)) and all(isinstance(x, int) for x in v):
                lines.append(f"attr {k} ints {len(v)} {' '.join(map(str, v))}")
            else:
                lines.append(f"attr {k} floats {len(v)} {' '.join(map(repr, v))}")
        for k, v in (options or {}).items():
            lines.append(f"option {k} {v}")
        spec = d / "spec.txt"
        spec.write_text("\n".join(lines) + "\n")
        rep = d / "report.json"
        if rep.exists():
            rep.unlink()
        r = subprocess.run([str(exe), str(spec)], capture_output=True, text=True, timeout=timeout)
        report = json.loads(rep.read_text()) if rep.exists() else {}
        outs = {}
        for name, shape, dt in outputs:
            p = d / f"out_{name}.bin"
            if p.exists():
                outs[name] = np.fromfile(p, dtype=dt).reshape(shape)
        return Result(r.returncode, r.stderr, report, outs)

    # ---- direct launch of case kernels (one program, many kernels) ----
    def launch(self, exe: Path, d: Path, case: str, ins: list[np.ndarray], outs: list[tuple[tuple, np.dtype]],
               block_dim: int = 1, tiling: bytes | None = None, options: dict | None = None,
               inout: list[np.ndarray] = (), timeout: float = 60) -> Result:
        d.mkdir(parents=True, exist_ok=True)
        args = [str(exe), case, "--block-dim", str(block_dim), "--report", str(d / f"{case}.json"), "--name", case]
        for i, a in enumerate(ins):
            p = d / f"{case}_in{i}.bin"
            np.ascontiguousarray(a).tofile(p)
            args += ["--in", str(p)]
        for i, a in enumerate(inout):
            p = d / f"{case}_io{i}.bin"
            np.ascontiguousarray(a).tofile(p)
            args += ["--inout", str(p)]
        for i, (shape, dt) in enumerate(outs):
            p = d / f"{case}_out{i}.bin"
            p.unlink(missing_ok=True)
            args += ["--out", f"{p}:{int(np.prod(shape)) * np.dtype(dt).itemsize}"]
        if tiling is not None:
            p = d / f"{case}_tiling.bin"
            p.write_bytes(tiling)
            args += ["--tiling", str(p)]
        for k, v in (options or {}).items():
            args += ["--option", f"{k}={v}"]
        rep = d / f"{case}.json"
        if rep.exists():
            rep.unlink()
        r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        report = json.loads(rep.read_text()) if rep.exists() else {}
        res = Result(r.returncode, r.stderr, report)
        for i, (shape, dt) in enumerate(outs):
            p = d / f"{case}_out{i}.bin"
            if p.exists():
                res.outputs[i] = np.fromfile(p, dtype=dt).reshape(shape)
        for i, a in enumerate(inout):
            res.outputs[f"io{i}"] = np.fromfile(d / f"{case}_io{i}.bin", dtype=a.dtype).reshape(a.shape)
        return res


CASES_MAIN = r"""
// test-only launcher: one program, many kernels, selected by argv[1]
#include <cstring>
#include "evk_sim/runtime.h"
struct EvkCase { const char* name; evk_kernel_fn fn; };
static EvkCase g_evk_cases[512];
static int g_evk_ncases = 0;
struct EvkCaseReg { EvkCaseReg(const char* n, evk_kernel_fn f) { g_evk_cases[g_evk_ncases++] = EvkCase{n, f}; } };
#define CASE(name, ...)                                                              \
    extern "C" __global__ __aicore__ void name(__VA_ARGS__);                         \
    static EvkCaseReg evk_reg_##name(#name, reinterpret_cast<evk_kernel_fn>(&name)); \
    extern "C" __global__ __aicore__ void name(__VA_ARGS__)
int evk_cases_main(int argc, char** argv) {
    if (argc < 2) return 99;
    for (int i = 0; i < g_evk_ncases; ++i)
        if (!std::strcmp(argv[1], g_evk_cases[i].name)) return evk_sim_launch_main(argc - 1, argv + 1, g_evk_cases[i].fn);
    return 98;
}
"""


def build_cases(sim: Sim, d: Path, source: Path, label: str, flags: list[str] = ()) -> Path:
    """Build a file of CASE(...) kernels into one launcher program."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "evk_cases.h").write_text(CASES_MAIN)
    main = d / "cases_main.cpp"
    main.write_text(f'#include "kernel_operator.h"\n#include "evk_cases.h"\n#include "{source}"\n'
                    "int main(int argc, char** argv) { return evk_cases_main(argc, argv); }\n")
    return sim.build(d, [main], label, flags=flags)


def marked_lines(source: Path, tag: str = "RULE") -> dict[str, tuple[str, int]]:
    """{case: (rule, line)} from `// RULE <rule_id>` markers inside CASE(<case>, ...) bodies."""
    out: dict[str, tuple[str, int]] = {}
    case = None
    for i, line in enumerate(source.read_text().splitlines(), 1):
        m = re.match(r"\s*CASE\((\w+)", line)
        if m:
            case = m.group(1)
        m = re.search(rf"//\s*{tag}\s+(\w+)", line)
        if m and case:
            out[case] = (m.group(1), i)
    return out


def describe(exe: Path, op: str) -> dict | None:
    r = subprocess.run([str(exe), "--describe", op], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def list_ops(exe: Path) -> list[str]:
    return json.loads(subprocess.run([str(exe), "--list"], capture_output=True, text=True, check=True).stdout)


def have_gxx() -> bool:
    return shutil.which(CXX) is not None
