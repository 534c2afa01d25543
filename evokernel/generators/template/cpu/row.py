"""The ``row`` family: runs of elementwise ops and last-dim reductions over a frame ``(rows, N)`` -- elementwise
chains, softmax/log_softmax/logsumexp, layer/RMS/L2 norms, losses, whole-tensor reductions -- one row program
(:mod:`.rowprog`) per row. Knobs: vec, unroll, tail, row_cache, math, omp.
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.cpu.rowprog import RowProgram
from evokernel.generators.template.cpu.stage import StageCode, StageWriter, _omp, _prod
from evokernel.generators.template.front.graph import AnalysisError
from evokernel.generators.template.front.lower import Stage

NAME = "row"
KNOBS: dict[str, list[Any]] = {"omp": ["static", "dynamic", "off"], "vec": [1, 8, 16], "unroll": [1, 2, 4], "tail": ["safe", "none"],
                               "math": ["libm", "fast"], "row_cache": ["recompute", "cache"]}
DEFAULTS: dict[str, Any] = {"omp": "static", "vec": 1, "unroll": 1, "tail": "safe", "math": "libm",
                            "row_cache": "recompute"}


class Writer(StageWriter):
    def render(self, k: int, st: Stage) -> StageCode:
        return self.row_stage(k, st)

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
        if prog.skips and (kind != "G" or g.nodes[st.out].attrs["fn"] not in ("sum", "mean")
                           or prog.kind.get(g.nodes[st.out].args[0]) == "J"):
            raise AnalysisError("an ignore_index gather must feed a sum or mean over rows")
        if kind == "G":
            fn = g.nodes[st.out].attrs["fn"]
            a = g.nodes[st.out].args[0]
            red = {"sum": "+", "mean": "+", "amax": "max", "amin": "min"}[fn]
            init = {"sum": "0.0", "mean": "0.0", "amax": "-INFINITY", "amin": "INFINITY"}[fn]
            lines.append(f"  double total = {init};")
            if prog.skips:  # rows whose target is the ignore_index count neither in the total nor in the mean
                lines.append("  double valid = 0.0;")
            pragma = _omp(self.knobs, f"reduction({red}:total{',valid' if prog.skips else ''})")
            if pragma:
                lines.append("  " + pragma)
            lines.append("  for (int64_t r = 0; r < R; ++r) {")
            lines += ["    " + ln for ln in body]
            if prog.skips:
                lines.append(f"    if (!({' || '.join(prog.skips)})) {{ total += (double)gval; valid += 1.0; }}")
            elif red == "+":
                lines.append("    total += (double)gval;")
            else:
                lines.append(f"    total = {'std::max' if red == 'max' else 'std::min'}(total, (double)gval);")
            lines.append("  }")
            count = "(double)R * (double)N" if prog.kind.get(a) == "J" else "(double)R"
            if prog.skips:
                count = "valid"  # every target ignored: 0 / 0, NaN as in PyTorch
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
