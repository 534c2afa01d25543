"""The ``conv`` family: ``conv2d`` (direct or row-vectorised) and ``convnd`` (any 1-, 2- or 3-D convolution,
grouped, depthwise or transposed, incl. the im2col + packed gemm path). Knobs: conv_algo, conv_ocb, the packed
gemm's tiles, vec, unroll, math, omp.
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.cpu.matmul import packed_gemm
from evokernel.generators.template.cpu.stage import StageCode, StageWriter, _omp
from evokernel.generators.template.front.lower import Stage

NAME = "conv"
KNOBS: dict[str, list[Any]] = {"omp": ["static", "dynamic", "off"], "conv_algo": ["direct", "rowvec", "im2col"],
                               "conv_ocb": [1, 2, 4, 8], "vec": [1, 8, 16], "math": ["libm", "fast"],
                               "unroll": [1, 2, 4], "gemm_mr": [4, 6, 8], "gemm_nr": [16, 32, 48],
                               "gemm_kc": [128, 256, 512], "gemm_mc": [48, 96, 192], "gemm_nc": [512, 1024, 2048]}
DEFAULTS: dict[str, Any] = {"omp": "static", "conv_algo": "direct", "conv_ocb": 4, "vec": 1, "math": "libm",
                            "unroll": 1, "gemm_mr": 6, "gemm_nr": 32, "gemm_kc": 256, "gemm_mc": 96,
                            "gemm_nc": 1024}


class Writer(StageWriter):  # the im2col paths use the packed gemm (:func:`~.matmul.packed_gemm`)
    def render(self, k: int, st: Stage) -> StageCode:
        op = self.g.nodes[st.anchor].op if st.anchor is not None else ""
        return self.convnd_stage(k, st) if op == "convnd" else self.conv_stage(k, st)

    # ---------------------------------------------------------------------------------- conv
    def conv_stage(self, k: int, st: Stage) -> StageCode:
        g, kn = self.g, self.knobs
        node = g.nodes[st.anchor]  # type: ignore[index]
        x, w = node.args[0], node.args[1]
        bias = node.args[2] if node.attrs["bias"] else None
        NB, CO, OH, OW = node.shape
        _, CI, H, Wd = g.nodes[x].shape
        KH, KW = g.nodes[w].shape[2], g.nodes[w].shape[3]
        (sh, sw), (ph, pw), (dh, dw) = node.attrs["stride"], node.attrs["padding"], node.attrs["dilation"]
        frame = node.shape
        epi_fn, epi_ext, epi_ptrs = self.epilogue(k, st, frame)
        fnames = ["NB", "CO", "OH", "OW"]
        params = ["const float* __restrict X", "const float* __restrict Wt",
                  "const float* __restrict Bias", "float* __restrict C"] + [self.ptype(e) for e in epi_ext] + \
            ["int64_t NB", "int64_t CI", "int64_t H", "int64_t W", "int64_t CO", "int64_t KH", "int64_t KW",
             "int64_t OH", "int64_t OW", "int64_t SH", "int64_t SW", "int64_t PH", "int64_t PW", "int64_t DH",
             "int64_t DW", "int64_t HAS_BIAS"]
        ecall = self.epi_call(k, st, epi_ptrs, "(n * CO + co) * OH + oh", "0", "OW", fnames)
        algo = kn.get("conv_algo", "direct")
        if algo == "direct":
            body = _conv2d_direct(ecall, _omp, kn)
        elif algo == "im2col":
            # per image: col (CI*KH*KW x OH*OW) = unfolded input, then the packed gemm
            # C[n] (CO x OH*OW) = W (CO x CI*KH*KW) @ col; bias and the epilogue per finished row block
            def conv_ecall(r: str, j0: str, j1: str) -> str:
                epi = ""
                if st.nodes:
                    args = ", ".join(["Cout"] + epi_ptrs + ["(n * CO + i) * OH + oh", "a0", "a1"] + fnames)
                    epi = f"""
              for (int64_t oh = ({j0}) / OW; oh * OW < ({j1}); ++oh) {{
                const int64_t a0 = std::max<int64_t>({j0}, oh * OW) - oh * OW;
                const int64_t a1 = std::min<int64_t>({j1}, (oh + 1) * OW) - oh * OW;
                epi{k}({args});
              }}"""
                return f"""{{
              if (HAS_BIAS) {{ float* cr = C + i * N; const float bv = Bias[i];
                for (int64_t j = {j0}; j < {j1}; ++j) cr[j] += bv; }}{epi}
            }}"""
            gemm_body = packed_gemm(self.knobs, 0, conv_ecall)
            body = _conv2d_im2col(gemm_body, _omp, kn)
        else:
            OCB = int(kn.get("conv_ocb", 4))
            body = _conv2d_rowvec(OCB, ecall, _omp, kn)
        cpp = epi_fn + f'extern "C" void stage{k}({", ".join(params)}) {{\n' + body + "}\n"
        call = [f"p{x}", f"p{w}", f"p{bias}" if bias is not None else f"p{w}", "out"] + [f"p{e}" for e in epi_ext] + \
            [str(v) for v in (NB, CI, H, Wd, CO, KH, KW, OH, OW, sh, sw, ph, pw, dh, dw, 1 if bias is not None else 0)]
        return StageCode(f"stage{k}", cpp, call)

    # ------------------------------------------------------------------------- convnd (any conv)
    def convnd_stage(self, k: int, st: Stage) -> StageCode:
        """1/2/3-D, grouped/depthwise, direct or transposed convolution as a 3-D one (leading unit dims).

        ``conv_algo`` direct: one output element at a time (gather); rowvec (and im2col, which has no
        N-d form): whole output rows accumulated for ``conv_ocb`` output channels at once, the inner
        loop over the row contiguous (vectorised when the stride is 1)."""
        g, kn = self.g, self.knobs
        node = g.nodes[st.anchor]  # type: ignore[index]
        a = node.attrs
        x, w = node.args[0], node.args[1]
        bias = node.args[2] if a["bias"] else None
        nd = a["nd"]
        lift = lambda shp: (1,) * (3 - nd) + tuple(shp)
        NB, CO = node.shape[0], node.shape[1]
        OD, OH, OW = lift(node.shape[2:])
        CI = g.nodes[x].shape[1]
        ID, IH, IW = lift(g.nodes[x].shape[2:])
        KD, KH, KW = lift(g.nodes[w].shape[2:])
        G = a["groups"]
        T = 1 if a["transposed"] else 0
        (SD, SH, SW), (PD, PH, PW), (DD, DH, DW) = a["stride"], a["padding"], a["dilation"]
        frame = node.shape
        epi_fn, epi_ext, epi_ptrs = self.epilogue(k, st, frame)
        fnames = [f"F{i}" for i in range(len(frame))]
        ecall = self.epi_call(k, st, epi_ptrs, "((n * CO + co) * OD + od) * OH + oh", "0", "OW", fnames)
        params = ["const float* __restrict X", "const float* __restrict Wt", "const float* __restrict Bias",
                  "float* __restrict C"] + [self.ptype(e) for e in epi_ext] + \
            [f"int64_t {v}" for v in ("NB", "CI", "ID", "IH", "IW", "CO", "OD", "OH", "OW", "KD", "KH", "KW",
                                      "SD", "SH", "SW", "PD", "PH", "PW", "DD", "DH", "DW", "G", "HAS_BIAS")] + \
            [f"int64_t {f}" for f in fnames]
        # weight index: direct (CO, CI/G, K...); transposed (CI, CO/G, K...)
        widx = ("(((ci * COG + (co - g * COG)) * KD + kd) * KH + kh) * KW + kw" if T else
                "((((co) * CIG + (ci - g * CIG)) * KD + kd) * KH + kh) * KW + kw")
        algo = kn.get("conv_algo", "direct")
        if algo == "direct":
            if T:
                taps = """                const int64_t td = od + PD - kd * DD;
                if (td < 0 || td % SD) continue;
                const int64_t id = td / SD;
                if (id >= ID) continue;""", """                  const int64_t th = oh + PH - kh * DH;
                  if (th < 0 || th % SH) continue;
                  const int64_t ih = th / SH;
                  if (ih >= IH) continue;""", """                    const int64_t tw = ow + PW - kw * DW;
                    if (tw < 0 || tw % SW) continue;
                    const int64_t iw = tw / SW;
                    if (iw >= IW) continue;"""
            else:
                taps = """                const int64_t id = od * SD - PD + kd * DD;
                if (id < 0 || id >= ID) continue;""", """                  const int64_t ih = oh * SH - PH + kh * DH;
                  if (ih < 0 || ih >= IH) continue;""", """                    const int64_t iw = ow * SW - PW + kw * DW;
                    if (iw < 0 || iw >= IW) continue;"""
            body = _convnd_direct(widx, ecall, _omp, kn, taps)
        else:
            OCB = int(kn.get("conv_ocb", 4))
            if T:
                # scatter each input row into the output row it reaches: ow = iw*SW - PW + kw*DW
                acc_rows = _convnd_scatter_rows(widx)
            else:
                acc_rows = _convnd_gather_rows(widx)
            body = _convnd_rowvec(OCB, acc_rows, ecall, _omp, kn)
            if algo == "im2col":
                body = self._convnd_gemm(k, st, bool(T), epi_ptrs, fnames, body)
        cpp = epi_fn + f'extern "C" void stage{k}({", ".join(params)}) {{\n' + body + "}\n"
        call = [f"p{x}", f"p{w}", f"p{bias}" if bias is not None else f"p{w}", "out"] + [f"p{e}" for e in epi_ext] + \
            [str(v) for v in (NB, CI, ID, IH, IW, CO, OD, OH, OW, KD, KH, KW, SD, SH, SW, PD, PH, PW, DD, DH, DW, G,
                              1 if bias is not None else 0)] + [str(d) for d in frame]
        return StageCode(f"stage{k}", cpp, call)

    def _convnd_gemm(self, k: int, st: Stage, transposed: bool, epi_ptrs: list[str], fnames: list[str],
                     fallback: str) -> str:
        """``conv_algo`` im2col for any convolution: per image, a packed gemm batched over the groups.
        Direct: col (CI/G*K x P) unfolds the input, C[g] = W[g] (CO/G x CI/G*K) @ col[g], bias and epilogue per
        finished tile. Transposed: col[g] = W[g]^T (CO/G*K x CI/G) @ X[g] (the weight transposed once per
        call), then col2im scatters col into the output rows, then bias and epilogue. When the unfolded
        buffer would pass 256 MiB the row-vectorised form runs instead (``fallback``)."""
        epi_rows = ""
        if st.nodes:
            args = ", ".join(["Cout"] + epi_ptrs + ["(n * CO + (ROW)) * (OD * OH) + q", "a0", "a1"] + fnames)
            epi_rows = f"""
              for (int64_t q = (J0) / OW; q * OW < (J1); ++q) {{
                const int64_t a0 = std::max<int64_t>(J0, q * OW) - q * OW;
                const int64_t a1 = std::min<int64_t>(J1, (q + 1) * OW) - q * OW;
                epi{k}({args});
              }}"""
        if not transposed:
            def ecall(r: str, j0: str, j1: str) -> str:
                return f"""{{
              const int64_t row_ = {r};
              if (HAS_BIAS) {{ float* cr = C + row_ * N; const float bv = Bias[row_];
                for (int64_t j = {j0}; j < {j1}; ++j) cr[j] += bv; }}{epi_rows.replace("(ROW)", "row_").replace("J0", j0).replace("J1", j1)}
            }}"""
            gemm = packed_gemm(self.knobs, 0, ecall)
            return _convnd_im2col(fallback, gemm, _omp, self)
        gemm = packed_gemm(self.knobs, 0, lambda r, j0, j1: "")
        epi_all = epi_rows.replace("(ROW)", "co").replace("J0", "0").replace("J1", "OD * OH * OW")
        return _convnd_col2im(fallback, gemm, epi_all, _omp, self)


def _convnd_col2im(fallback: Any, gemm: Any, epi_all: Any, _omp: Any, self: Any) -> str:
    """Transposed convolution as the packed gemm W^T @ X per (image, group), then col2im."""
    return f"""  const int64_t CIG = CI / G, COG = CO / G, K3 = KD * KH * KW, IP = ID * IH * IW;
  if ((double)CO * K3 * IP * 4.0 > 268435456.0) {{
{fallback}
    return;
  }}
  float* col = (float*)std::malloc(sizeof(float) * (size_t)(CO * K3 * IP + 16));
  float* wt = (float*)std::malloc(sizeof(float) * (size_t)(CI * COG * K3 + 16));
  // wt[g][co_l * K3 + kp][ci_l] = Wt[((g * CIG + ci_l) * COG + co_l) * K3 + kp]
  for (int64_t g = 0; g < G; ++g)
    for (int64_t ci = 0; ci < CIG; ++ci)
      for (int64_t r = 0; r < COG * K3; ++r)
        wt[(g * COG * K3 + r) * CIG + ci] = Wt[(g * CIG + ci) * COG * K3 + r];
  float* const Cout = C;
  for (int64_t n = 0; n < NB; ++n) {{
    {{
      const float* A = wt;
      const float* B = X + n * CI * IP;
      float* C = col;
      const int64_t BATCH = G, M = COG * K3, N = IP, K = CIG, sA = COG * K3 * CIG, sB = CIG * IP, sC = COG * K3 * IP;
{gemm}
    }}
    {_omp(self.knobs)}
    for (int64_t co = 0; co < CO; ++co) {{
      float* C = Cout + (n * CO + co) * OD * OH * OW;
      const float b0 = HAS_BIAS ? Bias[co] : 0.0f;
      for (int64_t i = 0; i < OD * OH * OW; ++i) C[i] = b0;
      for (int64_t kp = 0; kp < K3; ++kp) {{
        const int64_t kd = kp / (KH * KW), kh = (kp / KW) % KH, kw = kp % KW;
        const float* cr = col + (co * K3 + kp) * IP;
        const int64_t off = kw * DW - PW;  // ow = iw * SW + off
        int64_t lo = off >= 0 ? 0 : (-off + SW - 1) / SW;
        int64_t hi = (OW - 1 - off) >= 0 ? (OW - 1 - off) / SW + 1 : 0;
        hi = std::min<int64_t>(hi, IW);
        if (lo >= hi) continue;
        for (int64_t id = 0; id < ID; ++id) {{
          const int64_t od = id * SD - PD + kd * DD;
          if (od < 0 || od >= OD) continue;
          for (int64_t ih = 0; ih < IH; ++ih) {{
            const int64_t oh = ih * SH - PH + kh * DH;
            if (oh < 0 || oh >= OH) continue;
            float* __restrict dst = C + (od * OH + oh) * OW + off;
            const float* __restrict src = cr + (id * IH + ih) * IW;
            if (SW == 1) {{
              #pragma omp simd
              for (int64_t iw = lo; iw < hi; ++iw) dst[iw] += src[iw];
            }} else {{
              for (int64_t iw = lo; iw < hi; ++iw) dst[iw * SW] += src[iw];
            }}
          }}
        }}
      }}
      {{
        float* const Cout_ = Cout;
        (void)Cout_;{epi_all}
      }}
    }}
  }}
  std::free(wt);
  std::free(col);
