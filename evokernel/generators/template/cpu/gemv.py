"""The ``gemv`` family: a matmul with N = 1 (matrix-vector), vectorised dot products with ``unroll`` accumulators,
with fused epilogues. Knobs: vec, unroll, math, omp.
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.cpu.matmul import matmul_stage
from evokernel.generators.template.cpu.rowprog import vtype
from evokernel.generators.template.cpu.stage import StageCode, StageWriter, _omp
from evokernel.generators.template.front.lower import Stage

NAME = "gemv"
KNOBS: dict[str, list[Any]] = {"omp": ["static", "dynamic", "off"], "vec": [1, 8, 16], "unroll": [1, 2, 4], "math": ["libm", "fast"]}
DEFAULTS: dict[str, Any] = {"omp": "static", "vec": 1, "unroll": 1, "math": "libm"}


class Writer(StageWriter):
    def render(self, k: int, st: Stage) -> StageCode:
        return matmul_stage(self, k, st, self._gemv)

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
