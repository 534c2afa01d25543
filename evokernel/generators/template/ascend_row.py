"""The ``ascend_row`` family's kernel (``RowKernel``): rows split over the blocks, a tile of whole rows (or one
row in chunks), reductions per row in streaming passes or resident in UB, count-form or mask/repeat-form
instructions. ``Consts`` carries the UB bytes per kind of buffer to the host tiling (:mod:`.ascend_host`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evokernel.generators.template.analysis import AnalysisError, Const
from evokernel.generators.template.ascend_op import AscendOp, Ext, flit
from evokernel.generators.template.ascend_vecops import (BIN_OP, COMBINE_OP, IDENTITY, REDUCE_OP, SYNC_VS, UNARY_SCRATCH,
                                                         Pool, Scalar, _indent, binary_code, scalar_binary, unary_code)

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


class RowKernel:
    """Emits the kernel class of the ``ascend_row`` family for one schedule."""

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

    # ---------------------------------------------------------------------------- kernel
    def _scalar_loads(self, S_ext: list[Ext]) -> list[str]:
        T = self.T
        init: list[str] = []
        if S_ext:
            init.append("pipe.InitBuffer(q_scalar, 1, 32);")
        for e in S_ext:
            init += ["{",
                     f"    LocalTensor<{T}> sl = q_scalar.AllocTensor<{T}>();",
                     f"    DataCopyPad(sl, gm_{e.name}, DataCopyExtParams(1, sizeof({T}), 0, 0, 0), "
                     f"DataCopyPadExtParams<{T}>(true, 0, {self.A - 1}, 0));",
                     "    q_scalar.EnQue(sl);",
                     f"    sl = q_scalar.DeQue<{T}>();",
                     f"    s_{e.name} = static_cast<float>(sl.GetValue(0));",
                     "    q_scalar.FreeTensor(sl);",
                     "}"]
        return init

    def render(self, cls: str, tiling_cls: str) -> tuple[str, Consts]:
        op, T, A = self.op, self.T, self.A
        exts = op.exts
        J_ext = [e for e in exts if e.role == "J"]
        C_ext = [e for e in exts if e.role == "C"]
        R_ext = [e for e in exts if e.role == "R"]
        S_ext = [e for e in exts if e.role == "S"]
        out_j = op.out_kind == "J"
        tile_prelude = [f"uint32_t ccp = {self.pad('cc')};", "bool flat = (kk == 1 || cc == ccp);",
                        "uint32_t nflat = (kk - 1) * ccp + cc;", "uint8_t rs = static_cast<uint8_t>(ccp / 8);",
                        "(void)flat; (void)nflat; (void)rs;"]
        helpers: list[str] = []
        tile: list[str] = []
        copyins: dict[tuple[str, ...], str] = {}

        def copyin(es: list[Ext]) -> str:
            key = tuple(e.name for e in es)
            if key in copyins:
                return copyins[key]
            name = f"CopyIn{len(copyins)}"
            copyins[key] = name
            body = [f"uint32_t ccp = {self.pad('cc')};",
                    "bool dense = (ccp == cc) && (kk == 1 || cc == N);",
                    f"DataCopyPadExtParams<{T}> noPad(false, 0, 0, 0);", "(void)dense;"]
            for e in es:
                v = self.io_var(e)
                body.append(f"LocalTensor<{T}> {v} = q_{e.name}.AllocTensor<{T}>();")
                if e.role == "J":
                    src = f"gm_{e.name}[static_cast<uint64_t>(row0) * N + c0]"
                    body += ["if (dense) {",
                             f"    DataCopy({v}, {src}, kk * cc);",
                             "} else {",
                             f"    DataCopyExtParams p(static_cast<uint16_t>(kk), static_cast<uint32_t>(cc * sizeof({T})), "
                             f"static_cast<uint32_t>((N - cc) * sizeof({T})), 0, 0);",
                             f"    DataCopyPad({v}, {src}, p, noPad);",
                             "}"]
                else:
                    src = f"gm_{e.name}[c0]"
                    body += ["if (ccp == cc) {",
                             f"    DataCopy({v}, {src}, cc);",
                             "} else {",
                             f"    DataCopyExtParams p(1, static_cast<uint32_t>(cc * sizeof({T})), 0, 0, 0);",
                             f"    DataCopyPad({v}, {src}, p, noPad);",
                             "}"]
                body.append(f"q_{e.name}.EnQue({v});")
            helpers.extend([f"__aicore__ inline void {name}(uint32_t row0, uint32_t kk, uint32_t c0, uint32_t cc)",
                            "{"] + _indent(body, 4) + ["}"])
            return name

        def deque(es: list[Ext]) -> list[str]:
            return [f"LocalTensor<{T}> {self.io_var(e)} = q_{e.name}.DeQue<{T}>();" for e in es] + self.casts_in(es)

        def free(es: list[Ext]) -> list[str]:
            return [f"q_{e.name}.FreeTensor({self.io_var(e)});" for e in es]

        # per tile: the per-row inputs
        tile.append(f"uint32_t kp = {self.pad('kk')};")
        for e in R_ext:
            tile += [f"LocalTensor<{T}> lr_{e.name} = q_{e.name}.AllocTensor<{T}>();",
                     f"DataCopyPad(lr_{e.name}, gm_{e.name}[row0], DataCopyExtParams(1, static_cast<uint32_t>(kk * "
                     f"sizeof({T})), 0, 0, 0), DataCopyPadExtParams<{T}>(true, 0, static_cast<uint8_t>(kp - kk), 0));",
                     f"q_{e.name}.EnQue(lr_{e.name});",
                     f"lr_{e.name} = q_{e.name}.DeQue<{T}>();"]
            if self.half:
                tile.append(f"Cast(rs{self.slot_of[e.nid]}, lr_{e.name}, RoundMode::CAST_NONE, static_cast<int32_t>(kp));")
            tile += self.brcb(e.nid)
        out_alloc = [f"LocalTensor<{T}> o = q_out.AllocTensor<{T}>();"]
        if self.resident:
            loads = self.loads_for(list(self.nodes))
            ci = copyin(loads)
            tile.append(f"{ci}(row0, kk, 0, N);")
            body = ["uint32_t c0 = 0, cc = N;", "(void)c0;"] + tile_prelude + deque(loads)
            if out_j:
                body += out_alloc
            body += self.block(list(self.nodes), op.out if out_j else None, True)
            if out_j:
                body += self.cast_out() + ["q_out.EnQue(o);"]
            body += free(loads)
            tile += ["{"] + _indent(body, 4) + ["}"]
            if out_j:
                tile.append("CopyOut(row0, kk, 0, N);")
        else:
            for i in self.nodes:
                n = self.g.nodes[i]
                if self.kinds[i] not in ("R", "G"):
                    continue
                if n.op == "reduce":
                    items = self.deps(n.args[0]) + [i]
                    loads = self.loads_for(items)
                    ci = copyin(loads)
                    fn = n.attrs["fn"]
                    tile.append(f"Duplicate(rs{self.slot_of[i]}, {IDENTITY[fn]}, static_cast<int32_t>(kp));")
                    body = tile_prelude + deque(loads) + self.block(items, None, False) + free(loads)
                    tile += ["for (uint32_t c0 = 0; c0 < N; c0 += chunk) {",
                             "    uint32_t cc = N - c0 < chunk ? N - c0 : chunk;",
                             f"    {ci}(row0, kk, c0, cc);",
                             "    {"] + _indent(body, 8) + ["    }", "}"]
                    tile += self.finalize(i)
                else:
                    tile += self.block([i], None, True)
            if out_j:
                items = self.deps(op.out)
                loads = self.loads_for(items)
                ci = copyin(loads)
                body = tile_prelude + deque(loads) + out_alloc
                body += self.block(items, op.out, False) + self.cast_out() + ["q_out.EnQue(o);"] + free(loads)
                tile += ["for (uint32_t c0 = 0; c0 < N; c0 += chunk) {",
                         "    uint32_t cc = N - c0 < chunk ? N - c0 : chunk;",
                         f"    {ci}(row0, kk, c0, cc);",
                         "    {"] + _indent(body, 8) + ["    }",
                                                       "    CopyOut(row0, kk, c0, cc);", "}"]
        out_g = op.out_kind == "G"
        if not out_j and not out_g:
            src = f"rs{self.slot_of[op.out]}"
            conv = (f"Cast(o, {src}, RoundMode::CAST_RINT, static_cast<int32_t>(kp));" if self.half else
                    f"Muls(o, {src}, 1.0f, static_cast<int32_t>(kp));")
            tile += ["{", f"    LocalTensor<{T}> o = q_out.AllocTensor<{T}>();", f"    {conv}",
                     "    q_out.EnQue(o);", "}", "CopyOut(row0, kk, 0, N);"]
        for e in R_ext:
            tile.append(f"q_{e.name}.FreeTensor(lr_{e.name});")

        if out_j:
            co = [f"LocalTensor<{T}> o = q_out.DeQue<{T}>();",
                  f"uint32_t ccp = {self.pad('cc')};",
                  "uint64_t at = static_cast<uint64_t>(row0) * N + c0;",
                  "if ((ccp == cc) && (kk == 1 || cc == N)) {",
                  "    DataCopy(gm_out[at], o, kk * cc);",
                  "} else {",
                  f"    DataCopyExtParams p(static_cast<uint16_t>(kk), static_cast<uint32_t>(cc * sizeof({T})), 0, "
                  f"static_cast<uint32_t>((N - cc) * sizeof({T})), 0);",
                  "    DataCopyPad(gm_out[at], o, p);",
                  "}",
                  "q_out.FreeTensor(o);"]
        elif not out_g:
            co = [f"LocalTensor<{T}> o = q_out.DeQue<{T}>();",
                  "(void)c0; (void)cc;",
                  f"DataCopyPad(gm_out[row0], o, DataCopyExtParams(1, static_cast<uint32_t>(kk * sizeof({T})), 0, 0, 0));",
                  "q_out.FreeTensor(o);"]
        if not out_g:
            helpers += ["__aicore__ inline void CopyOut(uint32_t row0, uint32_t kk, uint32_t c0, uint32_t cc)",
                        "{"] + _indent(co, 4) + ["}"]

        # UB budget (bytes per element of each buffer kind)
        io, bn = self.io, self.bn
        count_red = bool(op.reduces) and not self.repeat
        c = Consts(align=A)
        c.row_bytes = bn * io * (len(J_ext) + (1 if out_j else 0)) + 4 * self.jpool.size
        c.col_bytes = bn * io * len(C_ext) + 4 * self.cpool.size
        c.slot_bytes = 4 * (self.n_slots + 1) + bn * io * (len(R_ext) + (1 if op.out_kind == "R" else 0))
        if out_g:
            c.slot_bytes += 4  # gwork
        if self.half:
            c.row_bytes += 4 * (len(J_ext) + (1 if out_j else 0))
            c.col_bytes += 4 * len(C_ext)
        c.bcast_bytes = 4 * (len(self.bc_of) + (1 if count_red else 0))
        c.fold_bytes = 4 if (op.reduces and self.repeat) else 0
        c.scalar_bytes = (32 if S_ext else 0) + (64 if out_g else 0)
        c.work = count_red
        c.vecin_buffers = bn * (len(J_ext) + len(C_ext) + len(R_ext)) + (1 if S_ext else 0)

        args = ", ".join(f"GM_ADDR {e.name}" for e in exts) + ", GM_ADDR out"
        init = ["uint32_t blockIdx = GetBlockIdx();",
                "N = t.cols;",
                "tileRows = t.tileRows;",
                "chunk = t.chunk;",
                "kPad = t.kPad;",
                "cPad = t.cPad;",
                "myRows = t.rowsPerBlock + (blockIdx < t.bigBlocks ? 1 : 0);",
                "uint64_t firstRow = static_cast<uint64_t>(t.rowsPerBlock) * blockIdx + "
                "(blockIdx < t.bigBlocks ? blockIdx : t.bigBlocks);",
                "invN = 1.0f / static_cast<float>(N);"]
        for e in exts:
            if e.role == "J":
                init.append(f"gm_{e.name}.SetGlobalBuffer((__gm__ {T}*){e.name} + firstRow * N, "
                            "static_cast<uint64_t>(myRows) * N);")
            elif e.role == "C":
                init.append(f"gm_{e.name}.SetGlobalBuffer((__gm__ {T}*){e.name}, N);")
            elif e.role == "R":
                init.append(f"gm_{e.name}.SetGlobalBuffer((__gm__ {T}*){e.name} + firstRow, myRows);")
            else:
                init.append(f"gm_{e.name}.SetGlobalBuffer((__gm__ {T}*){e.name}, 1);")
        if out_j:
            init.append(f"gm_out.SetGlobalBuffer((__gm__ {T}*)out + firstRow * N, static_cast<uint64_t>(myRows) * N);")
        elif out_g:
            init += [f"gm_out.SetGlobalBuffer((__gm__ {T}*)out, 1);",
                     "invTotal = 1.0f / (static_cast<float>(t.rows) * static_cast<float>(N));"]
        else:
            init.append(f"gm_out.SetGlobalBuffer((__gm__ {T}*)out + firstRow, myRows);")
        tile_elems = "tileRows * cPad"
        for e in J_ext:
            init.append(f"pipe.InitBuffer(q_{e.name}, BUFFER_NUM, {tile_elems} * sizeof({T}));")
        for e in C_ext:
            init.append(f"pipe.InitBuffer(q_{e.name}, BUFFER_NUM, cPad * sizeof({T}));")
        for e in R_ext:
            init.append(f"pipe.InitBuffer(q_{e.name}, BUFFER_NUM, kPad * sizeof({T}));")
        if not out_g:
            init.append(f"pipe.InitBuffer(q_out, BUFFER_NUM, {tile_elems if out_j else 'kPad'} * sizeof({T}));")
        queues = J_ext + C_ext + R_ext
        members = ([f"TQue<QuePosition::VECIN, BUFFER_NUM> {', '.join('q_' + e.name for e in queues)};"] if queues else [])
        if not out_g:
            members.append("TQue<QuePosition::VECOUT, BUFFER_NUM> q_out;")
        if S_ext:
            members.append("TQue<QuePosition::VECIN, 1> q_scalar;")
        tbufs: list[str] = []
        locals_: list[str] = []
        get: list[str] = []

        def tbuf(name: str, size: str, var: str | None = None) -> None:
            init.append(f"pipe.InitBuffer(b_{name}, {size});")
            tbufs.append(f"b_{name}")
            if var:
                get.append(f"{var} = b_{name}.Get<float>();")
                locals_.append(var)

        for j in range(self.jpool.size):
            tbuf(f"t{j}", f"{tile_elems} * sizeof(float)", f"t{j}")
        for j in range(self.cpool.size):
            tbuf(f"cb{j}", "cPad * sizeof(float)", f"cb{j}")
        if self.half:
            for e in J_ext:
                tbuf(f"f_{e.name}", f"{tile_elems} * sizeof(float)", f"f_{e.name}")
            for e in C_ext:
                tbuf(f"f_{e.name}", "cPad * sizeof(float)", f"f_{e.name}")
            if out_j:
                tbuf("fo", f"{tile_elems} * sizeof(float)", "fo")
        tbuf("slots", f"{self.n_slots + 1} * kPad * sizeof(float)")
        get.append("LocalTensor<float> slots = b_slots.Get<float>();")
        for j in range(self.n_slots):
            get.append(f"rs{j} = slots[{j} * kPad];")
            locals_.append(f"rs{j}")
        get.append(f"rpart = slots[{self.n_slots} * kPad];")
        locals_.append("rpart")
        if self.bc_of:
            tbuf("bcast", f"{len(self.bc_of)} * 8 * kPad * sizeof(float)")
            get.append("LocalTensor<float> bcast = b_bcast.Get<float>();")
            for j in range(len(self.bc_of)):
                get.append(f"bc{j} = bcast[{j} * 8 * kPad];")
                locals_.append(f"bc{j}")
        if count_red:
            tbuf("blk", "8 * kPad * sizeof(float)", "blk")
            tbuf("work", "((cPad + 63) / 64 + 7) / 8 * 8 * sizeof(float)", "work")
        if c.fold_bytes:
            tbuf("fold", "64 * tileRows * sizeof(float)", "fold")
        if out_g:
            tbuf("gsum", "(16 + kPad) * sizeof(float)")
            get += ["LocalTensor<float> gsum = b_gsum.Get<float>();", "gacc = gsum;", "gpart = gsum[8];",
                    "gwork = gsum[16];", "Duplicate(gacc, 0.0f, 8);"]
            locals_ += ["gacc", "gpart", "gwork"]
        init += get + self._scalar_loads(S_ext)
        process = ["for (uint32_t row0 = 0; row0 < myRows; row0 += tileRows) {",
                   "    uint32_t kk = myRows - row0 < tileRows ? myRows - row0 : tileRows;",
                   "    Tile(row0, kk);",
                   "}"]
        if out_g:  # this block's share of the total: one atomic add into the zero-filled output
            if self.g.nodes[op.out].attrs["fn"] == "mean":
                process.append("Muls(gacc, gacc, invTotal, 1);")
            process += ["{",
                        "    event_t evVM = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_MTE3));",
                        "    SetFlag<HardEvent::V_MTE3>(evVM);",
                        "    WaitFlag<HardEvent::V_MTE3>(evVM);",
                        "}",
                        "SetAtomicAdd<float>();",
                        "DataCopyPad(gm_out, gacc, DataCopyExtParams(1, sizeof(float), 0, 0, 0));",
                        "SetAtomicNone();"]
        gms = ", ".join(f"gm_{e.name}" for e in exts) + ", gm_out"
        scal = "".join(f", s_{e.name} = 0.0f" for e in S_ext)
        cls_lines = [
            f"class {cls} {{",
            "public:",
            f"    __aicore__ inline {cls}() {{}}",
            f"    __aicore__ inline void Init({args}, const {tiling_cls}& t)",
            "    {"] + _indent(init, 8) + [
            "    }",
            "    __aicore__ inline void Process()",
            "    {"] + _indent(process, 8) + [
            "    }",
            "",
            "private:",
            "    __aicore__ inline void Tile(uint32_t row0, uint32_t kk)",
            "    {"] + _indent(tile, 8) + [
            "    }"] + _indent(helpers, 4) + [
            "",
            "    TPipe pipe;"] + _indent(members, 4) + [
            f"    TBuf<TPosition::VECCALC> {', '.join(tbufs)};",
            f"    GlobalTensor<{T}> {gms};",
            f"    LocalTensor<float> {', '.join(locals_)};",
            "    uint32_t N = 0, tileRows = 0, chunk = 0, kPad = 0, cPad = 0, myRows = 0;",
            f"    float invN = 0.0f, invTotal = 0.0f{scal};",
            "};"]
        return "\n".join(cls_lines), c
