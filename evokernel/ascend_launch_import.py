"""A kernel-launch Ascend C sample (a kernel and the main() that launches it) -> an EvoKernel candidate.

CANN's kernel-launch samples, and the community code built from them, have no op project: a kernel file
(``extern "C" __global__ __aicore__ void add_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z)``), a ``main.cpp`` that
allocates the tensors, reads them from files and launches the kernel (``ICPU_RUN_KF`` in its CPU-debug branch,
``<<<>>>``/``ACLRT_LAUNCH_KERNEL`` in its NPU branch), sometimes a host tiling file (``GenerateTiling``)::

    MatmulLeakyReluInvocation/main.cpp                               the launcher
    MatmulLeakyReluInvocation/matmul_leakyrelu_custom.cpp            the kernel
    MatmulLeakyReluInvocation/matmul_leakyrelu_custom_tiling.cpp     its host tiling (optional)
    MatmulLeakyReluInvocation/scripts/gen_data.py                    the inputs' dtypes (read, never run)

`find_launch_sample` reads such a folder into the same six strings an op project becomes: the kernel goes in
**byte for byte** as ``kernel_src``; ``host_operator_src`` holds the sample's ``main.cpp`` and tiling file byte for
byte after a generated prelude, and a generated TilingFunc runs that main() as CANN's CPU-debug build would
(``ASCENDC_CPU_DEBUG``), with the emulator's ``tikicpulib.h``: its ``ICPU_RUN_KF`` records the launch (block
count, the tiling's bytes, the workspace's size) instead of running it, and the TilingFunc hands those over
(`tikicpu::TilingFromLaunch`). The json names the kernel's tensor parameters (read by main() from files: inputs;
written to files: outputs; a name with ``tiling``: the tiling; ``workspace``: the workspace), with dtypes from
the kernel's ``(__gm__ T*)`` casts, else the sample's ``gen_data.py``, else ``dtypes`` given by the caller. The
verifier calls such a kernel by parameter name (verifier/backends/ascend_sim/project.py, ``launch_arguments``).
A sample's sizes are fixed in its code: the task must use them (the TilingFunc says so otherwise).

This is an ascend-sim candidate: CANN's own op build expects an op project's kernel signature.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from evokernel.ascend_import import ImportError_, OpProject, candidate_source, find_project, read_source, snake_case

__all__ = ["find_launch_sample", "import_sample"]

_SKIP = {"build", "build_out", "output", "input", ".ipynb_checkpoints", "cmake", "CppExtensions"}
# C types of GM casts -> json dtype names
_CTYPE = {"half": "float16", "float16_t": "float16", "float": "float", "float32_t": "float", "bfloat16_t": "bfloat16",
          "int32_t": "int32", "int16_t": "int16", "int8_t": "int8", "uint8_t": "uint8", "int64_t": "int64",
          "bool": "bool"}
# numpy dtype spellings in gen_data.py -> json dtype names
_NP = {"float16": "float16", "half": "float16", "float32": "float", "float": "float", "single": "float",
       "int32": "int32", "int16": "int16", "int8": "int8", "uint8": "uint8", "int64": "int64", "bool_": "bool",
       "bool": "bool"}
_GE = {"float16": "DT_FLOAT16", "float": "DT_FLOAT", "bfloat16": "DT_BF16", "int32": "DT_INT32", "int16": "DT_INT16",
       "int8": "DT_INT8", "uint8": "DT_UINT8", "int64": "DT_INT64", "bool": "DT_BOOL"}


def _clean(text: str) -> str:
    from evokernel.verifier.backends.ascend_sim.project import strip_comments

    return strip_comments(text)


def _call_args(text: str, name: str) -> list[list[str]]:
    """The argument lists of every call ``name(...)`` in ``text`` (comments removed)."""
    from evokernel.verifier.backends.ascend_sim.project import _match, split_args

    out = []
    for m in re.finditer(rf"\b{re.escape(name)}\s*\(", text):
        close = _match(text, m.end() - 1, "(", ")")
        out.append(split_args(text[m.end():close]))
    return out


def _ident(expr: str) -> str:
    """The variable an argument expression names: ``(uint8_t *)x`` -> x, ``reinterpret_cast<uint8_t*>(x)`` -> x."""
    names = re.findall(r"[A-Za-z_]\w*", re.sub(r"<[^<>]*>", "", expr))
    names = [n for n in names if n not in {"reinterpret_cast", "static_cast", "const_cast", "uint8_t", "void", "GM_ADDR",
                                             "__gm__", "char", "const"}]
    return names[-1] if names else expr.strip()


def _cast_dtype(kernel: str, param: str) -> str | None:
    """The element type the kernel casts a GM parameter to: ``(__gm__ half*)x`` or ``reinterpret_cast<__gm__
    float*>(x)``, when it is a concrete type (not a template parameter)."""
    pats = [rf"\(\s*__gm__\s+([A-Za-z_]\w*)\s*\*\s*\)\s*\(?\s*{re.escape(param)}\b",
            rf"reinterpret_cast\s*<\s*__gm__\s+([A-Za-z_]\w*)\s*\*\s*>\s*\(\s*{re.escape(param)}\s*\)"]
    found = {m.group(1) for p in pats for m in re.finditer(p, kernel)}
    if not found or found - set(_CTYPE):  # none, or a template parameter's name
        return None
    types = {_CTYPE[t] for t in found}
    return types.pop() if len(types) == 1 else None


def _gen_data_dtype(gen_data: str, path: str, output: bool) -> str | None:
    """The dtype gen_data.py gives the array it writes to ``path`` (for an output: its golden array)."""
    base = Path(path).name
    writes = re.findall(r"([A-Za-z_]\w*)\s*\.\s*tofile\s*\(\s*[\"']([^\"']+)[\"']", gen_data)
    var = next((v for v, p in writes if Path(p).name == base), None)
    if var is None and output:
        var = next((v for v, p in writes if "golden" in Path(p).name), None)
    if var is None:
        return None
    defs = re.findall(rf"^\s*{re.escape(var)}\s*=\s*(.+)$", gen_data, re.M)
    for d in reversed(defs):
        m = re.findall(r"(?:astype\s*\(\s*|dtype\s*=\s*)(?:np\.|numpy\.)?([A-Za-z_0-9]+)", d)
        if m:
            return _NP.get(m[-1])
    return None


def _snake_to_pascal(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.split("_") if p)


def _kernel_file(folder: Path, kernel: str, main: Path) -> Path | None:
    """The .cpp beside main() that defines (not only declares) the kernel entry."""
    from evokernel.verifier.backends.ascend_sim.project import _match

    pat = re.compile(r'extern\s+"C"\s+(?:__global__\s+|__aicore__\s+)+void\s+' + re.escape(kernel) + r"\s*\(")
    for f in sorted(folder.glob("*.cpp")):
        text = _clean(read_source(f))
        if f == main:
            continue
        for m in pat.finditer(text):
            if text[_match(text, m.end() - 1, "(", ")") + 1:].lstrip().startswith("{"):
                return f
    return None


def find_launch_sample(root: Path, dtypes: dict[str, str] | None = None) -> OpProject:
    """The kernel-launch sample under ``root`` (its folder or one above it) as an op project's strings."""
    from evokernel.verifier.backends.ascend_sim.project import kernel_params

    root = Path(root)
    mains = [f for f in sorted(root.rglob("*.cpp")) if not set(f.relative_to(root).parts) & _SKIP
             and "ICPU_RUN_KF" in _clean(read_source(f))]
    if not mains:
        raise ImportError_(f"{root}: no kernel-launch sample found (a main.cpp whose CPU-debug branch launches the "
                           "kernel with ICPU_RUN_KF)")
    if len(mains) > 1:
        raise ImportError_(f"{root}: several kernel-launch samples ({', '.join(str(m.relative_to(root)) for m in mains)}); "
                           "give the folder of one")
    main = mains[0]
    folder = main.parent
    main_text = read_source(main)
    clean = _clean(main_text)
    runs = _call_args(clean, "ICPU_RUN_KF")
    if len(runs) != 1:
        raise ImportError_(f"{main}: {len(runs)} ICPU_RUN_KF launches; an imported sample launches one kernel")
    kernel, _, *args = runs[0]
    kernel = _ident(kernel)
    kfile = _kernel_file(folder, kernel, main)
    if kfile is None:
        raise ImportError_(f"{folder}: no .cpp defines the kernel {kernel} that main() launches")
    ktext = read_source(kfile)
    params = kernel_params(ktext, kernel)
    names = [_ident(a) for a in args]
    if len(params) != len(names):
        raise ImportError_(f"{main}: ICPU_RUN_KF passes {len(names)} arguments, the kernel {kernel} takes {len(params)}")
    reads = {_ident(c[2]): c[0].strip().strip('"') for c in _call_args(clean, "ReadFile") if len(c) >= 3}
    writes = {_ident(c[1]): c[0].strip().strip('"') for c in _call_args(clean, "WriteFile") if len(c) >= 2}
    roles: list[str] = []
    for arg, prm in zip(names, params):
        if "tiling" in arg.lower() or "tiling" in prm.lower():
            roles.append("t")
        elif arg in reads and arg in writes:
            raise ImportError_(f"{main}: {arg} is read from a file and written back (an in-place argument); "
                               "write the candidate by hand")
        elif arg in reads:
            roles.append("i")
        elif arg in writes:
            roles.append("o")
        elif re.search(r"(?i)work_?space|^ws$", arg) or re.search(r"(?i)work_?space|^ws$", prm):
            roles.append("w")
        else:
            raise ImportError_(f"{main}: the kernel's argument {arg} is neither read from a file (an input), written to "
                               "one (an output), the tiling nor the workspace")
    if "i" not in roles or "o" not in roles:
        raise ImportError_(f"{main}: the launch has no {'input' if 'i' not in roles else 'output'} (ReadFile/WriteFile "
                           "in its CPU-debug branch)")
    # dtypes: the caller's, the kernel's GM casts, the sample's gen_data.py
    gen = next((f for f in [folder / "scripts" / "gen_data.py", folder / "gen_data.py"] if f.is_file()), None)
    gen_text = read_source(gen) if gen else ""
    kclean = _clean(ktext)
    desc: dict = {"op": _snake_to_pascal(kernel), "input_desc": [], "output_desc": []}
    unknown = []
    for arg, prm, role in zip(names, params, roles):
        if role not in "io":
            continue
        dt = (dtypes or {}).get(prm) or (dtypes or {}).get(arg) or _cast_dtype(kclean, prm) or \
            _gen_data_dtype(gen_text, (reads if role == "i" else writes)[arg], role == "o")
        if dt is None:
            unknown.append(prm)
            continue
        if dt not in _GE:
            raise ImportError_(f"{kernel}: dtype {dt!r} of {prm} is not one this importer writes ({', '.join(_GE)})")
        desc["input_desc" if role == "i" else "output_desc"].append(
            {"name": prm, "param_type": "required", "format": ["ND"], "type": [dt]})
    if unknown:
        raise ImportError_(f"{kernel}: the dtypes of {', '.join(unknown)} are neither in the kernel's GM casts nor in "
                           "gen_data.py: give them (dtypes, e.g. x=float16)")
    # host files main() needs: the .cpp files of its folder defining what it declares extern (GenerateTiling)
    externs = set(re.findall(r"\bextern\s+(?:\"C\"\s+)?[\w:<>\s\*&]+?\b([A-Za-z_]\w*)\s*\(", clean)) - {kernel}
    helpers = [f for f in sorted(folder.glob("*.cpp")) if f not in (main, kfile) and any(
        re.search(rf"\b{re.escape(e)}\s*\([^;{{]*\)\s*(?:const\s*)?\{{", _clean(read_source(f))) for e in externs)]
    local = [inc for inc in re.findall(r'#\s*include\s*"([^"]+)"', kclean) if (folder / inc).is_file()]
    if local:
        raise ImportError_(f"{kfile.name} includes the sample's own header(s) {local}: the candidate's kernel string "
                           "is one file; write the candidate by hand")
    op = desc["op"]
    snake = snake_case(op)
    tiling_name = f"{snake}_tiling.h"
    # no tiling class is registered: the launch's tiling bytes are whatever main() passes (a TCubeTiling, a struct
    # of its own), which a registered class's size would only contradict (a tiling_size warning on honest code)
    tiling = (f"// generated by `evokernel ascend import`: {kernel} reads its tiling (if any) itself from the bytes\n"
              f"// main() hands ICPU_RUN_KF; no tiling class is registered\n#include \"register/tilingdata_base.h\"\n")
    host = _host_source(op, kernel, "".join(roles), desc, main_text, main.name,
                        [(h.name, read_source(h)) for h in helpers], tiling_name)
    files = {"kernel_src": kfile}
    embedded = {"host_operator_src": [main, *helpers]}
    return OpProject(op=op, snake=snake, desc=desc, json_text=json.dumps([desc], indent=4) + "\n", tiling=tiling,
                     host=host, kernel=read_source(kfile), files=files, json_from_opdef=True, embedded=embedded,
                     origin="a kernel-launch sample")


