"""C++ and candidate-file generation for a :class:`~.lower.Plan` under a schedule (a dict of knobs).

Each stage becomes one ``extern "C"`` function ``stage<k>``; ``ModelNew.forward`` allocates every
materialised tensor with ``torch.empty`` and calls the stages in order. Sizes are passed to the
native code as runtime arguments (the kernels are not specialised to the task's sizes), scalar
constants of the reference (slopes, eps, scales) are literals.

Families and their knobs (see :mod:`.schedules` for the value sets):

* ``row``      -- :mod:`.rowprog` (vec, unroll, tail, row_cache, math, omp)
* ``gemm``     -- gemm_algo naive | ikj | packed; packed: gemm_mr, gemm_nr, gemm_kc, gemm_mc, gemm_nc
* ``gemv``     -- vec, unroll (accumulators), omp
* ``conv``     -- conv_algo direct | rowvec; conv_ocb (output channels per pass); omp
* ``pool``     -- omp
* ``scan``     -- scan_chains (independent running sums per row: 1 = one serial chain); omp
* ``midreduce``-- mid_chunk (inner columns kept in accumulators); omp
* ``groupnorm``-- gn_stats two_pass | one_pass; omp

Epilogues (elementwise chains fused after an anchor) are row programs over segments of the anchor's
output rows, applied while the tile is cache-hot.
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.analysis import AnalysisError
from evokernel.generators.template.lower import Plan, Stage
from evokernel.generators.template.prelude import prelude
from evokernel.generators.template.rowprog import RowProgram, vtype


def _prod(xs: Any) -> int:
    p = 1
    for x in xs:
        p *= int(x)
    return p


def _omp(knobs: dict[str, Any], extra: str = "", collapse: int = 1) -> str:
    mode = knobs.get("omp", "static")
    if mode == "off":
        return ""
    sched = "schedule(static)" if mode == "static" else "schedule(dynamic, 4)"
    col = f" collapse({collapse})" if collapse > 1 else ""
    return f"#pragma omp parallel for{col} {sched}{(' ' + extra) if extra else ''}"


class StageCode:
    """The C++ of one stage plus how forward calls it."""

    def __init__(self, name: str, cpp: str, args: list[str]):
        self.name, self.cpp, self.args = name, cpp, args


class Codegen:
    def __init__(self, plan: Plan, knobs: dict[str, Any]):
        self.plan, self.g, self.knobs = plan, plan.graph, knobs

    # ------------------------------------------------------------------------------- helpers
    def ptype(self, nid: int, const: bool = True) -> str:
        t = "int64_t" if self.g.nodes[nid].dtype == "i64" else "float"
        return f"{'const ' if const else ''}{t}* __restrict p{nid}"

    def resolve(self, nid: int) -> int:
        return self.plan.aliases.get(nid, nid)

    def epilogue(self, k: int, st: Stage, frame: tuple[int, ...]) -> tuple[str, list[int], list[str]]:
        """A function ``epi<k>(out, ext..., r, j0, j1, dims..., N)`` applying the stage's chain in place."""
        if not st.nodes:
            return "", [], []
        anchor = st.anchor
        assert anchor is not None
        ext = [anchor] + [e for e in self._chain_reads(st) if e != anchor]
        L = len(frame) - 1
        dims = [f"D{d}" for d in range(L)]
        ptrs = {e: f"p{e}" for e in ext}
        ptrs[anchor] = "out"
        prog = RowProgram(self.g, frame, st.nodes, ext, ptrs, "out", self.knobs, dims, "N", "j0", "j1",
                          allow_reduce=False, risky_tail=False)
        body, kind = prog.row_body()
        if kind != "J":
            raise AnalysisError("an epilogue must produce the anchor's shape")
        params = ["float* __restrict out"] + [self.ptype(e) for e in ext[1:]] + \
            ["int64_t r", "int64_t j0", "int64_t j1"] + [f"int64_t {d}" for d in dims] + ["int64_t N"]
        fn = f"static inline void epi{k}({', '.join(params)}) {{\n" + \
            "\n".join("  " + ln for ln in body) + "\n  (void)r;\n}\n"
        call_ptrs = [f"p{e}" for e in ext[1:]]
        return fn, ext[1:], call_ptrs

    def _chain_reads(self, st: Stage) -> list[int]:
        out: list[int] = []
        for i in st.nodes:
            for a in self.g.nodes[i].args:
                if isinstance(a, int) and a not in st.nodes and a not in out:
                    out.append(a)
        return out

    def epi_call(self, k: int, st: Stage, ptrs: list[str], r: str, j0: str, j1: str, frame_names: list[str]) -> str:
        if not st.nodes:
            return ""
        args = ["C"] + ptrs + [r, j0, j1] + frame_names
        return f"epi{k}({', '.join(args)});"

    # ------------------------------------------------------------------------------ stages
    def stage(self, k: int, st: Stage) -> StageCode:
        fam = st.family
        if fam == "row":
            return self.row_stage(k, st)
        if fam in ("gemm", "gemv"):
            return self.gemm_stage(k, st)
        op = self.g.nodes[st.anchor].op if st.anchor is not None else ""
        if fam == "conv":
            return self.convnd_stage(k, st) if op == "convnd" else self.conv_stage(k, st)
        if fam == "pool":
            return self.poolnd_stage(k, st) if op == "poolnd" else self.pool_stage(k, st)
        if fam == "scan":
            return self.scan_stage(k, st)
        if fam == "midreduce":
            return self.argreduce_stage(k, st) if op == "argreduce" else self.midreduce_stage(k, st)
        if fam == "layout":
            return self.layout_stage(k, st)
        if fam == "groupnorm":
            return self.batchnorm_stage(k, st) if op == "batch_norm" else self.groupnorm_stage(k, st)
        raise AnalysisError(f"no code generator for family {fam}")

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
        if kind == "G":
            fn = g.nodes[st.out].attrs["fn"]
            a = g.nodes[st.out].args[0]
            red = {"sum": "+", "mean": "+", "amax": "max", "amin": "min"}[fn]
            init = {"sum": "0.0", "mean": "0.0", "amax": "-INFINITY", "amin": "INFINITY"}[fn]
            lines.append(f"  double total = {init};")
            pragma = _omp(self.knobs, f"reduction({red}:total)")
            if pragma:
                lines.append("  " + pragma)
            lines.append("  for (int64_t r = 0; r < R; ++r) {")
            lines += ["    " + ln for ln in body]
            if red == "+":
                lines.append("    total += (double)gval;")
            else:
                lines.append(f"    total = {'std::max' if red == 'max' else 'std::min'}(total, (double)gval);")
            lines.append("  }")
            count = "(double)R * (double)N" if prog.kind.get(a) == "J" else "(double)R"
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

    # ---------------------------------------------------------------------------------- gemm
    def gemm_stage(self, k: int, st: Stage) -> StageCode:
        g, kn = self.g, self.knobs
        node = g.nodes[st.anchor]  # type: ignore[index]
        a, b = node.args
        tb = 1 if node.attrs["trans_b"] else 0
        frame = node.shape
        L = len(frame) - 1
        epi_fn, epi_ext, epi_ptrs = self.epilogue(k, st, frame)
        fnames = [f"F{d}" for d in range(L)] + ["Nn"]
        sb_batch = "0" if len(g.nodes[b].shape) == 2 else "K * N"
        params = [self.ptype(a).replace(f"p{a}", "A"), self.ptype(b).replace(f"p{b}", "B"), "float* __restrict C"] + \
            [self.ptype(e) for e in epi_ext] + ["int64_t BATCH", "int64_t M", "int64_t N", "int64_t K"] + \
            [f"int64_t {f}" for f in fnames]
        head = f'extern "C" void stage{k}({", ".join(params)}) {{\n  const int64_t sA = M * K, sB = {sb_batch}, sC = M * N;\n'
        ecall = lambda r, j0, j1: self.epi_call(k, st, epi_ptrs, r, j0, j1, fnames)
        if st.family == "gemv":
            body = self._gemv(tb, ecall)
        else:
            algo = kn.get("gemm_algo", "ikj")
            body = {"naive": self._gemm_naive, "ikj": self._gemm_ikj, "packed": self._gemm_packed}[algo](tb, ecall)
        cpp = epi_fn + head + body + "}\n"
        call = [f"p{a}", f"p{b}", "out"] + [f"p{e}" for e in epi_ext] + \
            [str(node.attrs["batch"]), str(node.attrs["m"]), str(node.attrs["n"]), str(node.attrs["k"])] + \
            [str(d) for d in frame]
        return StageCode(f"stage{k}", cpp, call)

    def _gemv(self, tb: int, ecall: Any) -> str:
        W, U = int(self.knobs.get("vec", 1)), int(self.knobs.get("unroll", 1))
        V = vtype(W)
        step = W * U
        ld = (lambda p, i: f"{p}[{i}]") if W == 1 else (lambda p, i: f"(*(const v{W}u*)({p} + {i}))")
        accs = "\n".join(f"      {V} acc{u} = sp<{V}>(0.0f);" for u in range(U))
        fma = "\n".join(f"        acc{u} += {ld('a', f'k + {u * W}')} * {ld('x', f'k + {u * W}')};" for u in range(U))
        comb = " + ".join(f"acc{u}" for u in range(U))
        return f"""  (void)sC;
  for (int64_t bt = 0; bt < BATCH; ++bt) {{
    const float* x = B + bt * sB;
    {_omp(self.knobs)}
    for (int64_t i = 0; i < M; ++i) {{
      const float* a = A + bt * sA + i * K;
{accs}
      int64_t k = 0;
      for (; k + {step} <= K; k += {step}) {{
{fma}
      }}
      float s = ek_hsum({comb});
      for (; k < K; ++k) s += a[k] * x[k];
      C[bt * M + i] = s;
      {ecall('bt * M + i', '0', '1')}
    }}
  }}
  (void)N;
"""

    def _gemm_naive(self, tb: int, ecall: Any) -> str:
        bidx = "B[bt * sB + j * K + kk]" if tb else "B[bt * sB + kk * N + j]"
        return f"""  for (int64_t bt = 0; bt < BATCH; ++bt) {{
    {_omp(self.knobs)}
    for (int64_t i = 0; i < M; ++i) {{
      const float* a = A + bt * sA + i * K;
      float* c = C + bt * sC + i * N;
      for (int64_t j = 0; j < N; ++j) {{
        float acc = 0.0f;
        for (int64_t kk = 0; kk < K; ++kk) acc += a[kk] * {bidx};
        c[j] = acc;
      }}
      {ecall('bt * M + i', '0', 'N')}
    }}
  }}
"""

    def _gemm_ikj(self, tb: int, ecall: Any) -> str:
        # B is read row by row (k, :); a transposed B is transposed once per batch into a scratch
        prep = ""
        bsrc = "B + bt * sB"
        if tb:
            prep = """    {PRAGMA}
    for (int64_t kk = 0; kk < K; ++kk)
      for (int64_t j = 0; j < N; ++j) Bt[kk * N + j] = B[bt * sB + j * K + kk];
""".replace("{PRAGMA}", _omp(self.knobs))
            bsrc = "Bt"
        alloc = "  float* Bt = (float*)std::malloc(sizeof(float) * (size_t)(K * N + 16));\n" if tb else ""
        free = "  std::free(Bt);\n" if tb else ""
        return f"""{alloc}  for (int64_t bt = 0; bt < BATCH; ++bt) {{
{prep}    const float* Bb = {bsrc};
    {_omp(self.knobs)}
    for (int64_t i = 0; i < M; ++i) {{
      const float* a = A + bt * sA + i * K;
      float* c = C + bt * sC + i * N;
      for (int64_t j = 0; j < N; ++j) c[j] = 0.0f;
      for (int64_t kk = 0; kk < K; ++kk) {{
        const float av = a[kk];
        const float* brow = Bb + kk * N;
        #pragma omp simd
        for (int64_t j = 0; j < N; ++j) c[j] += av * brow[j];
      }}
      {ecall('bt * M + i', '0', 'N')}
    }}
  }}
{free}"""

    def _gemm_packed(self, tb: int, ecall: Any) -> str:
        kn = self.knobs
        MR, NR = int(kn.get("gemm_mr", 6)), int(kn.get("gemm_nr", 32))
        KC, MC, NC = int(kn.get("gemm_kc", 256)), int(kn.get("gemm_mc", 96)), int(kn.get("gemm_nc", 1024))
        MC = max(MR, MC // MR * MR)
        NC = max(NR, NC // NR * NR)
        NV = NR // 16
        if NV * 16 != NR:
            raise AnalysisError("gemm_nr must be a multiple of 16")
        acc_decl = "\n".join(f"    v16f c{v}[{MR}];" for v in range(NV))
        acc_zero = "\n".join(f"      for (int i = 0; i < {MR}; ++i) c{v}[i] = v16f{{}};" for v in range(NV))
        acc_load = "\n".join(f"        for (int i = 0; i < {MR}; ++i) c{v}[i] = *(const v16u*)(Cp + i * ldc + {16 * v});"
                             for v in range(NV))
        acc_load_tmp = "\n".join(f"        for (int i = 0; i < {MR}; ++i) c{v}[i] = *(const v16u*)(&tmp[i][{16 * v}]);"
                                 for v in range(NV))
        bload = "\n".join(f"      const v16f b{v} = *(const v16f*)(Bp + kk * {NR} + {16 * v});" for v in range(NV))
        fma = "\n".join(f"        c{v}[i] += av * b{v};" for v in range(NV))
        st_full = "\n".join(f"      for (int i = 0; i < {MR}; ++i) *(v16u*)(Cp + i * ldc + {16 * v}) = c{v}[i];"
                            for v in range(NV))
        st_tmp = "\n".join(f"      for (int i = 0; i < {MR}; ++i) *(v16u*)(&tmp[i][{16 * v}]) = c{v}[i];" for v in range(NV))
        bpack = (f"""      for (int64_t jj = 0; jj < nr; ++jj) {{
        const float* src = Bb + (j0 + jj) * K + pc;
        for (int64_t kk = 0; kk < kc; ++kk) dst[kk * {NR} + jj] = src[kk];
      }}
      for (int64_t jj = nr; jj < {NR}; ++jj)
        for (int64_t kk = 0; kk < kc; ++kk) dst[kk * {NR} + jj] = 0.0f;"""
                 if tb else
                 f"""      for (int64_t kk = 0; kk < kc; ++kk) {{
        const float* src = Bb + (pc + kk) * N + j0;
        int64_t jj = 0;
        for (; jj < nr; ++jj) dst[kk * {NR} + jj] = src[jj];
        for (; jj < {NR}; ++jj) dst[kk * {NR} + jj] = 0.0f;
      }}""")
        omp_mode = kn.get("omp", "static")
        par = "" if omp_mode == "off" else "#pragma omp parallel"
        ofor_b = "" if omp_mode == "off" else "#pragma omp for schedule(static)"
        ofor_m = "" if omp_mode == "off" else ("#pragma omp for schedule(static)" if omp_mode == "static"
                                               else "#pragma omp for schedule(dynamic, 1)")
        return f"""  const int64_t kcm = std::min<int64_t>({KC}, K), ncm = std::min<int64_t>({NC}, (N + {NR - 1}) / {NR} * {NR});
  float* Bp_all = (float*)std::aligned_alloc(64, ((size_t)(kcm * ncm) * sizeof(float) + 127) / 64 * 64);
  for (int64_t bt = 0; bt < BATCH; ++bt) {{
  const float* Ab = A + bt * sA;
  const float* Bb = B + bt * sB;
  float* Cb = C + bt * sC;
  {par}
  {{
  float* Ap = (float*)std::aligned_alloc(64, ((size_t)({MC} * kcm) * sizeof(float) + 127) / 64 * 64);
  for (int64_t jc = 0; jc < N; jc += {NC}) {{
    const int64_t nc = std::min<int64_t>({NC}, N - jc);
    const int64_t npan = (nc + {NR - 1}) / {NR};
    for (int64_t pc = 0; pc < K; pc += {KC}) {{
      const int64_t kc = std::min<int64_t>({KC}, K - pc);
      const bool first = pc == 0, last = pc + kc >= K;
      {ofor_b}
      for (int64_t jp = 0; jp < npan; ++jp) {{
        const int64_t j0 = jc + jp * {NR};
        const int64_t nr = std::min<int64_t>({NR}, N - j0);
        float* dst = Bp_all + jp * {NR} * kc;
{bpack}
      }}
      {ofor_m}
      for (int64_t ic = 0; ic < M; ic += {MC}) {{
        const int64_t mc = std::min<int64_t>({MC}, M - ic);
        for (int64_t ip = 0; ip < mc; ip += {MR}) {{
          const int64_t mr = std::min<int64_t>({MR}, mc - ip);
          float* d = Ap + ip * kc;
          for (int64_t i = 0; i < mr; ++i) {{
            const float* src = Ab + (ic + ip + i) * K + pc;
            for (int64_t kk = 0; kk < kc; ++kk) d[kk * {MR} + i] = src[kk];
          }}
          for (int64_t i = mr; i < {MR}; ++i)
            for (int64_t kk = 0; kk < kc; ++kk) d[kk * {MR} + i] = 0.0f;
        }}
        for (int64_t jp = 0; jp < npan; ++jp) {{
          const int64_t j0 = jc + jp * {NR};
          const int64_t nr = std::min<int64_t>({NR}, N - j0);
          const float* Bp = Bp_all + jp * {NR} * kc;
          for (int64_t ip = 0; ip < mc; ip += {MR}) {{
            const int64_t mr = std::min<int64_t>({MR}, mc - ip);
            const float* Apn = Ap + ip * kc;
            float* Cp = Cb + (ic + ip) * N + j0;
            const int64_t ldc = N;
            const bool full = mr == {MR} && nr == {NR};
            float tmp[{MR}][{NR}];
{acc_decl}
            if (first) {{
{acc_zero}
            }} else if (full) {{
{acc_load}
            }} else {{
              for (int i = 0; i < {MR}; ++i) for (int jj = 0; jj < {NR}; ++jj) tmp[i][jj] = 0.0f;
              for (int64_t i = 0; i < mr; ++i) for (int64_t jj = 0; jj < nr; ++jj) tmp[i][jj] = Cp[i * ldc + jj];
{acc_load_tmp}
            }}
            for (int64_t kk = 0; kk < kc; ++kk) {{
{bload}
              const float* ak = Apn + kk * {MR};
              for (int i = 0; i < {MR}; ++i) {{
                const float av = ak[i];
{fma}
              }}
            }}
            if (full) {{
{st_full}
            }} else {{
{st_tmp}
              for (int64_t i = 0; i < mr; ++i) for (int64_t jj = 0; jj < nr; ++jj) Cp[i * ldc + jj] = tmp[i][jj];
            }}
          }}
        }}
        if (last) {{
          for (int64_t i = ic; i < ic + mc; ++i) {{
            {ecall('bt * M + i', 'jc', 'jc + nc')}
          }}
        }}
      }}
    }}
  }}
  std::free(Ap);
  }}
  }}
  std::free(Bp_all);
"""

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
            body = f"""  {_omp(kn, collapse=2)}
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
            gemm_body = self._gemm_packed(0, conv_ecall)
            body = f"""  const int64_t P = OH * OW, KK = CI * KH * KW;
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
        else:
            OCB = int(kn.get("conv_ocb", 4))
            body = f"""  const int64_t ncb = (CO + {OCB - 1}) / {OCB};
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
        cpp = epi_fn + f'extern "C" void stage{k}({", ".join(params)}) {{\n' + body + "}\n"
        call = [f"p{x}", f"p{w}", f"p{bias}" if bias is not None else f"p{w}", "out"] + [f"p{e}" for e in epi_ext] + \
            [str(v) for v in (NB, CI, H, Wd, CO, KH, KW, OH, OW, sh, sw, ph, pw, dh, dw, 1 if bias is not None else 0)]
        return StageCode(f"stage{k}", cpp, call)

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
            body = f"""  const int64_t CIG = CI / G, COG = CO / G;
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
        else:
            OCB = int(kn.get("conv_ocb", 4))
            if T:
                # scatter each input row into the output row it reaches: ow = iw*SW - PW + kw*DW
                acc_rows = f"""              const int64_t td = od + PD - kd * DD;
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
            else:
                acc_rows = f"""              const int64_t id = od * SD - PD + kd * DD;
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
            body = f"""  const int64_t CIG = CI / G, COG = CO / G;
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
            gemm = self._gemm_packed(0, ecall)
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
        gemm = self._gemm_packed(0, lambda r, j0, j1: "")
        epi_all = epi_rows.replace("(ROW)", "co").replace("J0", "0").replace("J1", "OD * OH * OW")
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
        body = f"""  {_omp(kn)}
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
        cpp = epi_fn + f'extern "C" void stage{k}({", ".join(params)}) {{\n' + body + "}\n"
        call = [f"p{x}", "out"] + [f"p{e}" for e in epi_ext] + [str(v) for v in (
            NB, CC, ID, IH, IW, OD, OH, OW, *a["k"], *a["s"], *a["p"], *a["d"], 1 if a["include_pad"] else 0)] + \
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
        if len(shape) == 2:  # (N, C): contiguous rows of C columns
            body = self._batchnorm_rows(kn, self.epi_call(k, st, epi_ptrs, "n", "0", "CC", fnames[:-1] + ["FN"]))
        else:  # (N, C, ...): per channel, N contiguous planes of rows of the last dim
            rows = _prod(frame[2:-1])
            ecall = self.epi_call(k, st, epi_ptrs, f"(n * CC + c) * {rows} + h", "0", "FN", fnames[:-1] + ["FN"])
            body = self._batchnorm_planes(kn, ecall, rows)
        cpp = epi_fn + f'extern "C" void stage{k}({", ".join(params)}) {{\n' + body + "}\n"
        call = [f"p{x}", f"p{w}", f"p{b}", f"p{rm}", f"p{rv}", "out"] + [f"p{e}" for e in epi_ext] + \
            [str(NB), str(C), str(HW), repr(float(a["eps"])), "1" if a["affine"] else "0",
             "1" if a["batch_stats"] else "0"] + [str(d) for d in frame]
        return StageCode(f"stage{k}", cpp, call)

    @staticmethod
    def _batchnorm_planes(kn: dict[str, Any], ecall: str, inner_rows: int) -> str:
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
        return f"""  {_omp(kn)}
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
    def _batchnorm_rows(kn: dict[str, Any], ecall: str) -> str:
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


# ----------------------------------------------------------------------------------- candidate

def render_candidate(plan: Plan, knobs: dict[str, Any], header: str) -> str:
    """The full candidate file: C++ source, ``load_cpp``, ``ModelNew``."""
    g = plan.graph
    cg = Codegen(plan, knobs)
    codes = [cg.stage(k, st) for k, st in enumerate(plan.stages)]
    # polynomial math only changes code that evaluates transcendental functions on vectors
    transcendental = {"exp", "log", "tanh", "erf", "sigmoid", "silu", "gelu", "gelu_tanh", "elu", "softplus",
                      "log1p", "mish", "selu", "logsigmoid"}
    uses = any(g.nodes[i].op == "unary" and g.nodes[i].attrs["fn"] in transcendental
               for st in plan.stages for i in st.nodes)
    fast = knobs.get("math", "libm") == "fast" and int(knobs.get("vec", 1)) > 1 and uses
    body = "\n".join(c.cpp for c in codes)
    cpp = prelude(fast, uses=body) + "\n" + body  # only the helpers the kernel uses: a trace a prompt can show whole
    # forward
    lines: list[str] = []
    var: dict[int, str] = {}
    def add_aliases(src_id: int) -> None:
        for al, src in plan.aliases.items():
            if src == src_id and al not in var:
                var[al] = f"t{al}"
                lines.append(f"t{al} = {var[src_id]}.view({tuple(g.nodes[al].shape)!r})")

    for n in g.nodes:
        if n.op == "input":
            var[n.id] = n.attrs["name"]
            nm = n.attrs["name"]
            lines.append(f"if tuple({nm}.shape) != {tuple(n.shape)!r}:")
            lines.append(f"    raise ValueError('this kernel was generated for {nm} of shape {tuple(n.shape)}, got ' + str(tuple({nm}.shape)))")
            lines.append(f"{nm} = {nm}.contiguous()")
            add_aliases(n.id)
    # parameters a stage reads, directly or through a view (a reshaped weight)
    read = {plan.aliases.get(a, a) for st in plan.stages for i in ([st.anchor] if st.anchor is not None else []) + st.nodes
            for a in g.nodes[i].args if isinstance(a, int)}
    used_params = {a for a in read if g.nodes[a].op == "param"}
    for pid in sorted(used_params):
        n = g.nodes[pid]
        var[pid] = f"w{pid}"
        lines.append(f"w{pid} = self.{n.attrs['path']}.contiguous()")
        add_aliases(pid)
    for k, (st, code) in enumerate(zip(plan.stages, codes)):
        shape = g.nodes[st.out].shape
        name = f"t{st.out}"
        dtype = "torch.int64" if g.nodes[st.out].dtype == "i64" else "torch.float32"
        lines.append(f"{name} = torch.empty({tuple(shape)!r}, dtype={dtype})")
        args = []
        for a in code.args:
            if a == "out":
                args.append(name)
            elif a.startswith("p") and a[1:].isdigit():
                src = var.get(int(a[1:]))
                if src is None:
                    raise AnalysisError(f"stage {k} reads node {a[1:]} before it is computed")
                args.append(src)
            else:
                args.append(a)
        lines.append(f"lib.{code.name}({', '.join(args)})")
        var[st.out] = name
        add_aliases(st.out)
    out = g.output
    if out not in var:
        raise AnalysisError("the output is not computed by any stage")
    lines.append(f"return {var[out]}")
    init = g.init_source or "def __init__(self):\n    super().__init__()"
    init = "\n".join("    " + ln for ln in init.splitlines())
    args = ", ".join(g.input_names)
    fwd = "\n".join("        " + ln for ln in lines)
    return f'''"""{header}"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
{cpp}
"""

lib = load_cpp(CPP_SOURCE)


class ModelNew(nn.Module):
{init}

    def forward(self, {args}):
{fwd}
'''
