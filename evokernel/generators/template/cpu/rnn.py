"""The ``rnn`` family: one nn.LSTM / nn.GRU / nn.RNN call (every layer, both directions, batch_first or not, a
given or zero initial state) as one kernel writing the output the graph reads (``out``, ``h_n`` or ``c_n``).

Per layer and direction: the input projection of every time step first (``xp = x W_ih^T + b_ih``, rows of
``rtile`` time steps x batch at a time, so each weight row is read once per tile), then the recurrence, one step
at a time, parallel over hidden units: unit ``u`` takes the dot products of its gate rows of ``W_hh`` with each
batch row's hidden state and applies PyTorch's cell:

* LSTM (gates i, f, g, o): ``c' = f*c + i*g``, ``h' = o*tanh(c')``;
* GRU (gates r, z, n): ``n = tanh(x_n + b_in + r*(W_hn h + b_hn))``, ``h' = (1-z)*n + z*h``;
* RNN: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu).

``b_hh`` is added to the projection where PyTorch adds it outside a product (every gate but GRU's n). Float32
accumulation; the weights are the module's own parameters (``weight_ih_l{k}{_reverse}``, ...). Knobs: omp, rtile.
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.cpu.stage import StageCode, StageWriter, _omp
from evokernel.generators.template.front.lower import Stage

NAME = "rnn"
KNOBS: dict[str, list[Any]] = {"omp": ["static", "dynamic", "off"], "rtile": [1, 4, 8]}
DEFAULTS: dict[str, Any] = {"omp": "static", "rtile": 4}
TRANSFORMS: list[tuple[str, dict[str, Any]]] = [("rnn_rtile8", {"rtile": 8}), ("rnn_rtile1", {"rtile": 1})]

_GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def _cell(mode: str) -> str:
    """The new hidden (and cell) state of unit ``u`` of batch row ``b`` from ``xq`` (the projection of its input)
    and ``a[g]`` (the hidden projections)."""
    if mode == "lstm":
        return """        const float ig = 1.0f / (1.0f + std::exp(-(xq[u] + a[0])));
        const float fg = 1.0f / (1.0f + std::exp(-(xq[H + u] + a[1])));
        const float gg = std::tanh(xq[2 * H + u] + a[2]);
        const float og = 1.0f / (1.0f + std::exp(-(xq[3 * H + u] + a[3])));
        const float cn = fg * c[b * H + u] + ig * gg;
        c2[b * H + u] = cn;
        const float hv = og * std::tanh(cn);"""
    if mode == "gru":
        return """        const float rg = 1.0f / (1.0f + std::exp(-(xq[u] + a[0])));
        const float zg = 1.0f / (1.0f + std::exp(-(xq[H + u] + a[1])));
        const float ng = std::tanh(xq[2 * H + u] + rg * a[2]);
        const float hv = (1.0f - zg) * ng + zg * hb[u];"""
    if mode == "rnn_tanh":
        return "        const float hv = std::tanh(xq[u] + a[0]);"
    return "        const float hv = std::max(xq[u] + a[0], 0.0f);"


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
        RT = int(kn.get("rtile", 4))
        params = ["const float* __restrict X"]
        if has_h0:
            params.append("const float* __restrict H0")
        if has_c0:
            params.append("const float* __restrict C0")
        params += [f"const float* __restrict W{i}" for i in range(len(weights))]
        params += ["float* __restrict Y", "int64_t T", "int64_t B", "int64_t I", "int64_t H"]
        # x: (B, T, I) when batch_first, else (T, B, I); the layers after the first read a (T, B, D*H) buffer
        x_strides = "I, T * I" if a["batch_first"] else "B * I, I"
        fold_hh = "g < 2" if mode == "gru" else "true"  # b_hh outside a product: into the projection
        hh_bias = "(g == 2 ? bhh[g * H + u] : 0.0f)" if mode == "gru" else "0.0f"
        if not bias:
            hh_bias = "0.0f"
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
        body = f"""  const float* Wp[{len(weights)}] = {{{', '.join(f'W{i}' for i in range(len(weights)))}}};
  const int64_t G = {G}, GH = {G} * H, D = {D}, DH = {D} * H;
  float* seq0 = (float*)std::malloc(sizeof(float) * (size_t)(T * B * DH));
  float* seq1 = {L} > 1 ? (float*)std::malloc(sizeof(float) * (size_t)(T * B * DH)) : nullptr;
  float* xp = (float*)std::malloc(sizeof(float) * (size_t)(T * B * GH));
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
    for (int64_t d = 0; d < D; ++d) {{
      const int64_t idx = l * D + d;
      const float* wih = Wp[idx * {NP}];
      const float* whh = Wp[idx * {NP} + 1];
      const float* bih = {f'Wp[idx * {NP} + 2]' if bias else 'nullptr'};
      const float* bhh = {f'Wp[idx * {NP} + 3]' if bias else 'nullptr'};
      // 1. the input projection of every step: rows (t, b), {RT} rows per weight pass
      const int64_t R = T * B;
      {_omp(kn)}
      for (int64_t r0 = 0; r0 < R; r0 += {RT}) {{
        const int64_t r1 = std::min<int64_t>(r0 + {RT}, R);
        for (int64_t j = 0; j < GH; ++j) {{
          const float* w = wih + j * In;
          const int64_t g = j / H;
          float bj = 0.0f;
          if (bih) bj += bih[j];
          if (bhh && ({fold_hh})) bj += bhh[j];
          for (int64_t r = r0; r < r1; ++r) {{
            const int64_t t = r / B, b = r % B;
            const float* xr = in + t * st_t + b * st_b;
            float s = 0.0f;
            #pragma omp simd reduction(+:s)
            for (int64_t i = 0; i < In; ++i) s += xr[i] * w[i];
            xp[r * GH + j] = s + bj;
          }}
          (void)g;
        }}
      }}
      // 2. the recurrence
      const float* h0p = {init_h};
      const float* c0p = {init_c};
      for (int64_t q = 0; q < B * H; ++q) {{
        h[q] = h0p ? h0p[q] : 0.0f;
        if (c) c[q] = c0p ? c0p[q] : 0.0f;
      }}
      for (int64_t s = 0; s < T; ++s) {{
        const int64_t t = d ? T - 1 - s : s;
        {_omp(kn)}
        for (int64_t u = 0; u < H; ++u) {{
          for (int64_t b = 0; b < B; ++b) {{
            const float* hb = h + b * H;
            const float* xq = xp + (t * B + b) * GH;
            float a[{G}];
            for (int64_t g = 0; g < G; ++g) {{
              const float* w = whh + (g * H + u) * H;
              float acc = 0.0f;
              #pragma omp simd reduction(+:acc)
              for (int64_t i = 0; i < H; ++i) acc += w[i] * hb[i];
              a[g] = acc + (bhh ? {hh_bias} : 0.0f);
            }}
{cell}
            h2[b * H + u] = hv;
            cur[(t * B + b) * DH + d * H + u] = hv;
          }}
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
  std::free(h);
  std::free(h2);
  if (c) std::free(c);
  if (c2) std::free(c2);
"""
        cpp = f'extern "C" void stage{k}({", ".join(params)}) {{\n' + body + "}\n"
        args = [f"p{x}"] + [f"p{s}" for s in states] + [f"p{w}" for w in weights] + \
            ["out", str(a["T"]), str(a["B"]), str(a["I"]), str(a["hidden"])]
        return StageCode(f"stage{k}", cpp, args)