def _host_source(op: str, kernel: str, roles: str, desc: dict, main_text: str, main_name: str,
                 helpers: list[tuple[str, str]], tiling_name: str) -> str:
    ins = "".join(f'        this->Input("{d["name"]}").ParamType(REQUIRED).DataType({{ge::{_GE[d["type"][0]]}}})'
                  f'.Format({{ge::FORMAT_ND}});\n' for d in desc["input_desc"])
    outs = "".join(f'        this->Output("{d["name"]}").ParamType(REQUIRED).DataType({{ge::{_GE[d["type"][0]]}}})'
                   f'.Format({{ge::FORMAT_ND}});\n' for d in desc["output_desc"])
    parts = [
        f"// generated by `evokernel ascend import` from a kernel-launch sample: its {main_name}"
        f"{''.join(', ' + n for n, _ in helpers)} follow byte for byte, built as CANN's CPU-debug build builds them\n"
        "// (ASCENDC_CPU_DEBUG); the TilingFunc below runs that main(), whose ICPU_RUN_KF records the launch\n"
        "// (tikicpulib.h), and gives the emulator its block count, tiling and workspace\n",
        "#define ASCENDC_CPU_DEBUG 1\n#define __CCE_KT_TEST__ 1\n#ifndef SOC_VERSION\n#define SOC_VERSION \"Ascend910B1\"\n"
        "#endif\n",
        f'#include "{tiling_name}"\n#include "register/op_def_registry.h"\n#include "tikicpulib.h"\n',
        "#define main launch_sample_main\n",
        f"// ---- {main_name} ----\n", main_text if main_text.endswith("\n") else main_text + "\n",
        "#undef main\n",
    ]
    defined = _defined_functions(main_text)
    for name, text in helpers:
        # main.cpp and its helpers are separate translation units on CANN; here they share one, so a function both
        # define with internal linkage (a static or anonymous-namespace helper: two definitions could not link
        # otherwise) is renamed in the helper's copy
        clash = sorted(defined & _defined_functions(text))
        parts += [f"// ---- {name} ----\n", "".join(f"#define {c} {c}_{_file_tag(name)}\n" for c in clash),
                  text if text.endswith("\n") else text + "\n", "".join(f"#undef {c}\n" for c in clash)]
        defined |= _defined_functions(text)
    parts.append(
        "// ---- generated ----\nnamespace optiling {\n"
        "static ge::graphStatus TilingFunc(gert::TilingContext* context) {\n"
        f'    return tikicpu::TilingFromLaunch(context, &launch_sample_main, "{kernel}", "{roles}");\n'
        "}\n}  // namespace optiling\n"
        f"namespace ops {{\nclass {op} : public OpDef {{\npublic:\n    explicit {op}(const char* name) : OpDef(name) {{\n"
        f"{ins}{outs}"
        "        this->AICore().SetTiling(optiling::TilingFunc);\n"
        '        this->AICore().AddConfig("ascend910b");\n    }\n};\n'
        f"OP_ADD({op});\n}}  // namespace ops\n")
    return "".join(parts)


