"""The ``groupnorm`` family: group norm (instance norm as one channel per group) and batch norm (per-channel
statistics over planes, or per-column over the rows of an (N, C) tensor). Knobs: gn_stats, vec, unroll, math, omp.
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.cpu.stage import StageCode, StageWriter, _omp, _prod
from evokernel.generators.template.front.lower import Stage

NAME = "groupnorm"
KNOBS: dict[str, list[Any]] = {"omp": ["static", "dynamic", "off"], "gn_stats": ["two_pass", "one_pass"], "vec": [1, 8, 16],
                               "math": ["libm", "fast"], "unroll": [1, 2, 4]}
DEFAULTS: dict[str, Any] = {"omp": "static", "gn_stats": "two_pass", "vec": 1, "math": "libm", "unroll": 1}


class Writer(StageWriter):
    def render(self, k: int, st: Stage) -> StageCode:
        op = self.g.nodes[st.anchor].op if st.anchor is not None else ""
        return self.batchnorm_stage(k, st) if op == "batch_norm" else self.groupnorm_stage(k, st)

    # ----------------------------------------------------------------------------- groupnorm
    def groupnorm_stage(self, k: int, st: Stage) -> StageCode:
        g, kn = self.g, self.knobs
        node = g.nodes[st.anchor]  # type: ignore[index]
        x = node.args[0]
        affine = node.attrs["affine"]
        w, b = (node.args[1], node.args[2]) if affine else (x, x)
        shape = node.shape
        NB, C = shape[0], shape[1]
        HW = _prod(shape[2:])
        G = node.attrs["groups"]
        frame = shape
        epi_fn, epi_ext, epi_ptrs = self.epilogue(k, st, frame)
        L = len(frame) - 1
        fnames = [f"F{d}" for d in range(L)] + ["FN"]
        inner_rows = _prod(frame[2:-1]) if len(frame) > 3 else 1
        if len(frame) == 2:  # (N, C): row n, one column c at a time
            ecall = self.epi_call(k, st, epi_ptrs, "n", "c", "c + 1", fnames)
        else:
            ecall = self.epi_call(k, st, epi_ptrs, f"(n * CC + c) * {inner_rows} + h", "0", "FN", fnames)
        if kn.get("gn_stats", "two_pass") == "two_pass":
            stats = """      float s = 0.0f;
      #pragma omp simd reduction(+:s)
      for (int64_t i = 0; i < cnt; ++i) s += xp[i];
      const float mean = s / (float)cnt;
      float v = 0.0f;
      #pragma omp simd reduction(+:v)
      for (int64_t i = 0; i < cnt; ++i) { const float d = xp[i] - mean; v += d * d; }
      const float var = v / (float)cnt;"""
        else:
            stats = """      double s = 0.0, q = 0.0;
      for (int64_t i = 0; i < cnt; ++i) { const double t = xp[i]; s += t; q += t * t; }
      const float mean = (float)(s / (double)cnt);
      const float var = (float)std::max(0.0, q / (double)cnt - (s / (double)cnt) * (s / (double)cnt));"""
        params = ["const float* __restrict X", "const float* __restrict Wt", "const float* __restrict Bs",
                  "float* __restrict C"] + [self.ptype(e) for e in epi_ext] + \
            ["int64_t NB", "int64_t CC", "int64_t HW", "int64_t G", "float EPS", "int64_t AFFINE"] + \
            [f"int64_t {f}" for f in fnames]
        body = f"""  const int64_t cpg = CC / G;
  {_omp(kn, collapse=2)}
  for (int64_t n = 0; n < NB; ++n)
    for (int64_t gi = 0; gi < G; ++gi) {{
      const int64_t cnt = cpg * HW;
      const float* xp = X + (n * CC + gi * cpg) * HW;
{stats}
      const float inv = 1.0f / sqrtf(var + EPS);
      for (int64_t c = gi * cpg; c < (gi + 1) * cpg; ++c) {{
        const float sc = AFFINE ? inv * Wt[c] : inv;
        const float sh = AFFINE ? Bs[c] - mean * sc : -mean * sc;
        const float* src = X + (n * CC + c) * HW;
        float* dst = C + (n * CC + c) * HW;
        #pragma omp simd
        for (int64_t i = 0; i < HW; ++i) dst[i] = src[i] * sc + sh;
        for (int64_t h = 0; h < {inner_rows}; ++h) {{
          {ecall}
        }}
      }}
    }}
