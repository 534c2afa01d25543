"""The ``rnn`` family: one nn.LSTM / nn.GRU / nn.RNN call (every layer, both directions, batch_first or not, a
given or zero initial state) as one kernel writing the output the graph reads (``out``, ``h_n`` or ``c_n``).

Per layer and direction the weights are transposed once (``W^T``: each input feature's row of gate outputs is
contiguous), then the input projection of every time step (``xp = x W_ih^T + b``) and, step by step, the hidden
projection ``h W_hh^T`` are computed as row-broadcast products, ``rchunk`` gate outputs at a time held in vector
registers while the input row streams by (no horizontal sums); then the cell, per batch row and hidden unit, with
PyTorch's gate order and formulas:

* LSTM (gates i, f, g, o): ``c' = f*c + i*g``, ``h' = o*tanh(c')``;
* GRU (gates r, z, n): ``n = tanh(x_n + b_in + r*(W_hn h + b_hn))``, ``h' = (1-z)*n + z*h``;
* RNN: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu).

``b_hh`` is added to the projection where PyTorch adds it outside a product (every gate but GRU's n). Float32
accumulation; the weights are the module's own parameters (``weight_ih_l{k}{_reverse}``, ...). Knobs: omp, rchunk.
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.cpu.stage import StageCode, StageWriter, _omp
from evokernel.generators.template.front.lower import Stage

NAME = "rnn"
KNOBS: dict[str, list[Any]] = {"omp": ["static", "dynamic", "off"], "rchunk": [16, 32, 64]}
DEFAULTS: dict[str, Any] = {"omp": "static", "rchunk": 32}
TRANSFORMS: list[tuple[str, dict[str, Any]]] = [("rnn_chunk64", {"rchunk": 64}), ("rnn_chunk16", {"rchunk": 16})]

_GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def _cell(mode: str) -> str:
    """The new hidden (and cell) state of unit ``u`` of batch row ``b`` from ``xq`` (the projection of its input)
    and ``a[g * H + u]`` (the hidden projections)."""
    if mode == "lstm":
        return """        const float ig = 1.0f / (1.0f + std::exp(-(xq[u] + a[u])));
        const float fg = 1.0f / (1.0f + std::exp(-(xq[H + u] + a[H + u])));
        const float gg = std::tanh(xq[2 * H + u] + a[2 * H + u]);
        const float og = 1.0f / (1.0f + std::exp(-(xq[3 * H + u] + a[3 * H + u])));
        const float cn = fg * c[b * H + u] + ig * gg;
        c2[b * H + u] = cn;
        const float hv = og * std::tanh(cn);"""
    if mode == "gru":
        return """        const float rg = 1.0f / (1.0f + std::exp(-(xq[u] + a[u])));
        const float zg = 1.0f / (1.0f + std::exp(-(xq[H + u] + a[H + u])));
        const float ng = std::tanh(xq[2 * H + u] + rg * a[2 * H + u]);
        const float hv = (1.0f - zg) * ng + zg * hb[u];"""
    if mode == "rnn_tanh":
        return "        const float hv = std::tanh(xq[u] + a[u]);"
    return "        const float hv = std::max(xq[u] + a[u], 0.0f);"


class Writer(StageWriter):
    def render(self, k: int, st: Stage) -> StageCode:
        g, kn = self.g, self.knobs
        node = g.nodes[st.anchor]  # type: ignore[index]
        a = node.attrs
        mode, L, D, kind = a["mode"], a["layers"], a["dirs"], a["kind"]
        G = _GATES[mode]
        lstm = mode == "lstm"
        has_h0, has_c0, bias = a["has_h0"], a["has_c0"], a["bias"]
        x, rest = node.args[0], list(node.args[1:])
        states = [rest.pop(0) for _ in range(int(has_h0) + int(has_c0))]
        weights = rest
        NP = 4 if bias else 2
        assert len(weights) == L * D * NP
        RC = int(kn.get("rchunk", 32))
        params = ["const float* __restrict X"]
        if has_h0:
            params.append("const float* __restrict H0")
        if has_c0:
            params.append("const float* __restrict C0")
        params += [f"const float* __restrict W{i}" for i in range(len(weights))]
        params += ["float* __restrict Y", "int64_t T", "int64_t B", "int64_t I", "int64_t H"]
        # x: (B, T, I) when batch_first, else (T, B, I); the layers after the first read a (T, B, D*H) buffer
        x_strides = "I, T * I" if a["batch_first"] else "B * I, I"
        init_h = "H0 + (int64_t)idx * B * H" if has_h0 else "nullptr"
        init_c = "C0 + (int64_t)idx * B * H" if has_c0 else "nullptr"
        if kind == "out":
            y_index = "(bf ? (b * T + t) : (t * B + b)) * DH + j"
            final = f"""  {{
    const bool bf = {'true' if a['batch_first'] else 'false'};
    {_omp(kn, collapse=2)}
    for (int64_t t = 0; t < T; ++t)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t j = 0; j < DH; ++j) Y[{y_index}] = prev[(t * B + b) * DH + j];
  }}
