"""The ``pool`` family: ``pool2d`` (max/avg 2-D) and ``poolnd`` (max/avg over 1-3 dims with padding, dilation,
ceil mode, adaptive pooling). Knobs: vec, math (its epilogue's), omp.
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.cpu.stage import StageCode, StageWriter, _omp
from evokernel.generators.template.front.lower import Stage

NAME = "pool"
KNOBS: dict[str, list[Any]] = {"omp": ["static", "dynamic", "off"], "vec": [1, 8, 16], "math": ["libm", "fast"]}
DEFAULTS: dict[str, Any] = {"omp": "static", "vec": 1, "math": "libm"}


class Writer(StageWriter):
    def render(self, k: int, st: Stage) -> StageCode:
        op = self.g.nodes[st.anchor].op if st.anchor is not None else ""
        return self.poolnd_stage(k, st) if op == "poolnd" else self.pool_stage(k, st)

    # ---------------------------------------------------------------------------------- pool
    def pool_stage(self, k: int, st: Stage) -> StageCode:
        g, kn = self.g, self.knobs
        node = g.nodes[st.anchor]  # type: ignore[index]
        x = node.args[0]
        NB, C, OH, OW = node.shape
        H, Wd = g.nodes[x].shape[2], g.nodes[x].shape[3]
        a = node.attrs
        frame = node.shape
        epi_fn, epi_ext, epi_ptrs = self.epilogue(k, st, frame)
        fnames = ["NB", "CC", "OH", "OW"]
        ecall = self.epi_call(k, st, epi_ptrs, "nc * OH + oh", "0", "OW", fnames)
        if a["kind"] == "max":
            inner = """          float m = -INFINITY;
          for (int64_t ih = h0; ih < h1; ih += DH)
            for (int64_t iw = w0; iw < w1; iw += DW) { const float v = xp[ih * W + iw]; m = (v > m || v != v) ? v : m; }
          C[(nc * OH + oh) * OW + ow] = m;"""
            bounds = """          int64_t h0 = oh * SH - PH, w0 = ow * SW - PW;
          int64_t h1 = std::min<int64_t>(h0 + (KH - 1) * DH + 1, H), w1 = std::min<int64_t>(w0 + (KW - 1) * DW + 1, W);
          while (h0 < 0) h0 += DH;
          while (w0 < 0) w0 += DW;"""
        else:
            inner = """          float s = 0.0f;
          for (int64_t ih = h0; ih < h1; ++ih)
            for (int64_t iw = w0; iw < w1; ++iw) s += xp[ih * W + iw];
          C[(nc * OH + oh) * OW + ow] = s / (float)(INCLUDE_PAD ? pool : (h1 - h0) * (w1 - w0));"""
            bounds = """          int64_t h0 = oh * SH - PH, w0 = ow * SW - PW;
          int64_t h1 = std::min<int64_t>(h0 + KH, H + PH), w1 = std::min<int64_t>(w0 + KW, W + PW);
          const int64_t pool = (h1 - h0) * (w1 - w0);
          h0 = std::max<int64_t>(h0, 0); w0 = std::max<int64_t>(w0, 0);
          h1 = std::min<int64_t>(h1, H); w1 = std::min<int64_t>(w1, W);"""
        params = ["const float* __restrict X", "float* __restrict C"] + [self.ptype(e) for e in epi_ext] + \
            ["int64_t NB", "int64_t CC", "int64_t H", "int64_t W", "int64_t OH", "int64_t OW", "int64_t KH",
             "int64_t KW", "int64_t SH", "int64_t SW", "int64_t PH", "int64_t PW", "int64_t DH", "int64_t DW",
             "int64_t INCLUDE_PAD"]
        body = f"""  {_omp(kn)}
  for (int64_t nc = 0; nc < NB * CC; ++nc) {{
    const float* xp = X + nc * H * W;
    for (int64_t oh = 0; oh < OH; ++oh) {{
      for (int64_t ow = 0; ow < OW; ++ow) {{
{bounds}
{inner}
      }}
      {ecall}
    }}
  }}
  (void)DH; (void)DW; (void)INCLUDE_PAD;