"""



def _convnd_im2col(fallback: Any, gemm: Any, _omp: Any, self: Any) -> str:
    """Direct convolution as im2col + the packed gemm per (image, group)."""
    return f"""  const int64_t CIG = CI / G, COG = CO / G, K3 = KD * KH * KW, KK = CIG * K3, P = OD * OH * OW;
  if ((double)G * KK * P * 4.0 > 268435456.0) {{
{fallback}
    return;
  }}
  float* col = (float*)std::malloc(sizeof(float) * (size_t)(G * KK * P + 16));
  float* const Cout = C;
  (void)Cout;
  for (int64_t n = 0; n < NB; ++n) {{
    {_omp(self.knobs)}
    for (int64_t q = 0; q < G * KK; ++q) {{
      const int64_t ci = q / K3, kd = (q / (KH * KW)) % KD, kh = (q / KW) % KH, kw = q % KW;
      float* dst = col + q * P;
      for (int64_t od = 0; od < OD; ++od) {{
        const int64_t id = od * SD - PD + kd * DD;
        for (int64_t oh = 0; oh < OH; ++oh) {{
          const int64_t ih = oh * SH - PH + kh * DH;
          float* d = dst + (od * OH + oh) * OW;
          if (id < 0 || id >= ID || ih < 0 || ih >= IH) {{ for (int64_t ow = 0; ow < OW; ++ow) d[ow] = 0.0f; continue; }}
          const float* xrow = X + (((n * CI + ci) * ID + id) * IH + ih) * IW;
          for (int64_t ow = 0; ow < OW; ++ow) {{
            const int64_t iw = ow * SW - PW + kw * DW;
            d[ow] = (iw >= 0 && iw < IW) ? xrow[iw] : 0.0f;
          }}
        }}
      }}
    }}
    {{
      const float* A = Wt;
      const float* B = col;
      float* C = Cout + n * CO * P;
      const int64_t BATCH = G, M = COG, N = P, K = KK, sA = COG * KK, sB = KK * P, sC = COG * P;
{gemm}
    }}
  }}
  std::free(col);