"""
            save = ""
        else:
            final = ""
            src = "h" if kind == "h_n" else "c"
            save = f"""      for (int64_t q = 0; q < B * H; ++q) Y[(int64_t)idx * B * H + q] = {src}[q];
"""
        cell = _cell(mode)
        fold = "(j < 2 * H)" if mode == "gru" else "true"
        body = f"""  const float* Wp[{len(weights)}] = {{{', '.join(f'W{i}' for i in range(len(weights)))}}};
  const int64_t GH = {G} * H, DH = {D} * H, IMAX = std::max<int64_t>(I, DH);
  const int64_t NCH = (GH + {RC} - 1) / {RC}, GHP = NCH * {RC};  // gate outputs in chunks of {RC} (the last padded)
  float* seq0 = (float*)std::malloc(sizeof(float) * (size_t)(T * B * DH));
  float* seq1 = {L} > 1 ? (float*)std::malloc(sizeof(float) * (size_t)(T * B * DH)) : nullptr;
  float* xp = (float*)std::malloc(sizeof(float) * (size_t)(T * B * GH));
  float* hh = (float*)std::malloc(sizeof(float) * (size_t)(B * GH));
  float* wiT = (float*)std::calloc((size_t)(IMAX * GHP), sizeof(float));
  float* whT = (float*)std::calloc((size_t)(H * GHP), sizeof(float));
  float* bx = (float*)std::calloc((size_t)GHP, sizeof(float));
  float* bh = (float*)std::calloc((size_t)GHP, sizeof(float));
  float* h = (float*)std::malloc(sizeof(float) * (size_t)(B * H));
  float* h2 = (float*)std::malloc(sizeof(float) * (size_t)(B * H));
  float* c = {'(float*)std::malloc(sizeof(float) * (size_t)(B * H))' if lstm else 'nullptr'};
  float* c2 = {'(float*)std::malloc(sizeof(float) * (size_t)(B * H))' if lstm else 'nullptr'};
  const float* prev = nullptr;
  float* cur = seq0;
  for (int64_t l = 0; l < {L}; ++l) {{
    const float* in = l == 0 ? X : prev;
    const int64_t In = l == 0 ? I : DH;
    const int64_t st_t = l == 0 ? {x_strides.split(', ')[0]} : B * DH;
    const int64_t st_b = l == 0 ? {x_strides.split(', ')[1]} : DH;
    for (int64_t d = 0; d < {D}; ++d) {{
      const int64_t idx = l * {D} + d;
      const float* wih = Wp[idx * {NP}];
      const float* whh = Wp[idx * {NP} + 1];
      const float* bih = {f'Wp[idx * {NP} + 2]' if bias else 'nullptr'};
      const float* bhh = {f'Wp[idx * {NP} + 3]' if bias else 'nullptr'};
      // the weights packed transposed, chunk by chunk (chunk q: K rows of {RC} gate outputs, contiguous); b_hh
      // where PyTorch adds it outside a product folded into the projection's bias, GRU's b_hn kept apart
      for (int64_t j = 0; j < GH; ++j) {{
        const int64_t q = j / {RC}, jj = j % {RC};
        for (int64_t i = 0; i < In; ++i) wiT[(q * In + i) * {RC} + jj] = wih[j * In + i];
        for (int64_t i = 0; i < H; ++i) whT[(q * H + i) * {RC} + jj] = whh[j * H + i];
        const bool fold = {fold};
        bx[j] = (bih ? bih[j] : 0.0f) + (bhh && fold ? bhh[j] : 0.0f);
        bh[j] = bhh && !fold ? bhh[j] : 0.0f;
      }}
      // 1. the input projection of every step, rows (t, b): xp = x W_ih^T + bias, {RC} outputs at a time
      {_omp(kn, collapse=2)}
      for (int64_t q = 0; q < NCH; ++q)
        for (int64_t r0 = 0; r0 < T * B; r0 += 4) {{
          const float* xr[4];
          float* yr[4];
          const int nr = (int)std::min<int64_t>(4, T * B - r0);
          for (int m = 0; m < nr; ++m) {{
            const int64_t t = (r0 + m) / B, b = (r0 + m) % B;
            xr[m] = in + t * st_t + b * st_b;
            yr[m] = xp + (r0 + m) * GH + q * {RC};
          }}
          ek_rnn_tile{k}(xr, nr, wiT + q * In * {RC}, In, bx + q * {RC}, yr, std::min<int64_t>({RC}, GH - q * {RC}));
        }}
      // 2. the recurrence: hidden projection (chunks of gate outputs), then the cell, per step
      const float* h0p = {init_h};
      const float* c0p = {init_c};
      for (int64_t q = 0; q < B * H; ++q) {{
        h[q] = h0p ? h0p[q] : 0.0f;
        if (c) c[q] = c0p ? c0p[q] : 0.0f;
      }}
      for (int64_t s = 0; s < T; ++s) {{
        const int64_t t = d ? T - 1 - s : s;
        {_omp(kn, collapse=2)}
        for (int64_t q = 0; q < NCH; ++q)
          for (int64_t b0 = 0; b0 < B; b0 += 4) {{
            const float* xr[4];
            float* yr[4];
            const int nr = (int)std::min<int64_t>(4, B - b0);
            for (int m = 0; m < nr; ++m) {{
              xr[m] = h + (b0 + m) * H;
              yr[m] = hh + (b0 + m) * GH + q * {RC};
            }}
            ek_rnn_tile{k}(xr, nr, whT + q * H * {RC}, H, bh + q * {RC}, yr, std::min<int64_t>({RC}, GH - q * {RC}));
          }}
        {_omp(kn, collapse=2)}
        for (int64_t b = 0; b < B; ++b)
          for (int64_t u = 0; u < H; ++u) {{
            const float* hb = h + b * H;
            const float* xq = xp + (t * B + b) * GH;
            const float* a = hh + b * GH;
{cell}
            h2[b * H + u] = hv;
            cur[(t * B + b) * DH + d * H + u] = hv;
            (void)hb;
          }}
        {{ float* tmp = h; h = h2; h2 = tmp; }}
        {'{ float* tmp = c; c = c2; c2 = tmp; }' if lstm else ''}
      }}
{save}    }}
    prev = cur;
    cur = cur == seq0 ? seq1 : seq0;
  }}
{final}  std::free(seq0);
  if (seq1) std::free(seq1);
  std::free(xp);
  std::free(hh);
  std::free(wiT);
  std::free(whT);
  std::free(bx);
  std::free(bh);
  std::free(h);
  std::free(h2);
  if (c) std::free(c);
  if (c2) std::free(c2);
