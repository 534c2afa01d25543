"""The computing part of the vector cores' row program (:class:`RowCompute`, the base of
:class:`~.row_kernel.RowKernel`): UB slots and buffer pools for the stage's values, the phases of a tile (which
nodes a reduction or the output needs, which inputs they read), and the instructions of each node in count form
or mask/repeat form. ``Consts`` carries the UB bytes per kind of buffer to the host tiling (:mod:`.row_host`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evokernel.generators.template.ascend.names import flit
from evokernel.generators.template.ascend.rowop import AscendOp, Ext
from evokernel.generators.template.ascend.vecops import (
    BIN_OP,
    COMBINE_OP,
    IDENTITY,
    REDUCE_OP,
    SYNC_VS,
    UNARY_SCRATCH,
    Pool,
    Scalar,
    _indent,
    binary_code,
    scalar_binary,
    unary_code,
)
from evokernel.generators.template.front.graph import AnalysisError, Const


@dataclass
class Consts:
    """What the host needs to size the tiles (mirrored by :func:`geometry`): UB bytes per element of
    each kind of buffer."""

    row_bytes: int = 0  # per element of a tile (tileRows x cPad)
    col_bytes: int = 0  # per element of a chunk row (cPad)
    slot_bytes: int = 0  # per row slot (kPad)
    bcast_bytes: int = 0  # per element of 8 kPad
    fold_bytes: int = 0  # per element of 64 tileRows
    scalar_bytes: int = 0  # fixed
    work: bool = False  # the ReduceX work tensor
    align: int = 8  # elements per 32 bytes of the IO dtype (8 float, 16 half)
    vecin_buffers: int = 0  # buffers on the VECIN position (at most 8)


class RowCompute:
    """The row program's values and instructions for one schedule (the kernel class: :class:`~.row_kernel.RowKernel`)."""

    def __init__(self, op: AscendOp, knobs: dict[str, Any]):
        self.op, self.g = op, op.graph
        self.bn = int(knobs.get("buffer_num", 1))
        self.repeat = knobs.get("vec_form", "count") == "repeat"
        # without reductions there is one pass anyway: the streaming loop (chunks when rows are long)
        self.resident = knobs.get("row_mode", "stream") == "resident" and bool(op.reduces)
        self.kinds = op.kinds
        self.nodes = op.nodes
        self.ext_by_nid = {e.nid: e for e in op.exts}
        users: dict[int, list[int]] = {i: [] for i in list(self.nodes) + [e.nid for e in op.exts]}
        for i in self.nodes:
            for a in self.g.nodes[i].args:
                if isinstance(a, int) and a in users:
                    users[a].append(i)
        self.users = users
        # R slots: one per R node (no reuse), scratch slots after them
        self.slot_of: dict[int, int] = {}
        for i in self.nodes:
            if self.kinds[i] in ("R", "G"):
                self.slot_of[i] = len(self.slot_of)
        r_scratch = 0
        for i in self.nodes:
            n = self.g.nodes[i]
            if self.kinds[i] == "R" and n.op == "unary":
                r_scratch = max(r_scratch, UNARY_SCRATCH.get(n.attrs["fn"], 0))
        self.r_scratch = [len(self.slot_of) + k for k in range(r_scratch)]
        self.n_slots = len(self.slot_of) + r_scratch
        # Brcb buffers (repeat form): R values read by J nodes
        self.bc_of: dict[int, int] = {}
        if self.repeat:
            for v in [e.nid for e in op.exts if e.role == "R"] + [i for i in self.nodes if self.kinds[i] == "R"]:
                if any(self.kinds[u] == "J" for u in users[v]):
                    self.bc_of[v] = len(self.bc_of)
        self.jpool, self.cpool = Pool(), Pool()
        self.flat_only = False
        self.half = bool(getattr(self.g, "half", False))
        self.T = "half" if self.half else "float"  # the dtype in GM and in the queues
        self.A = 16 if self.half else 8  # elements per 32-byte block of that dtype
        self.io = 2 if self.half else 4
        self.out_compute = "fo" if self.half else "o"  # where the output is computed (float)
        if self.half:  # float copies of the per-row inputs
            for e in op.exts:
                if e.role == "R":
                    self.slot_of[e.nid] = self.n_slots
                    self.n_slots += 1

    # ------------------------------------------------------------------------------ naming
    def ext_var(self, e: Ext) -> str:
        """The float tensor computations read for an input (its queue tensor, or its float copy)."""
        return f"f_{e.name}" if self.half else f"l_{e.name}"

    def io_var(self, e: Ext) -> str:
        return f"l_{e.name}"

    def pad(self, x: str) -> str:
        return f"({x} + {self.A - 1}) / {self.A} * {self.A}"

    def casts_in(self, es: list[Ext]) -> list[str]:
        """half: convert freshly dequeued J/C inputs to float."""
        if not self.half:
            return []
        out: list[str] = []
        for e in es:
            if e.role == "J":
                out += self._flat_or_rows([f"Cast(f_{e.name}, l_{e.name}, RoundMode::CAST_NONE, nflat);"],
                                          [f"Cast(f_{e.name}[r * ccp], l_{e.name}[r * ccp], RoundMode::CAST_NONE, cc);"])
            elif e.role == "C":
                out.append(f"Cast(f_{e.name}, l_{e.name}, RoundMode::CAST_NONE, cc);")
        return out

    def cast_out(self) -> list[str]:
        if not self.half:
            return []
        return self._flat_or_rows(["Cast(o, fo, RoundMode::CAST_RINT, nflat);"],
                                  ["Cast(o[r * ccp], fo[r * ccp], RoundMode::CAST_RINT, cc);"])

    def scalar_of(self, a: Any, vals: dict[int, Any]) -> Scalar | None:
        if isinstance(a, Const):
            return Scalar(flit(a.value), float(a.value))
        v = vals.get(a)
        return v if isinstance(v, Scalar) else None

    # ---------------------------------------------------------------------------- phases
    def deps(self, target: int) -> list[int]:
        """J and C nodes of the stage needed to compute ``target`` (R values are available)."""
        need: set[int] = set()
        stack = [target]
        while stack:
            x = stack.pop()
            if x in need or x not in self.kinds or x in self.ext_by_nid:
                continue
            if self.kinds[x] not in ("J", "C") and x != target:
                continue
            if self.kinds[x] == "S":
                continue
            need.add(x)
            stack.extend(a for a in self.g.nodes[x].args if isinstance(a, int))
        return [i for i in self.nodes if i in need and self.kinds[i] in ("J", "C")]

    def loads_for(self, items: list[int]) -> list[Ext]:
        """J and C inputs read by ``items`` (node ids; a reduce reads its operand)."""
        want: list[int] = []
        for i in items:
            for a in self.g.nodes[i].args:
                if isinstance(a, int) and a in self.ext_by_nid and self.ext_by_nid[a].role in ("J", "C") and a not in want:
                    want.append(a)
        return [e for e in self.op.exts if e.nid in want]

    # ------------------------------------------------------------------------- compute block
    def block(self, items: list[int], out_node: int | None, single_chunk: bool) -> list[str]:
        """Code computing ``items`` (nodes in order) on the current chunk. J/C nodes land in pool
        buffers (``out_node`` in the output tensor ``o``), reductions in their R slots; R nodes other
        than reductions are computed here only when listed (resident mode)."""
        g = self.g
        lines: list[str] = []
        vals: dict[int, Any] = {}
        for e in self.op.exts:
            if e.role in ("J", "C"):
                vals[e.nid] = self.ext_var(e)
            elif e.role == "R":
                vals[e.nid] = f"rs{self.slot_of[e.nid]}" if self.half else f"lr_{e.name}"
            else:
                vals[e.nid] = Scalar(f"s_{e.name}")
        for i in self.nodes:
            if self.kinds[i] in ("R", "G"):
                vals[i] = f"rs{self.slot_of[i]}"
            elif self.kinds[i] == "S":
                n = g.nodes[i]
                a, b = (self.scalar_of(x, vals) for x in n.args)
                assert a is not None and b is not None
                vals[i] = scalar_binary(n.attrs["fn"], a, b)
        # last use inside this block
        last: dict[int, int] = {}
        for pos, i in enumerate(items):
            for a in g.nodes[i].args:
                if isinstance(a, int):
                    last[a] = pos
        owned: dict[int, tuple[str, int]] = {}  # node -> (pool kind, index)
        for pos, i in enumerate(items):
            n = g.nodes[i]
            k = self.kinds[i]
            if n.op == "reduce":
                lines += self.reduce_code(i, vals[n.args[0]], single_chunk)
            elif k == "R":
                lines += self.r_node(i, vals)
            else:
                if i == out_node:
                    vals[i] = self.out_compute
                else:
                    pool = self.jpool if k == "J" else self.cpool
                    idx = pool.take()
                    owned[i] = (k, idx)
                    vals[i] = f"t{idx}" if k == "J" else f"cb{idx}"
                lines += self.jc_node(i, vals)
            for a in n.args:
                if isinstance(a, int) and last.get(a) == pos and a in owned:
                    kind, idx = owned.pop(a)
                    (self.jpool if kind == "J" else self.cpool).give(idx)
        for kind, idx in owned.values():
            (self.jpool if kind == "J" else self.cpool).give(idx)
        return lines

    def _scratch(self, kind: str, count: int) -> tuple[list[str], list[int]]:
        pool = self.jpool if kind == "J" else self.cpool
        idx = [pool.take() for _ in range(count)]
        return [f"t{i}" if kind == "J" else f"cb{i}" for i in idx], idx

    def jc_node(self, i: int, vals: dict[int, Any]) -> list[str]:
        g = self.g
        n = g.nodes[i]
        k = self.kinds[i]
        D = vals[i]
        if k == "C":  # one chunk row: count cc
            if n.op == "unary":
                names, idx = self._scratch("C", UNARY_SCRATCH.get(n.attrs["fn"], 0))
                code = unary_code(n.attrs["fn"], n.attrs, D, vals[n.args[0]], names, "cc")
                for j in idx:
                    self.cpool.give(j)
                return code
            A, B = (self.scalar_of(a, vals) or vals[a] for a in n.args)
            return binary_code(n.attrs["fn"], D, A, B, "cc")
        # J node
        if n.op == "unary":
            names, idx = self._scratch("J", UNARY_SCRATCH.get(n.attrs["fn"], 0))
            flat = unary_code(n.attrs["fn"], n.attrs, D, vals[n.args[0]], names, "nflat")
            row = unary_code(n.attrs["fn"], n.attrs, f"{D}[r * ccp]", f"{vals[n.args[0]]}[r * ccp]",
                             [f"{t}[r * ccp]" for t in names], "cc")
            for j in idx:
                self.jpool.give(j)
            return self._flat_or_rows(flat, row)
        fn = n.attrs["fn"]
        okinds = [("K" if isinstance(a, Const) else self.kinds[a]) for a in n.args]
        if all(ok in ("J", "S", "K") for ok in okinds):
            A, B = (self.scalar_of(a, vals) or vals[a] for a in n.args)
            flat = binary_code(fn, D, A, B, "nflat")
            row = binary_code(fn, f"{D}[r * ccp]", A if isinstance(A, Scalar) else f"{A}[r * ccp]",
                              B if isinstance(B, Scalar) else f"{B}[r * ccp]", "cc")
            return self._flat_or_rows(flat, row)
        # a broadcast operand (per-row R or per-column C)
        if self.repeat:
            return self._repeat_binary(fn, D, n.args, okinds, vals)
        ops: list[Any] = []
        reads: list[str] = []
        for a, ok in zip(n.args, okinds):
            if ok == "J":
                ops.append(f"{vals[a]}[r * ccp]")
            elif ok == "C":
                ops.append(vals[a])
            elif ok == "R":
                reads.append(f"const float sv{a} = {vals[a]}.GetValue(r);")
                ops.append(Scalar(f"sv{a}"))
            else:
                ops.append(self.scalar_of(a, vals))
        body = reads + binary_code(fn, f"{D}[r * ccp]", ops[0], ops[1], "cc")
        pre = [SYNC_VS] if reads else []
        return pre + ["for (uint32_t r = 0; r < kk; ++r) {"] + _indent(body, 4) + ["}"]

    def _flat_or_rows(self, flat: list[str], row: list[str]) -> list[str]:
        if self.flat_only:
            return flat
        return (["if (flat) {"] + _indent(flat, 4) + ["} else {", "    for (uint32_t r = 0; r < kk; ++r) {"] +
                _indent(row, 8) + ["    }", "}"])

    def _repeat_binary(self, fn: str, D: str, args: list[Any], okinds: list[str], vals: dict[int, Any]) -> list[str]:
        views, blk, rep = [], [], []
        for a, ok in zip(args, okinds):
            if ok == "J":
                views.append(f"{vals[a]}[c]")
                blk.append("1")
                rep.append("rs")
            elif ok == "C":
                views.append(f"{vals[a]}[c]")
                blk.append("1")
                rep.append("0")
            elif ok == "R":
                views.append(f"bc{self.bc_of[a]}")
                blk.append("0")
                rep.append("1")
            else:
                raise AnalysisError("a scalar operand next to a broadcast operand")
        params = f"BinaryRepeatParams(1, {blk[0]}, {blk[1]}, rs, {rep[0]}, {rep[1]})"
        return ["for (uint32_t c = 0; c < cc; c += 64) {",
                "    uint64_t m = cc - c < 64 ? cc - c : 64;",
                f"    {BIN_OP[fn]}({D}[c], {views[0]}, {views[1]}, m, static_cast<uint8_t>(kk), {params});",
                "}"]

    def r_node(self, i: int, vals: dict[int, Any]) -> list[str]:
        """An R node other than a reduction: vector ops over the kp slots."""
        n = self.g.nodes[i]
        D = vals[i]
        if n.op == "unary":
            need = UNARY_SCRATCH.get(n.attrs["fn"], 0)
            names = [f"rs{j}" for j in self.r_scratch[:need]]
            code = unary_code(n.attrs["fn"], n.attrs, D, vals[n.args[0]], names, "kp")
        else:
            A, B = (self.scalar_of(a, vals) or vals[a] for a in n.args)
            code = binary_code(n.attrs["fn"], D, A, B, "kp")
        return code + self.brcb(i)

    def brcb(self, v: int) -> list[str]:
        if v not in self.bc_of:
            return []
        src = f"rs{self.slot_of[v]}" if v in self.slot_of else f"lr_{self.ext_by_nid[v].name}"
        return [f"Brcb(bc{self.bc_of[v]}, {src}, static_cast<uint8_t>(kp / 8), BrcbRepeatParams(1, 8));"]

    def reduce_code(self, i: int, B: str, single_chunk: bool) -> list[str]:
        n = self.g.nodes[i]
        fn = n.attrs["fn"]
        T = f"rs{self.slot_of[i]}"
        code: list[str] = []
        if single_chunk:
            code.append(f"Duplicate({T}, {IDENTITY[fn]}, static_cast<int32_t>(kp));")
            code += self._reduce_into(fn, T, B)
        else:
            code += ["if (c0 == 0) {"] + _indent(self._reduce_into(fn, T, B), 4) + ["} else {"]
            code += _indent(self._reduce_into(fn, "rpart", B), 4)
            code += [f"    {COMBINE_OP[fn]}({T}, {T}, rpart, static_cast<int32_t>(kk));", "}"]
        if self.resident:  # one chunk per row: the row values are final here
            code += self.finalize(i)
        return code

    def _reduce_into(self, fn: str, T: str, B: str) -> list[str]:
        R = REDUCE_OP[fn]
        order = "" if R == "Sum" else ", ReduceOrder::ORDER_ONLY_VALUE"
        if self.repeat:
            return ["if (cc <= 64) {",
                    f"    WholeReduce{R}({T}, {B}, static_cast<int32_t>(cc), static_cast<int32_t>(kk), 1, 1, "
                    f"static_cast<int32_t>(ccp / 8){order});",
                    "} else {",
                    f"    Muls(fold, {B}, 1.0f, static_cast<uint64_t>(64), static_cast<uint8_t>(kk), "
                    "UnaryRepeatParams(1, 1, 8, rs));",
                    "    for (uint32_t c = 64; c < cc; c += 64) {",
                    "        uint64_t m = cc - c < 64 ? cc - c : 64;",
                    f"        {COMBINE_OP[fn]}(fold, fold, {B}[c], m, static_cast<uint8_t>(kk), "
                    "BinaryRepeatParams(1, 1, 1, 8, 8, rs));",
                    "    }",
                    f"    WholeReduce{R}({T}, fold, 64, static_cast<int32_t>(kk), 1, 1, 8{order});",
                    "}"]
        return ["if (kk == 1) {",
                f"    Reduce{R}({T}, {B}, work, static_cast<int32_t>(cc));",
                "} else {",
                "    for (uint32_t r = 0; r < kk; ++r) {",
                f"        Reduce{R}(blk[r * 8], {B}[r * ccp], work, static_cast<int32_t>(cc));",
                "    }",
                f"    WholeReduce{R}({T}, blk, 1, static_cast<int32_t>(kk), 1, 1, 1{order});",
                "}"]

    def finalize(self, i: int) -> list[str]:
        n = self.g.nodes[i]
        code = []
        if self.kinds[i] == "G":  # the tile's rows into the block's running total (mean: scaled at the end)
            return [f"ReduceSum(gpart, rs{self.slot_of[i]}, gwork, static_cast<int32_t>(kp));",
                    "Add(gacc, gacc, gpart, 1);"]
        if n.attrs["fn"] == "mean":
            code.append(f"Muls(rs{self.slot_of[i]}, rs{self.slot_of[i]}, invN, static_cast<int32_t>(kp));")
        return code + self.brcb(i)