"""



def _convnd_rowvec(OCB: Any, acc_rows: Any, ecall: Any, _omp: Any, kn: Any) -> str:
    """convnd with whole output rows of OCB channels (a block never spans groups) kept while the taps accumulate."""
    return f"""  const int64_t CIG = CI / G, COG = CO / G;
  const int64_t cbg = (COG + {OCB - 1}) / {OCB};  // channel blocks per group (a block never spans groups)
  {_omp(kn, collapse=2)}
  for (int64_t n = 0; n < NB; ++n)
    for (int64_t b = 0; b < G * cbg; ++b) {{
      const int64_t g = b / cbg;
      const int64_t co0 = g * COG + (b % cbg) * {OCB};
      const int64_t nco = std::min<int64_t>({OCB}, (g + 1) * COG - co0);
      for (int64_t od = 0; od < OD; ++od)
        for (int64_t oh = 0; oh < OH; ++oh) {{
          float* rows[{OCB}];
          for (int64_t o = 0; o < nco; ++o) {{
            rows[o] = C + (((n * CO + co0 + o) * OD + od) * OH + oh) * OW;
            const float b0 = HAS_BIAS ? Bias[co0 + o] : 0.0f;
            for (int64_t ow = 0; ow < OW; ++ow) rows[o][ow] = b0;
          }}
          for (int64_t ci = g * CIG; ci < (g + 1) * CIG; ++ci)
            for (int64_t kd = 0; kd < KD; ++kd) {{
{acc_rows}
            }}
          for (int64_t o = 0; o < nco; ++o) {{
            const int64_t co = co0 + o;
            {ecall}
            (void)co;
          }}
        }}
    }}
  (void)COG; (void)CIG;