"""
        helper = f"""// rows m < nr: yr[m][jj] = bias[jj] + sum_i xr[m][i] * Wc[i * {RC} + jj] for jj < jn (Wc: one packed chunk
// of {RC} gate outputs); 4 x {RC} independent accumulators keep the FMA units busy
static inline void ek_rnn_tile{k}(const float* const* xr, int nr, const float* __restrict Wc, int64_t K,
                                  const float* __restrict bias, float* const* yr, int64_t jn) {{
  float acc[4][{RC}];
  for (int m = 0; m < 4; ++m)
    for (int64_t jj = 0; jj < {RC}; ++jj) acc[m][jj] = bias[jj];
  if (nr == 4) {{
    const float* __restrict x0 = xr[0];
    const float* __restrict x1 = xr[1];
    const float* __restrict x2 = xr[2];
    const float* __restrict x3 = xr[3];
    for (int64_t i = 0; i < K; ++i) {{
      const float* w = Wc + i * {RC};
      const float a0 = x0[i], a1 = x1[i], a2 = x2[i], a3 = x3[i];
      #pragma omp simd
      for (int64_t jj = 0; jj < {RC}; ++jj) {{
        acc[0][jj] += a0 * w[jj];
        acc[1][jj] += a1 * w[jj];
        acc[2][jj] += a2 * w[jj];
        acc[3][jj] += a3 * w[jj];
      }}
    }}
  }} else {{
    for (int m = 0; m < nr; ++m)
      for (int64_t i = 0; i < K; ++i) {{
        const float a = xr[m][i];
        const float* w = Wc + i * {RC};
        #pragma omp simd
        for (int64_t jj = 0; jj < {RC}; ++jj) acc[m][jj] += a * w[jj];
      }}
  }}
  for (int m = 0; m < nr; ++m)
    for (int64_t jj = 0; jj < jn; ++jj) yr[m][jj] = acc[m][jj];
}}
"""
        cpp = helper + f'extern "C" void stage{k}({", ".join(params)}) {{\n' + body + "}\n"
        args = [f"p{x}"] + [f"p{s}" for s in states] + [f"p{w}" for w in weights] + \
            ["out", str(a["T"]), str(a["B"]), str(a["I"]), str(a["hidden"])]
        return StageCode(f"stage{k}", cpp, args)
