"""The ``gemm`` family: matmul, bmm, linear, ``A @ B.T``, with fused epilogues; algorithms naive, ikj (row
broadcast, B transposed once when needed) and packed (:func:`~.matmul.packed_gemm`). Knobs: gemm_algo, gemm_mr,
gemm_nr, gemm_kc, gemm_mc, gemm_nc; vec, unroll, math (the epilogue's); omp.
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.cpu.matmul import matmul_stage, packed_gemm
from evokernel.generators.template.cpu.stage import StageCode, StageWriter, _omp
from evokernel.generators.template.front.lower import Stage

NAME = "gemm"
KNOBS: dict[str, list[Any]] = {"omp": ["static", "dynamic", "off"], "gemm_algo": ["naive", "ikj", "packed"], "gemm_mr": [4, 6, 8],
                               "gemm_nr": [16, 32, 48], "gemm_kc": [128, 256, 512], "gemm_mc": [48, 96, 192],
                               "gemm_nc": [512, 1024, 2048], "vec": [1, 8, 16], "math": ["libm", "fast"],
                               "unroll": [1, 2, 4]}
DEFAULTS: dict[str, Any] = {"omp": "static", "gemm_algo": "ikj", "gemm_mr": 6, "gemm_nr": 32, "gemm_kc": 256,
                            "gemm_mc": 96, "gemm_nc": 1024, "vec": 1, "math": "libm", "unroll": 1}


class Writer(StageWriter):
    def render(self, k: int, st: Stage) -> StageCode:
        return matmul_stage(self, k, st, self.body)

    def body(self, tb: int, ecall: Any) -> str:
        algo = self.knobs.get("gemm_algo", "ikj")
        if algo == "packed":
            return packed_gemm(self.knobs, tb, ecall)
        return {"naive": self._gemm_naive, "ikj": self._gemm_ikj}[algo](tb, ecall)

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
