"""What every stage writer of the cpu back end shares: the plan and knobs, pointer types, the epilogue (an
elementwise chain fused after an anchor, as a row program over segments of its output rows), OpenMP pragmas.
Each family module (:mod:`.families` names them) subclasses :class:`StageWriter` as its ``Writer``.
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.cpu.rowprog import RowProgram
from evokernel.generators.template.front.graph import AnalysisError
from evokernel.generators.template.front.lower import Plan, Stage


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


class StageWriter:
    """Writes one stage of its family: ``render(k, stage)`` -> :class:`StageCode` (the family module's ``Writer``)."""

    def __init__(self, plan: Plan, knobs: dict[str, Any]):
        self.plan, self.g, self.knobs = plan, plan.graph, knobs

    def render(self, k: int, st: Stage) -> StageCode:
        raise NotImplementedError

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
        if kind != "J" or prog.skips:
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