def _defined_functions(text: str) -> set[str]:
    """Names of the functions a source file defines (a definition starts a line: type, name, parameters, body)."""
    clean = _clean(text)
    return set(re.findall(r"(?m)^[ \t]*(?:static\s+|inline\s+|constexpr\s+)*[A-Za-z_][\w:<>,\s\*&]*?[\s\*&]"
                          r"([A-Za-z_]\w*)\s*\([^;{}()]*(?:\([^()]*\)[^;{}()]*)*\)\s*(?:const\s*)?\{", clean)) - {
        "if", "for", "while", "switch", "return", "main"}


def _file_tag(name: str) -> str:
    return re.sub(r"\W", "_", Path(name).stem)


def import_sample(root: Path, out: Path | None = None, out_shape: str | None = None,
                  dtypes: dict[str, str] | None = None) -> tuple[OpProject, str]:
    """An op project under ``root`` (evokernel/ascend_import.py), else a kernel-launch sample: its candidate
    (written to ``out`` when given)."""
    try:
        p = find_project(root)
    except ImportError_ as first:
        try:
            p = find_launch_sample(root, dtypes)
        except ImportError_ as second:
            if "no kernel-launch sample found" in str(second):
                raise ImportError_(f"{first}\n(nor a kernel-launch sample: {second})") from None
            raise
    text = candidate_source(p, out_shape)
    if out is not None:
        Path(out).write_text(text, encoding="utf-8")
    return p, text
