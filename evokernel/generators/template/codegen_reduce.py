"""The cpu template's scans and reductions over a middle dimension: ``scan`` (cumsum, reverse cumsum),
``midreduce`` (sum/mean/max/min over middle dims) and arg-reductions.
"""
from __future__ import annotations

from evokernel.generators.template.codegen_base import CodegenBase, StageCode, _omp, _prod
from evokernel.generators.template.lower import Stage


class ReduceStages(CodegenBase):
    # ---------------------------------------------------------------------------------- scan
    def scan_stage(self, k: int, st: Stage) -> StageCode:
        g, kn = self.g, self.knobs
        node = g.nodes[st.anchor]  # type: ignore[index]
        x = node.args[0]
        shape, d = node.shape, node.attrs["dim"]
        outer, L, inner = _prod(shape[:d]), shape[d], _prod(shape[d + 1:])
        rev = 1 if node.attrs["reverse"] else 0
        P = int(kn.get("scan_chains", 1))
        idx = "(REV ? L - 1 - (t) : (t))"
        if node.attrs.get("fn", "sum") == "prod":
            # running products: one chain per (outer, inner) column, in double like the sums
            body = f"""  {_omp(kn)}
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {{
      double run = 1.0;
      for (int64_t t = 0; t < L; ++t) {{
        const int64_t q = {idx.replace('(t)', 't')};
        run *= (double)X[(o * L + q) * inner + i];
        Y[(o * L + q) * inner + i] = (float)run;
      }}
    }}
"""
            params = ["const float* __restrict X", "float* __restrict Y", "int64_t outer", "int64_t L", "int64_t inner",
                      "int64_t REV"]
            cpp = f'extern "C" void stage{k}({", ".join(params)}) {{\n' + body + "}\n"
            return StageCode(f"stage{k}", cpp, [f"p{x}", "out", str(outer), str(L), str(inner), str(rev)])
        body = f"""  if (inner == 1) {{
    {_omp(kn)}
    for (int64_t o = 0; o < outer; ++o) {{
      const float* xr = X + o * L;
      float* yr = Y + o * L;
      const int64_t P = L >= {P} * 4 ? {P} : 1;
      const int64_t Lc = L / P;
      double run[{P}];
      // chunk p covers [p*Lc, (p+1)*Lc) (the last one also the remainder): totals first
      double before = 0.0;
      for (int64_t p = 0; p < P; ++p) {{
        run[p] = before;
        const int64_t t1 = p == P - 1 ? L : (p + 1) * Lc;
        if (p < P - 1) {{
          float s = 0.0f;
          #pragma omp simd reduction(+:s)
          for (int64_t t = p * Lc; t < t1; ++t) s += xr[{idx.replace('(t)', 't')}];
          before += (double)s;
        }}
      }}
      // P independent running sums advance together
      for (int64_t t = 0; t < Lc; ++t)
        for (int64_t p = 0; p < P; ++p) {{
          const int64_t q = {idx.replace('(t)', '(p * Lc + t)')};
          run[p] += (double)xr[q];
          yr[q] = (float)run[p];
        }}
      for (int64_t t = P * Lc; t < L; ++t) {{
        const int64_t q = {idx.replace('(t)', 't')};
        run[P - 1] += (double)xr[q];
        yr[q] = (float)run[P - 1];
      }}
    }}
    return;
  }}
  {_omp(kn)}
  for (int64_t o = 0; o < outer; ++o) {{
    double* acc = (double*)std::malloc(sizeof(double) * (size_t)inner);
    for (int64_t i = 0; i < inner; ++i) acc[i] = 0.0;
    for (int64_t t = 0; t < L; ++t) {{
      const int64_t q = {idx.replace('(t)', 't')};
      const float* src = X + (o * L + q) * inner;
      float* dst = Y + (o * L + q) * inner;
      #pragma omp simd
      for (int64_t i = 0; i < inner; ++i) {{ acc[i] += (double)src[i]; dst[i] = (float)acc[i]; }}
    }}
    std::free(acc);
  }}
"""
        params = ["const float* __restrict X", "float* __restrict Y", "int64_t outer", "int64_t L", "int64_t inner",
                  "int64_t REV"]
        cpp = f'extern "C" void stage{k}({", ".join(params)}) {{\n' + body + "}\n"
        return StageCode(f"stage{k}", cpp, [f"p{x}", "out", str(outer), str(L), str(inner), str(rev)])

    # ----------------------------------------------------------------------------- midreduce
    def midreduce_stage(self, k: int, st: Stage) -> StageCode:
        g, kn = self.g, self.knobs
        node = g.nodes[st.out]
        x = node.args[0]
        shape = g.nodes[x].shape
        dims = node.attrs["dims"]
        outer, L, inner = _prod(shape[:dims[0]]), _prod(shape[dims[0]:dims[-1] + 1]), _prod(shape[dims[-1] + 1:])
        fn = node.attrs["fn"]
        CH = int(kn.get("mid_chunk", 512))
        init = {"sum": "0.0f", "mean": "0.0f", "amax": "-INFINITY", "amin": "INFINITY"}[fn]
        upd = {"sum": "acc[i] += v;", "mean": "acc[i] += v;", "amax": "acc[i] = v > acc[i] ? v : acc[i];",
               "amin": "acc[i] = v < acc[i] ? v : acc[i];"}[fn]
        fin = "(float)(acc[i] / (double)L)" if fn == "mean" else "(float)acc[i]"
        body = f"""  const int64_t nch = (inner + {CH - 1}) / {CH};
  {_omp(kn, collapse=2)}
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < nch; ++c) {{
      const int64_t i0 = c * {CH};
      const int64_t w = std::min<int64_t>({CH}, inner - i0);
      double acc[{CH}];  // double: a mean over many elements (a normalised tensor's is ~0) stays exact enough
      for (int64_t i = 0; i < w; ++i) acc[i] = {init};
      for (int64_t l = 0; l < L; ++l) {{
        const float* src = X + (o * L + l) * inner + i0;
        #pragma omp simd
        for (int64_t i = 0; i < w; ++i) {{ const float v = src[i]; {upd} }}
      }}
      float* dst = Y + o * inner + i0;
      for (int64_t i = 0; i < w; ++i) dst[i] = {fin};
    }}
"""
        params = ["const float* __restrict X", "float* __restrict Y", "int64_t outer", "int64_t L", "int64_t inner"]
        cpp = f'extern "C" void stage{k}({", ".join(params)}) {{\n' + body + "}\n"
        return StageCode(f"stage{k}", cpp, [f"p{x}", "out", str(outer), str(L), str(inner)])

    # ----------------------------------------------------------------------------- argreduce
    def argreduce_stage(self, k: int, st: Stage) -> StageCode:
        """argmax / argmin over one dim (first index of the extreme; NaN wins, as in PyTorch), int64 out."""
        g, kn = self.g, self.knobs
        node = g.nodes[st.anchor]  # type: ignore[index]
        x = node.args[0]
        shape = g.nodes[x].shape
        d = node.attrs["dim"]
        outer, L, inner = _prod(shape[:d]), shape[d], _prod(shape[d + 1:])
        better = "(v > best || (v != v && best == best))" if node.attrs["fn"] == "argmax" else \
            "(v < best || (v != v && best == best))"
        body = f"""  {_omp(kn, collapse=2)}
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {{
      const float* src = X + o * L * inner + i;
      float best = src[0];
      int64_t at = 0;
      for (int64_t l = 1; l < L; ++l) {{
        const float v = src[l * inner];
        if (best != best) break;
        if {better} {{ best = v; at = l; }}
      }}
      Y[o * inner + i] = at;
    }}
"""
        params = ["const float* __restrict X", "int64_t* __restrict Y", "int64_t outer", "int64_t L", "int64_t inner"]
        cpp = f'extern "C" void stage{k}({", ".join(params)}) {{\n' + body + "}\n"
        return StageCode(f"stage{k}", cpp, [f"p{x}", "out", str(outer), str(L), str(inner)])