"""
        cpp = epi_fn + f'extern "C" void stage{k}({", ".join(params)}) {{\n' + body + "}\n"
        call = [f"p{x}", "out"] + [f"p{e}" for e in epi_ext] + [str(v) for v in (
            NB, C, H, Wd, OH, OW, a["k"][0], a["k"][1], a["s"][0], a["s"][1], a["p"][0], a["p"][1],
            a["d"][0], a["d"][1], 1 if a["include_pad"] else 0)]
        return StageCode(f"stage{k}", cpp, call)

    # ------------------------------------------------------------------------- poolnd (any pool)
    def poolnd_stage(self, k: int, st: Stage) -> StageCode:
        """Max or average pooling over 1, 2 or 3 dims, plain or adaptive, as 3-D (leading unit dims)."""
        g, kn = self.g, self.knobs
        node = g.nodes[st.anchor]  # type: ignore[index]
        x = node.args[0]
        a = node.attrs
        nd = len(node.shape) - 2
        lift = lambda shp: (1,) * (3 - nd) + tuple(shp)
        NB, CC = node.shape[0], node.shape[1]
        OD, OH, OW = lift(node.shape[2:])
        ID, IH, IW = lift(g.nodes[x].shape[2:])
        frame = node.shape
        epi_fn, epi_ext, epi_ptrs = self.epilogue(k, st, frame)
        fnames = [f"F{i}" for i in range(len(frame))]
        ecall = self.epi_call(k, st, epi_ptrs, "(nc * OD + od) * OH + oh", "0", "OW", fnames)
        if a["adaptive"]:
            # window [floor(o*I/O), ceil((o+1)*I/O)) per dim
            win = """          const int64_t d0 = (od * ID) / OD, d1 = ((od + 1) * ID + OD - 1) / OD;
          const int64_t h0 = (oh * IH) / OH, h1 = ((oh + 1) * IH + OH - 1) / OH;
          const int64_t w0 = (ow * IW) / OW, w1 = ((ow + 1) * IW + OW - 1) / OW;
          const int64_t sd = 1, sh = 1, sw = 1;
          const int64_t pool = (d1 - d0) * (h1 - h0) * (w1 - w0);"""
        elif a["kind"] == "max":
            win = """          int64_t d0 = od * SD - PD, h0 = oh * SH - PH, w0 = ow * SW - PW;
          const int64_t d1 = std::min<int64_t>(d0 + (KD - 1) * DD + 1, ID);
          const int64_t h1 = std::min<int64_t>(h0 + (KH - 1) * DH + 1, IH);
          const int64_t w1 = std::min<int64_t>(w0 + (KW - 1) * DW + 1, IW);
          while (d0 < 0) d0 += DD;
          while (h0 < 0) h0 += DH;
          while (w0 < 0) w0 += DW;
          const int64_t sd = DD, sh = DH, sw = DW;
          const int64_t pool = 1;"""
        else:
            win = """          int64_t d0 = od * SD - PD, h0 = oh * SH - PH, w0 = ow * SW - PW;
          int64_t d1 = std::min<int64_t>(d0 + KD, ID + PD), h1 = std::min<int64_t>(h0 + KH, IH + PH);
          int64_t w1 = std::min<int64_t>(w0 + KW, IW + PW);
          const int64_t padded = (d1 - d0) * (h1 - h0) * (w1 - w0);
          d0 = std::max<int64_t>(d0, 0); h0 = std::max<int64_t>(h0, 0); w0 = std::max<int64_t>(w0, 0);
          d1 = std::min<int64_t>(d1, ID); h1 = std::min<int64_t>(h1, IH); w1 = std::min<int64_t>(w1, IW);
          const int64_t sd = 1, sh = 1, sw = 1;
          const int64_t pool = INCLUDE_PAD ? padded : (d1 - d0) * (h1 - h0) * (w1 - w0);"""
        if a["kind"] == "max":
            inner = """          float m = -INFINITY;
          for (int64_t id = d0; id < d1; id += sd)
            for (int64_t ih = h0; ih < h1; ih += sh)
              for (int64_t iw = w0; iw < w1; iw += sw) {
                const float v = xp[(id * IH + ih) * IW + iw];
                m = (v > m || v != v) ? v : m;
              }
          row[ow] = m;
          (void)pool;"""
        else:
            inner = """          double s = 0.0;  // a global pool sums thousands of values
          for (int64_t id = d0; id < d1; id += sd)
            for (int64_t ih = h0; ih < h1; ih += sh)
              for (int64_t iw = w0; iw < w1; iw += sw) s += xp[(id * IH + ih) * IW + iw];
          row[ow] = (float)(s / (double)pool);"""
        params = ["const float* __restrict X", "float* __restrict C"] + [self.ptype(e) for e in epi_ext] + \
            [f"int64_t {v}" for v in ("NB", "CC", "ID", "IH", "IW", "OD", "OH", "OW", "KD", "KH", "KW", "SD", "SH",
                                      "SW", "PD", "PH", "PW", "DD", "DH", "DW", "INCLUDE_PAD")] + \
            [f"int64_t {f}" for f in fnames]
        body = _poolnd_loops(win, inner, ecall, _omp, kn)
        cpp = epi_fn + f'extern "C" void stage{k}({", ".join(params)}) {{\n' + body + "}\n"
        call = [f"p{x}", "out"] + [f"p{e}" for e in epi_ext] + [str(v) for v in (
            NB, CC, ID, IH, IW, OD, OH, OW, *a["k"], *a["s"], *a["p"], *a["d"], 1 if a["include_pad"] else 0)] + \
            [str(d) for d in frame]
        return StageCode(f"stage{k}", cpp, call)


def _poolnd_loops(win: Any, inner: Any, ecall: Any, _omp: Any, kn: Any) -> str:
    """The pooling loops over (n, c) planes and output points."""
    return f"""  {_omp(kn)}
  for (int64_t nc = 0; nc < NB * CC; ++nc) {{
    const float* xp = X + nc * ID * IH * IW;
    for (int64_t od = 0; od < OD; ++od)
      for (int64_t oh = 0; oh < OH; ++oh) {{
        float* row = C + ((nc * OD + od) * OH + oh) * OW;
        for (int64_t ow = 0; ow < OW; ++ow) {{
{win}
{inner}
        }}
        {ecall}
      }}
  }}
  (void)KD; (void)KH; (void)KW; (void)SD; (void)SH; (void)SW; (void)PD; (void)PH; (void)PW;
  (void)DD; (void)DH; (void)DW; (void)INCLUDE_PAD;
"""

