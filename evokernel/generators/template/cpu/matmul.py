"""What the matmul families share: the stage frame of a matmul anchor (the ``gemm`` and ``gemv`` families) and the
packed, register-blocked gemm kernel (the ``gemm`` family's ``packed`` algorithm, and the ``conv`` family's im2col
and transposed paths).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evokernel.generators.template.cpu.stage import StageCode, StageWriter
from evokernel.generators.template.front.graph import AnalysisError
from evokernel.generators.template.front.lower import Stage


def matmul_stage(w: StageWriter, k: int, st: Stage, body_of: Callable[[int, Any], str]) -> StageCode:
    """The stage function of a matmul anchor (gemm or gemv) with its fused epilogue; ``body_of(tb, ecall)`` writes
    the loops (``tb``: B given transposed; ``ecall(r, j0, j1)``: the epilogue call for a finished row segment)."""
    g = w.g
    node = g.nodes[st.anchor]  # type: ignore[index]
    a, b = node.args
    tb = 1 if node.attrs["trans_b"] else 0
    frame = node.shape
    L = len(frame) - 1
    epi_fn, epi_ext, epi_ptrs = w.epilogue(k, st, frame)
    fnames = [f"F{d}" for d in range(L)] + ["Nn"]
    sb_batch = "0" if len(g.nodes[b].shape) == 2 else "K * N"
    params = [w.ptype(a).replace(f"p{a}", "A"), w.ptype(b).replace(f"p{b}", "B"), "float* __restrict C"] + \
        [w.ptype(e) for e in epi_ext] + ["int64_t BATCH", "int64_t M", "int64_t N", "int64_t K"] + \
        [f"int64_t {f}" for f in fnames]
    head = f'extern "C" void stage{k}({", ".join(params)}) {{\n  const int64_t sA = M * K, sB = {sb_batch}, sC = M * N;\n'
    ecall = lambda r, j0, j1: w.epi_call(k, st, epi_ptrs, r, j0, j1, fnames)
    body = body_of(tb, ecall)
    cpp = epi_fn + head + body + "}\n"
    call = [f"p{a}", f"p{b}", "out"] + [f"p{e}" for e in epi_ext] + \
        [str(node.attrs["batch"]), str(node.attrs["m"]), str(node.attrs["n"]), str(node.attrs["k"])] + \
        [str(d) for d in frame]
    return StageCode(f"stage{k}", cpp, call)


def packed_gemm(kn: dict[str, Any], tb: int, ecall: Any) -> str:
    """The packed, BLIS-like gemm: panels of B (``gemm_kc`` x ``gemm_nc``) and blocks of A (``gemm_mc`` x ``gemm_kc``)
    packed, a ``gemm_mr`` x ``gemm_nr`` register tile; ``ecall`` per finished row block (the epilogue)."""
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
    return (_packed_b(KC, NC, NR, par, MC, ofor_b, bpack)
            + _packed_a(ofor_m, MC, MR, NR, acc_decl, acc_zero, acc_load, acc_load_tmp, bload, fma)
            + _packed_store(st_full, st_tmp, ecall))


def _packed_b(KC: Any, NC: Any, NR: Any, par: Any, MC: Any, ofor_b: Any, bpack: Any) -> str:
    """B packed in panels (per jc, pc), in parallel over the panels."""
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
"""


def _packed_a(ofor_m: Any, MC: Any, MR: Any, NR: Any, acc_decl: Any, acc_zero: Any, acc_load: Any, acc_load_tmp:
              Any, bload: Any, fma: Any) -> str:
    """A packed per row block, the register tile's loop over kc."""
    return f"""      {ofor_m}
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
"""


def _packed_store(st_full: Any, st_tmp: Any, ecall: Any) -> str:
    """The register tile stored back (a temporary at the edges), the epilogue per finished row block."""
    return f"""            if (full) {{
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