"""
        cpp = epi_fn + f'extern "C" void stage{k}({", ".join(params)}) {{\n' + body + "}\n"
        call = [f"p{x}", f"p{w}", f"p{b}", "out"] + [f"p{e}" for e in epi_ext] + \
            [str(NB), str(C), str(HW), str(G), repr(float(node.attrs["eps"])), "1" if affine else "0"] + \
            [str(d) for d in frame]
        return StageCode(f"stage{k}", cpp, call)

    # ---------------------------------------------------------------------------- batch norm
    def batchnorm_stage(self, k: int, st: Stage) -> StageCode:
        """Batch norm over dim 1: per channel, statistics over the batch and every spatial position
        (training mode; ``gn_stats`` two_pass | one_pass) or the running ones (eval mode)."""
        g, kn = self.g, self.knobs
        node = g.nodes[st.anchor]  # type: ignore[index]
        a = node.attrs
        args = list(node.args)
        x = args.pop(0)
        w, b = (args.pop(0), args.pop(0)) if a["affine"] else (x, x)
        rm, rv = (args.pop(0), args.pop(0)) if not a["batch_stats"] else (x, x)
        update = args if a.get("update") else []  # running mean, running var [, num_batches_tracked]: written
        shape = node.shape
        NB, C = shape[0], shape[1]
        HW = _prod(shape[2:])
        frame = shape
        epi_fn, epi_ext, epi_ptrs = self.epilogue(k, st, frame)
        fnames = [f"F{d}" for d in range(len(frame))]
        params = ["const float* __restrict X", "const float* __restrict Wt", "const float* __restrict Bs",
                  "const float* __restrict RM", "const float* __restrict RV", "float* __restrict C"] + \
            [self.ptype(e) for e in epi_ext] + \
            ["int64_t NB", "int64_t CC", "int64_t HW", "float EPS", "int64_t AFFINE", "int64_t BATCH_STATS"] + \
            [f"int64_t {f}" for f in fnames[:-1]] + ["int64_t FN"]
        if update:
            params += ["float* __restrict URM", "float* __restrict URV"] + \
                (["int64_t* __restrict NBT"] if len(update) > 2 else []) + ["double MOMENTUM"]
        upd = self._running_update(len(update) > 2) if update else ""
        if len(shape) == 2:  # (N, C): contiguous rows of C columns
            body = self._batchnorm_rows(kn, self.epi_call(k, st, epi_ptrs, "n", "0", "CC", fnames[:-1] + ["FN"]),
                                        upd)
        else:  # (N, C, ...): per channel, N contiguous planes of rows of the last dim
            rows = _prod(frame[2:-1])
            ecall = self.epi_call(k, st, epi_ptrs, f"(n * CC + c) * {rows} + h", "0", "FN", fnames[:-1] + ["FN"])
            body = self._batchnorm_planes(kn, ecall, rows, upd)
        cpp = epi_fn + f'extern "C" void stage{k}({", ".join(params)}) {{\n' + body + "}\n"
        call = [f"p{x}", f"p{w}", f"p{b}", f"p{rm}", f"p{rv}", "out"] + [f"p{e}" for e in epi_ext] + \
            [str(NB), str(C), str(HW), repr(float(a["eps"])), "1" if a["affine"] else "0",
             "1" if a["batch_stats"] else "0"] + [str(d) for d in frame]
        if update:
            call += [f"p{u}" for u in update] + [repr(float(a["momentum"]))]
        return StageCode(f"stage{k}", cpp, call)

    @staticmethod
    def _running_update(counted: bool) -> tuple[str, str]:
        """A training-mode norm's running statistics, updated as PyTorch does: (code before the per-channel loop:
        the batch counted and the factor -- the momentum, or 1 / batches with momentum None --, the per-channel
        update of ``URM``/``URV`` from the batch's ``MEAN_C`` and biased ``VAR_C``, the variance made unbiased)."""
        head = "  double UF = MOMENTUM;\n"
        if counted:
            head += "  NBT[0] += 1;\n  if (MOMENTUM < 0.0) UF = 1.0 / (double)NBT[0];\n"
        per_c = ("URM[c] = (float)((1.0 - UF) * (double)URM[c] + UF * (double)(MEAN_C));\n"
                 "      URV[c] = (float)((1.0 - UF) * (double)URV[c] + UF * (double)(VAR_C) * "
                 "((double)NB * (double)HW) / ((double)NB * (double)HW - 1.0));")
        return head, per_c

    @staticmethod
    def _batchnorm_planes(kn: dict[str, Any], ecall: str, inner_rows: int, upd: Any = "") -> str:
        """Batch norm of an (N, C, ...) tensor: per channel, statistics over its N planes (each contiguous),
        then each plane normalised and its epilogue applied row by row."""
        if kn.get("gn_stats", "two_pass") == "two_pass":
            stats = """      double s = 0.0;
      for (int64_t n = 0; n < NB; ++n) {
        const float* xp = X + (n * CC + c) * HW;
        float t = 0.0f;
        #pragma omp simd reduction(+:t)
        for (int64_t i = 0; i < HW; ++i) t += xp[i];
        s += t;
      }
      mean = (float)(s / (double)(NB * HW));
      double v = 0.0;
      for (int64_t n = 0; n < NB; ++n) {
        const float* xp = X + (n * CC + c) * HW;
        float t = 0.0f;
        #pragma omp simd reduction(+:t)
        for (int64_t i = 0; i < HW; ++i) { const float d = xp[i] - mean; t += d * d; }
        v += t;
      }
      var = (float)(v / (double)(NB * HW));"""
        else:
            stats = """      double s = 0.0, q = 0.0;
      for (int64_t n = 0; n < NB; ++n) {
        const float* xp = X + (n * CC + c) * HW;
        for (int64_t i = 0; i < HW; ++i) { const double t = xp[i]; s += t; q += t * t; }
      }
      const double m = s / (double)(NB * HW);
      mean = (float)m;
      var = (float)std::max(0.0, q / (double)(NB * HW) - m * m);"""
        head, per_c = upd if upd else ("", "")
        if per_c:  # each channel's running statistics from its batch statistics (its own elements: no race)
            stats += "\n      " + per_c.replace("MEAN_C", "mean").replace("VAR_C", "var")
        return f"""{head}  {_omp(kn)}
  for (int64_t c = 0; c < CC; ++c) {{
    float mean, var;
    if (BATCH_STATS) {{
{stats}
    }} else {{
      mean = RM[c];
      var = RV[c];
    }}
    const float inv = 1.0f / sqrtf(var + EPS);
    const float sc = AFFINE ? inv * Wt[c] : inv;
    const float sh = AFFINE ? Bs[c] - mean * sc : -mean * sc;
    for (int64_t n = 0; n < NB; ++n) {{
      const float* src = X + (n * CC + c) * HW;
      float* dst = C + (n * CC + c) * HW;
      #pragma omp simd
      for (int64_t i = 0; i < HW; ++i) dst[i] = src[i] * sc + sh;
      for (int64_t h = 0; h < {inner_rows}; ++h) {{
        {ecall}
      }}
    }}
  }}
"""

    @staticmethod
    def _batchnorm_rows(kn: dict[str, Any], ecall: str, upd: Any = "") -> str:
        """Batch norm of an (N, C) tensor (BatchNorm1d after a Linear): per-column statistics accumulated
        row by row in double (contiguous, vectorised over the columns; per column the reads would be
        strided by C), then each row normalised and its epilogue applied over the whole row."""
        if kn.get("gn_stats", "two_pass") == "two_pass":
            stats = """    for (int64_t n = 0; n < NB; ++n) {
      const float* xr = X + n * CC;
      #pragma omp simd
      for (int64_t c = 0; c < CC; ++c) s1[c] += (double)xr[c];
    }
    for (int64_t c = 0; c < CC; ++c) mu[c] = s1[c] / (double)NB;
    for (int64_t n = 0; n < NB; ++n) {
      const float* xr = X + n * CC;
      #pragma omp simd
      for (int64_t c = 0; c < CC; ++c) { const double d = (double)xr[c] - mu[c]; s2[c] += d * d; }
    }
    for (int64_t c = 0; c < CC; ++c) va[c] = s2[c] / (double)NB;"""
        else:
            stats = """    for (int64_t n = 0; n < NB; ++n) {
      const float* xr = X + n * CC;
      #pragma omp simd
      for (int64_t c = 0; c < CC; ++c) { const double t = xr[c]; s1[c] += t; s2[c] += t * t; }
    }
    for (int64_t c = 0; c < CC; ++c) {
      mu[c] = s1[c] / (double)NB;
      va[c] = std::max(0.0, s2[c] / (double)NB - mu[c] * mu[c]);
    }"""
        head, per_c = upd if upd else ("", "")
        if per_c:
            stats += ("\n" + head + "    for (int64_t c = 0; c < CC; ++c) {\n      " +
                      per_c.replace("MEAN_C", "mu[c]").replace("VAR_C", "va[c]") + "\n    }")
        return f"""  (void)HW;
  double* s1 = (double*)std::calloc((size_t)CC * 4, sizeof(double));
  double *s2 = s1 + CC, *mu = s2 + CC, *va = mu + CC;
  float* sc = (float*)std::malloc(sizeof(float) * (size_t)CC * 2);
  float* sh = sc + CC;
  if (BATCH_STATS) {{
{stats}
  }} else {{
    for (int64_t c = 0; c < CC; ++c) {{ mu[c] = RM[c]; va[c] = RV[c]; }}
  }}
  for (int64_t c = 0; c < CC; ++c) {{
    const float mean = (float)mu[c], inv = 1.0f / sqrtf((float)va[c] + EPS);
    sc[c] = AFFINE ? inv * Wt[c] : inv;
    sh[c] = AFFINE ? Bs[c] - mean * sc[c] : -mean * sc[c];
  }}
  {_omp(kn)}
  for (int64_t n = 0; n < NB; ++n) {{
    const float* src = X + n * CC;
    float* dst = C + n * CC;
    #pragma omp simd
    for (int64_t c = 0; c < CC; ++c) dst[c] = src[c] * sc[c] + sh[c];
    {ecall}
  }}
  std::free(s1);
  std::free(sc);
"""