"""



def _convnd_gather_rows(widx: Any) -> str:
    """convnd rows, direct: the input row of each tap accumulated into the output row."""
    return f"""              const int64_t id = od * SD - PD + kd * DD;
              if (id < 0 || id >= ID) continue;
              for (int64_t kh = 0; kh < KH; ++kh) {{
                const int64_t ih = oh * SH - PH + kh * DH;
                if (ih < 0 || ih >= IH) continue;
                const float* xrow = X + (((n * CI + ci) * ID + id) * IH + ih) * IW;
                for (int64_t kw = 0; kw < KW; ++kw) {{
                  const int64_t off = kw * DW - PW;  // iw = ow * SW + off
                  int64_t lo = off >= 0 ? 0 : (-off + SW - 1) / SW;
                  int64_t hi = (IW - 1 - off) >= 0 ? (IW - 1 - off) / SW + 1 : 0;
                  hi = std::min<int64_t>(hi, OW);
                  if (lo >= hi) continue;
                  for (int64_t o = 0; o < nco; ++o) {{
                    const int64_t co = co0 + o;
                    const float wv = Wt[{widx}];
                    float* __restrict dst = rows[o];
                    if (SW == 1) {{
                      const float* __restrict src = xrow + off;
                      #pragma omp simd
                      for (int64_t ow = lo; ow < hi; ++ow) dst[ow] += wv * src[ow];
                    }} else {{
                      for (int64_t ow = lo; ow < hi; ++ow) dst[ow] += wv * xrow[ow * SW + off];
                    }}
                  }}
                }}
              }}"""



def _convnd_scatter_rows(widx: Any) -> str:
    """convnd rows, transposed: each input row scattered into the output row it reaches."""
    return f"""              const int64_t td = od + PD - kd * DD;
              if (td < 0 || td % SD) continue;
              const int64_t id = td / SD;
              if (id >= ID) continue;
              for (int64_t kh = 0; kh < KH; ++kh) {{
                const int64_t th = oh + PH - kh * DH;
                if (th < 0 || th % SH) continue;
                const int64_t ih = th / SH;
                if (ih >= IH) continue;
                const float* xrow = X + (((n * CI + ci) * ID + id) * IH + ih) * IW;
                for (int64_t kw = 0; kw < KW; ++kw) {{
                  const int64_t off = kw * DW - PW;  // ow = iw * SW + off
                  int64_t lo = off >= 0 ? 0 : (-off + SW - 1) / SW;
                  int64_t hi = (OW - 1 - off) >= 0 ? (OW - 1 - off) / SW + 1 : 0;
                  hi = std::min<int64_t>(hi, IW);
                  if (lo >= hi) continue;
                  for (int64_t o = 0; o < nco; ++o) {{
                    const int64_t co = co0 + o;
                    const float wv = Wt[{widx}];
                    float* __restrict dst = rows[o];
                    if (SW == 1) {{
                      float* __restrict d = dst + off;
                      #pragma omp simd
                      for (int64_t iw = lo; iw < hi; ++iw) d[iw] += wv * xrow[iw];
                    }} else {{
                      for (int64_t iw = lo; iw < hi; ++iw) dst[iw * SW + off] += wv * xrow[iw];
                    }}
                  }}
                }}
              }}"""



def _convnd_direct(widx: Any, ecall: Any, _omp: Any, kn: Any, taps: Any) -> str:
    """convnd, direct: each output element gathers its taps."""
    return f"""  const int64_t CIG = CI / G, COG = CO / G;
  {_omp(kn, collapse=2)}
  for (int64_t n = 0; n < NB; ++n)
    for (int64_t co = 0; co < CO; ++co) {{
      const int64_t g = co / COG;
      for (int64_t od = 0; od < OD; ++od)
        for (int64_t oh = 0; oh < OH; ++oh) {{
          float* row = C + ((n * CO + co) * OD + od) * OH * OW + oh * OW;
          for (int64_t ow = 0; ow < OW; ++ow) {{
            float acc = HAS_BIAS ? Bias[co] : 0.0f;
            for (int64_t ci = g * CIG; ci < (g + 1) * CIG; ++ci)
              for (int64_t kd = 0; kd < KD; ++kd) {{
{taps[0]}
                for (int64_t kh = 0; kh < KH; ++kh) {{
{taps[1]}
                  const float* xrow = X + (((n * CI + ci) * ID + id) * IH + ih) * IW;
                  for (int64_t kw = 0; kw < KW; ++kw) {{
{taps[2]}
                    acc += Wt[{widx}] * xrow[iw];
                  }}
                }}
              }}
            row[ow] = acc;
          }}
          {ecall}
        }}
    }}
  (void)COG; (void)CIG;
