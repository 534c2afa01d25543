"""The ``midreduce`` family: sum/mean/max/min over middle dims (``mid_chunk`` inner columns kept in accumulators)
and argmax/argmin over one dim (int64 out). Knobs: mid_chunk, omp.
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.cpu.stage import StageCode, StageWriter, _omp, _prod
from evokernel.generators.template.front.lower import Stage

NAME = "midreduce"
KNOBS: dict[str, list[Any]] = {"omp": ["static", "dynamic", "off"], "mid_chunk": [128, 512, 2048]}
DEFAULTS: dict[str, Any] = {"omp": "static", "mid_chunk": 512}


class Writer(StageWriter):
    def render(self, k: int, st: Stage) -> StageCode:
        op = self.g.nodes[st.anchor].op if st.anchor is not None else ""
        return self.argreduce_stage(k, st) if op == "argreduce" else self.midreduce_stage(k, st)

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
