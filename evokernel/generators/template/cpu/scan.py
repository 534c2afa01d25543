"""The ``scan`` family: cumsum, reverse cumsum and cumprod along a dim, with ``scan_chains`` independent running
sums per row (chunk totals first) breaking the serial add chain. Knobs: scan_chains, omp.
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.cpu.stage import StageCode, StageWriter, _omp, _prod
from evokernel.generators.template.front.lower import Stage

NAME = "scan"
KNOBS: dict[str, list[Any]] = {"omp": ["static", "dynamic", "off"], "scan_chains": [1, 4, 8]}
DEFAULTS: dict[str, Any] = {"omp": "static", "scan_chains": 1}


class Writer(StageWriter):
    def render(self, k: int, st: Stage) -> StageCode:
        return self.scan_stage(k, st)

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