"""



def _conv2d_rowvec(OCB: Any, ecall: Any, _omp: Any, kn: Any) -> str:
    """conv2d with rows of output kept in L1 for OCB output channels at a time, vectorised along ow."""
    return f"""  const int64_t ncb = (CO + {OCB - 1}) / {OCB};
  {_omp(kn, collapse=2)}
  for (int64_t n = 0; n < NB; ++n)
    for (int64_t cb = 0; cb < ncb; ++cb) {{
      const int64_t co0 = cb * {OCB};
      const int64_t nco = std::min<int64_t>({OCB}, CO - co0);
      for (int64_t oh = 0; oh < OH; ++oh) {{
        float* rows[{OCB}];
        for (int64_t o = 0; o < nco; ++o) {{
          rows[o] = C + ((n * CO + co0 + o) * OH + oh) * OW;
          const float b0 = HAS_BIAS ? Bias[co0 + o] : 0.0f;
          for (int64_t ow = 0; ow < OW; ++ow) rows[o][ow] = b0;
        }}
        for (int64_t ci = 0; ci < CI; ++ci)
          for (int64_t kh = 0; kh < KH; ++kh) {{
            const int64_t ih = oh * SH - PH + kh * DH;
            if (ih < 0 || ih >= H) continue;
            const float* xrow = X + ((n * CI + ci) * H + ih) * W;
            for (int64_t kw = 0; kw < KW; ++kw) {{
              // valid ow: 0 <= ow*SW - PW + kw*DW < W
              const int64_t off = kw * DW - PW;
              int64_t lo = off >= 0 ? 0 : (-off + SW - 1) / SW;
              int64_t hi = (W - 1 - off) >= 0 ? (W - 1 - off) / SW + 1 : 0;
              hi = std::min<int64_t>(hi, OW);
              if (lo >= hi) continue;
              for (int64_t o = 0; o < nco; ++o) {{
                const float wv = Wt[(((co0 + o) * CI + ci) * KH + kh) * KW + kw];
                float* __restrict dst = rows[o];
                if (SW == 1) {{
                  const float* __restrict src = xrow + off;
                  #pragma omp simd
                  for (int64_t ow = lo; ow < hi; ++ow) dst[ow] += wv * src[ow];
                }} else {{
                  for (int64_t ow = lo; ow < hi; ++ow) dst[ow] += wv * xrow[ow * SW + off];
                }}
              }}
            }}
          }}
        for (int64_t o = 0; o < nco; ++o) {{
          const int64_t co = co0 + o;
          {ecall}
          (void)co;
        }}
      }}
    }}
