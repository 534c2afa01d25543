"""The ``layout`` family: transpose copies (the last two dims swapped, in ``tile`` x ``tile`` blocks),
triu/tril masks, concatenation (``torch.cat``: each input's rows copied into their slice of the output's) and
permutation copies (``permute``/``transpose`` of other dims than the last two, made contiguous) and slice copies
(basic indexing: integers and slices, ``out[:, -1, :]``).
Knobs: tile, omp.
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.cpu.stage import StageCode, StageWriter, _omp, _prod
from evokernel.generators.template.front.lower import Stage

NAME = "layout"
KNOBS: dict[str, list[Any]] = {"omp": ["static", "dynamic", "off"], "tile": [8, 32, 64]}
DEFAULTS: dict[str, Any] = {"omp": "static", "tile": 32}


class Writer(StageWriter):
    def render(self, k: int, st: Stage) -> StageCode:
        if self.g.nodes[st.anchor].op == "cat":  # type: ignore[index]
            return self.cat_stage(k, st)
        if self.g.nodes[st.anchor].op in ("permute_copy", "slice_copy"):  # type: ignore[index]
            return self.permute_stage(k, st)
        return self.layout_stage(k, st)

    def permute_stage(self, k: int, st: Stage) -> StageCode:
        """``x.permute(perm)`` (or a transpose of two outer dims) copied contiguous: output row ``r`` (all dims but
        the last) starts in the input at the sum of its indices times the permuted input strides; its elements
        are read at the stride of the input dim that became the last. ``slice_copy`` (``x[:, -1, :]``) is the same
        copy from the input offset ``base`` with the strides of its slices."""
        g, kn = self.g, self.knobs
        node = g.nodes[st.anchor]  # type: ignore[index]
        x = node.args[0]
        src, out = g.nodes[x].shape, node.shape
        if node.op == "slice_copy":
            base, pst = int(node.attrs["base"]), [int(v) for v in node.attrs["pst"]]
        else:
            strides = [_prod(src[i + 1:]) for i in range(len(src))]
            base, pst = 0, [strides[p] for p in node.attrs["perm"]]  # the input stride of each output dim
        rank = len(out)
        decompose = []
        for d in range(rank - 2, -1, -1):
            decompose.append(f"      off += (rem % {out[d]}LL) * {pst[d]}LL; rem /= {out[d]}LL;")
        body = f"""  {_omp(kn)}
  for (int64_t r = 0; r < ROWS; ++r) {{
    int64_t rem = r, off = {f"{base}LL" if base else 0};
{chr(10).join(decompose)}
    const float* xs = X + off;
    float* ys = Y + r * {out[-1]}LL;
    for (int64_t j = 0; j < {out[-1]}LL; ++j) ys[j] = xs[j * {pst[-1]}LL];
  }}
"""
        params = ["const float* __restrict X", "float* __restrict Y", "int64_t ROWS"]
        cpp = f'extern "C" void stage{k}({", ".join(params)}) {{\n' + body + "}\n"
        return StageCode(f"stage{k}", cpp, [f"p{x}", "out", str(_prod(out[:-1]))])

    def cat_stage(self, k: int, st: Stage) -> StageCode:
        """``torch.cat(xs, dim)``: the output is OUTER blocks of ``sum(INNER_i)`` floats (OUTER: the product of the
        dims before ``dim``); block ``o`` holds input i's block ``o`` of INNER_i floats at offset ``sum(INNER_j<i)``."""
        g, kn = self.g, self.knobs
        node = g.nodes[st.anchor]  # type: ignore[index]
        d = node.attrs["dim"]
        outer = _prod(node.shape[:d])
        inners = [_prod(g.nodes[x].shape[d:]) for x in node.args]
        total = sum(inners)
        params = [f"const float* __restrict X{i}" for i in range(len(inners))] + ["float* __restrict Y", "int64_t OUTER"]
        copies, off = [], 0
        for i, inner in enumerate(inners):
            copies.append(f"""    {{
      const float* xs = X{i} + o * {inner}LL;
      float* ys = Y + o * {total}LL + {off}LL;
      #pragma omp simd
      for (int64_t j = 0; j < {inner}LL; ++j) ys[j] = xs[j];
    }}""")
            off += inner
        body = f"""  {_omp(kn)}
  for (int64_t o = 0; o < OUTER; ++o) {{
{chr(10).join(copies)}
  }}
"""
        cpp = f'extern "C" void stage{k}({", ".join(params)}) {{\n' + body + "}\n"
        return StageCode(f"stage{k}", cpp, [f"p{x}" for x in node.args] + ["out", str(outer)])

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
