"""C++ and candidate-file generation for a :class:`~.lower.Plan` under a schedule (a dict of knobs).

Each stage becomes one ``extern "C"`` function ``stage<k>``; ``ModelNew.forward`` allocates every
materialised tensor with ``torch.empty`` and calls the stages in order. Sizes are passed to the
native code as runtime arguments (the kernels are not specialised to the task's sizes), scalar
constants of the reference (slopes, eps, scales) are literals.

Families and their knobs (see :mod:`.schedules` for the value sets):

* ``row``      -- :mod:`.rowprog` (vec, unroll, tail, row_cache, math, omp)
* ``gemm``     -- gemm_algo naive | ikj | packed; packed: gemm_mr, gemm_nr, gemm_kc, gemm_mc, gemm_nc
* ``gemv``     -- vec, unroll (accumulators), omp
* ``conv``     -- conv_algo direct | rowvec; conv_ocb (output channels per pass); omp
* ``pool``     -- omp
* ``scan``     -- scan_chains (independent running sums per row: 1 = one serial chain); omp
* ``midreduce``-- mid_chunk (inner columns kept in accumulators); omp
* ``groupnorm``-- gn_stats two_pass | one_pass; omp

Epilogues (elementwise chains fused after an anchor) are row programs over segments of the anchor's
output rows, applied while the tile is cache-hot.
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.analysis import AnalysisError
from evokernel.generators.template.codegen_base import CodegenBase, StageCode, _omp, _prod
from evokernel.generators.template.codegen_conv import ConvStages
from evokernel.generators.template.codegen_gemm import GemmStages
from evokernel.generators.template.codegen_norm import NormStages
from evokernel.generators.template.codegen_pool import PoolStages
from evokernel.generators.template.codegen_reduce import ReduceStages
from evokernel.generators.template.lower import Plan, Stage
from evokernel.generators.template.prelude import prelude
from evokernel.generators.template.rowprog import RowProgram


class Codegen(ConvStages, GemmStages, PoolStages, ReduceStages, NormStages, CodegenBase):
    """One stage's C++ per family (the families' generators are the mixins above)."""

    # ------------------------------------------------------------------------------ stages
    def stage(self, k: int, st: Stage) -> StageCode:
        fam = st.family
        if fam == "row":
            return self.row_stage(k, st)
        if fam in ("gemm", "gemv"):
            return self.gemm_stage(k, st)
        op = self.g.nodes[st.anchor].op if st.anchor is not None else ""
        if fam == "conv":
            return self.convnd_stage(k, st) if op == "convnd" else self.conv_stage(k, st)
        if fam == "pool":
            return self.poolnd_stage(k, st) if op == "poolnd" else self.pool_stage(k, st)
        if fam == "scan":
            return self.scan_stage(k, st)
        if fam == "midreduce":
            return self.argreduce_stage(k, st) if op == "argreduce" else self.midreduce_stage(k, st)
        if fam == "layout":
            return self.layout_stage(k, st)
        if fam == "groupnorm":
            return self.batchnorm_stage(k, st) if op == "batch_norm" else self.groupnorm_stage(k, st)
        raise AnalysisError(f"no code generator for family {fam}")

    def row_stage(self, k: int, st: Stage) -> StageCode:
        g = self.g
        shapes = [g.nodes[i].shape for i in st.nodes] + [g.nodes[e].shape for e in st.externals]
        frame = max(shapes, key=lambda s: (_prod(s), len(s)))
        if len(frame) == 0:
            frame = (1,)
        L = len(frame) - 1
        dims = [f"D{d}" for d in range(L)]
        ptrs = {e: f"p{e}" for e in st.externals}
        prog = RowProgram(g, frame, st.nodes, st.externals, ptrs, "out", self.knobs, dims, "N")
        body, kind = prog.row_body()
        params = [self.ptype(e) for e in st.externals] + ["float* __restrict out"] + \
            [f"int64_t {d}" for d in dims] + ["int64_t N"]
        rows = " * ".join(dims) if dims else "1"
        lines = [f'extern "C" void stage{k}({", ".join(params)}) {{', f"  const int64_t R = {rows};"]
        if kind == "G":
            fn = g.nodes[st.out].attrs["fn"]
            a = g.nodes[st.out].args[0]
            red = {"sum": "+", "mean": "+", "amax": "max", "amin": "min"}[fn]
            init = {"sum": "0.0", "mean": "0.0", "amax": "-INFINITY", "amin": "INFINITY"}[fn]
            lines.append(f"  double total = {init};")
            pragma = _omp(self.knobs, f"reduction({red}:total)")
            if pragma:
                lines.append("  " + pragma)
            lines.append("  for (int64_t r = 0; r < R; ++r) {")
            lines += ["    " + ln for ln in body]
            if red == "+":
                lines.append("    total += (double)gval;")
            else:
                lines.append(f"    total = {'std::max' if red == 'max' else 'std::min'}(total, (double)gval);")
            lines.append("  }")
            count = "(double)R * (double)N" if prog.kind.get(a) == "J" else "(double)R"
            if fn == "mean":
                lines.append(f"  out[0] = (float)(total / ({count}));")
            else:
                lines.append("  out[0] = (float)total;")
        else:
            pragma = _omp(self.knobs)
            if pragma:
                lines.append("  " + pragma)
            lines.append("  for (int64_t r = 0; r < R; ++r) {")
            lines += ["    " + ln for ln in body]
            lines.append("  }")
        lines.append("}")
        call = [f"p{e}" for e in st.externals] + ["out"] + [str(d) for d in frame]
        return StageCode(f"stage{k}", "\n".join(lines) + "\n", call)

    # -------------------------------------------------------------------------------- layout
    def layout_stage(self, k: int, st: Stage) -> StageCode:
        """``transpose_copy`` (the last two dims swapped, in ``tile`` x ``tile`` blocks) and ``trimask``
        (triu/tril: entries outside the triangle zeroed)."""
        g, kn = self.g, self.knobs
        node = g.nodes[st.anchor]  # type: ignore[index]
        x = node.args[0]
        src = g.nodes[x].shape
        B = _prod(src[:-2])
        R, Cn = src[-2], src[-1]
        TL = int(kn.get("tile", 32))
        if node.op == "transpose_copy":
            body = f"""  {_omp(kn, collapse=2)}
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i0 = 0; i0 < R; i0 += {TL}) {{
      const float* xs = X + b * R * CN;
      float* ys = Y + b * R * CN;
      for (int64_t j0 = 0; j0 < CN; j0 += {TL}) {{
        const int64_t i1 = std::min<int64_t>(i0 + {TL}, R), j1 = std::min<int64_t>(j0 + {TL}, CN);
        for (int64_t j = j0; j < j1; ++j)
          for (int64_t i = i0; i < i1; ++i) ys[j * R + i] = xs[i * CN + j];
      }}
    }}
  (void)DIAG; (void)UPPER;