"""



def _conv2d_im2col(gemm_body: Any, _omp: Any, kn: Any) -> str:
    """conv2d as im2col + the packed gemm, per image."""
    return f"""  const int64_t P = OH * OW, KK = CI * KH * KW;
  float* col = (float*)std::malloc(sizeof(float) * (size_t)(KK * P + 16));
  float* const Cout = C;
  (void)Cout;
  for (int64_t n = 0; n < NB; ++n) {{
    {_omp(kn)}
    for (int64_t q = 0; q < KK; ++q) {{
      const int64_t ci = q / (KH * KW), kh = (q / KW) % KH, kw = q % KW;
      float* dst = col + q * P;
      for (int64_t oh = 0; oh < OH; ++oh) {{
        const int64_t ih = oh * SH - PH + kh * DH;
        float* d = dst + oh * OW;
        if (ih < 0 || ih >= H) {{ for (int64_t ow = 0; ow < OW; ++ow) d[ow] = 0.0f; continue; }}
        const float* xrow = X + ((n * CI + ci) * H + ih) * W;
        for (int64_t ow = 0; ow < OW; ++ow) {{
          const int64_t iw = ow * SW - PW + kw * DW;
          d[ow] = (iw >= 0 && iw < W) ? xrow[iw] : 0.0f;
        }}
      }}
    }}
    float* const Cn = Cout + n * CO * P;
    {{
      const float* A = Wt;
      const float* B = col;
      float* C = Cn;
      const int64_t BATCH = 1, M = CO, N = P, K = KK, sA = 0, sB = 0, sC = 0;
{gemm_body}
    }}
  }}
  std::free(col);
"""



def _conv2d_direct(ecall: Any, _omp: Any, kn: Any) -> str:
    """conv2d, direct: one output value at a time."""
    return f"""  {_omp(kn, collapse=2)}
  for (int64_t n = 0; n < NB; ++n)
    for (int64_t co = 0; co < CO; ++co)
      for (int64_t oh = 0; oh < OH; ++oh) {{
        for (int64_t ow = 0; ow < OW; ++ow) {{
          float acc = HAS_BIAS ? Bias[co] : 0.0f;
          for (int64_t ci = 0; ci < CI; ++ci)
            for (int64_t kh = 0; kh < KH; ++kh) {{
              const int64_t ih = oh * SH - PH + kh * DH;
              if (ih < 0 || ih >= H) continue;
              for (int64_t kw = 0; kw < KW; ++kw) {{
                const int64_t iw = ow * SW - PW + kw * DW;
                if (iw < 0 || iw >= W) continue;
                acc += Wt[((co * CI + ci) * KH + kh) * KW + kw] * X[((n * CI + ci) * H + ih) * W + iw];
              }}
            }}
          C[((n * CO + co) * OH + oh) * OW + ow] = acc;
        }}
        {ecall}
      }}
"""