"""
        else:
            body = f"""  {_omp(kn, collapse=2)}
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < R; ++i) {{
      const float* xr = X + (b * R + i) * CN;
      float* yr = Y + (b * R + i) * CN;
      // triu keeps j - i >= DIAG, tril keeps j - i <= DIAG
      const int64_t edge = std::min<int64_t>(std::max<int64_t>(i + DIAG + (UPPER ? 0 : 1), 0), CN);
      const int64_t k0 = UPPER ? edge : 0, k1 = UPPER ? CN : edge;
      for (int64_t j = 0; j < CN; ++j) yr[j] = 0.0f;
      #pragma omp simd
      for (int64_t j = k0; j < k1; ++j) yr[j] = xr[j];
    }}
  (void){TL};
"""
        params = ["const float* __restrict X", "float* __restrict Y", "int64_t B", "int64_t R", "int64_t CN",
                  "int64_t DIAG", "int64_t UPPER"]
        cpp = f'extern "C" void stage{k}({", ".join(params)}) {{\n' + body + "}\n"
        a = node.attrs
        return StageCode(f"stage{k}", cpp, [f"p{x}", "out", str(B), str(R), str(Cn), str(a.get("diagonal", 0)),
                                            "1" if a.get("upper") else "0"])


# ----------------------------------------------------------------------------------- candidate

def render_candidate(plan: Plan, knobs: dict[str, Any], header: str) -> str:
    """The full candidate file: C++ source, ``load_cpp``, ``ModelNew``."""
    g = plan.graph
    cg = Codegen(plan, knobs)
    codes = [cg.stage(k, st) for k, st in enumerate(plan.stages)]
    # polynomial math only changes code that evaluates transcendental functions on vectors
    transcendental = {"exp", "log", "tanh", "erf", "sigmoid", "silu", "gelu", "gelu_tanh", "elu", "softplus",
                      "log1p", "mish", "selu", "logsigmoid"}
    uses = any(g.nodes[i].op == "unary" and g.nodes[i].attrs["fn"] in transcendental
               for st in plan.stages for i in st.nodes)
    fast = knobs.get("math", "libm") == "fast" and int(knobs.get("vec", 1)) > 1 and uses
    body = "\n".join(c.cpp for c in codes)
    cpp = prelude(fast, uses=body) + "\n" + body  # only the helpers the kernel uses: a trace a prompt can show whole
    # forward
    lines: list[str] = []
    var: dict[int, str] = {}
    def add_aliases(src_id: int) -> None:
        for al, src in plan.aliases.items():
            if src == src_id and al not in var:
                var[al] = f"t{al}"
                lines.append(f"t{al} = {var[src_id]}.view({tuple(g.nodes[al].shape)!r})")

    for n in g.nodes:
        if n.op == "input":
            var[n.id] = n.attrs["name"]
            nm = n.attrs["name"]
            lines.append(f"if tuple({nm}.shape) != {tuple(n.shape)!r}:")
            lines.append(f"    raise ValueError('this kernel was generated for {nm} of shape {tuple(n.shape)}, got ' + str(tuple({nm}.shape)))")
            lines.append(f"{nm} = {nm}.contiguous()")
            add_aliases(n.id)
    # parameters a stage reads, directly or through a view (a reshaped weight)
    read = {plan.aliases.get(a, a) for st in plan.stages for i in ([st.anchor] if st.anchor is not None else []) + st.nodes
            for a in g.nodes[i].args if isinstance(a, int)}
    used_params = {a for a in read if g.nodes[a].op == "param"}
    for pid in sorted(used_params):
        n = g.nodes[pid]
        var[pid] = f"w{pid}"
        lines.append(f"w{pid} = self.{n.attrs['path']}.contiguous()")
        add_aliases(pid)
    for k, (st, code) in enumerate(zip(plan.stages, codes)):
        shape = g.nodes[st.out].shape
        name = f"t{st.out}"
        dtype = "torch.int64" if g.nodes[st.out].dtype == "i64" else "torch.float32"
        lines.append(f"{name} = torch.empty({tuple(shape)!r}, dtype={dtype})")
        args = []
        for a in code.args:
            if a == "out":
                args.append(name)
            elif a.startswith("p") and a[1:].isdigit():
                src = var.get(int(a[1:]))
                if src is None:
                    raise AnalysisError(f"stage {k} reads node {a[1:]} before it is computed")
                args.append(src)
            else:
                args.append(a)
        lines.append(f"lib.{code.name}({', '.join(args)})")
        var[st.out] = name
        add_aliases(st.out)
    out = g.output
    if out not in var:
        raise AnalysisError("the output is not computed by any stage")
    lines.append(f"return {var[out]}")
    init = g.init_source or "def __init__(self):\n    super().__init__()"
    init = "\n".join("    " + ln for ln in init.splitlines())
    args = ", ".join(g.input_names)
    fwd = "\n".join("        " + ln for ln in lines)
    return f'''"""{header}"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
{cpp}
"""

lib = load_cpp(CPP_SOURCE)


class ModelNew(nn.Module):
{init}

    def forward(self, {args}):
{fwd}
'''
