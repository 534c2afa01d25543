"""The vector cores' row program as a kernel class (``RowKernel``): rows split over the blocks, a tile of whole rows
(or one row in chunks), reductions per row in streaming passes or resident in UB, count-form or mask/repeat-form
instructions (:mod:`.row_compute`). The ``ascend_row`` family's kernel, the base of the ``ascend_elementwise``
one, and the row program the cube family runs after a matmul.
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.ascend.row_compute import Consts, RowCompute
from evokernel.generators.template.ascend.rowop import Ext
from evokernel.generators.template.ascend.vecops import IDENTITY, _indent


class RowKernel(RowCompute):
    """Emits the kernel class of the row program for one schedule."""

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
        exts = self.op.exts
        J_ext, C_ext, R_ext, S_ext = ([e for e in exts if e.role == r] for r in ("J", "C", "R", "S"))
        helpers: list[str] = []
        tile = self._tile(R_ext, helpers)
        c = self._consts(J_ext, C_ext, R_ext, S_ext)
        init, members, tbufs, locals_ = self._init(J_ext, C_ext, R_ext, S_ext, c)
        return self._class_text(cls, tiling_cls, init, self._process(), tile, helpers, members, tbufs, locals_,
                                S_ext), c

    def _tile(self, R_ext: list[Ext], helpers: list[str]) -> list[str]:
        """The body of ``Tile(row0, kk)``: the per-row inputs, the phases (resident, or one streaming pass per
        reduction and one for the output), a per-row output; the copy-in and copy-out helpers go to ``helpers``."""
        op, T = self.op, self.T
        out_j = op.out_kind == "J"
        copyins: dict[tuple[str, ...], str] = {}
        tile: list[str] = []
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
        if self.resident:
            tile += self._tile_resident(lambda es: self._copyin(es, copyins, helpers))
        else:
            tile += self._tile_stream(lambda es: self._copyin(es, copyins, helpers))
        out_g = op.out_kind == "G"
        if not out_j and not out_g:
            src = f"rs{self.slot_of[op.out]}"
            conv = (f"Cast(o, {src}, RoundMode::CAST_RINT, static_cast<int32_t>(kp));" if self.half else
                    f"Muls(o, {src}, 1.0f, static_cast<int32_t>(kp));")
            tile += ["{", f"    LocalTensor<{T}> o = q_out.AllocTensor<{T}>();", f"    {conv}",
                     "    q_out.EnQue(o);", "}", "CopyOut(row0, kk, 0, N);"]
        for e in R_ext:
            tile.append(f"q_{e.name}.FreeTensor(lr_{e.name});")
        helpers += self._copy_out()
        return tile

    def _prelude(self) -> list[str]:
        return [f"uint32_t ccp = {self.pad('cc')};", "bool flat = (kk == 1 || cc == ccp);",
                "uint32_t nflat = (kk - 1) * ccp + cc;", "uint8_t rs = static_cast<uint8_t>(ccp / 8);",
                "(void)flat; (void)nflat; (void)rs;"]

    def _deque(self, es: list[Ext]) -> list[str]:
        T = self.T
        return [f"LocalTensor<{T}> {self.io_var(e)} = q_{e.name}.DeQue<{T}>();" for e in es] + self.casts_in(es)

    def _free(self, es: list[Ext]) -> list[str]:
        return [f"q_{e.name}.FreeTensor({self.io_var(e)});" for e in es]

    def _copyin(self, es: list[Ext], copyins: dict[tuple[str, ...], str], helpers: list[str]) -> str:
        """The name of the copy-in helper of these inputs (written into ``helpers`` the first time)."""
        T = self.T
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


    def _tile_resident(self, copyin: Any) -> list[str]:
        """A tile of whole rows read once; every phase in UB."""
        op, T = self.op, self.T
        out_j = op.out_kind == "J"
        tile_prelude = self._prelude()
        out_alloc = [f"LocalTensor<{T}> o = q_out.AllocTensor<{T}>();"]
        deque, free = self._deque, self._free
        tile: list[str] = []
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
        return tile

    def _tile_stream(self, copyin: Any) -> list[str]:
        """One pass over the row's chunks per reduction (recomputing what it reduces), then one for the output."""
        op, T = self.op, self.T
        out_j = op.out_kind == "J"
        tile_prelude = self._prelude()
        out_alloc = [f"LocalTensor<{T}> o = q_out.AllocTensor<{T}>();"]
        deque, free = self._deque, self._free
        tile: list[str] = []
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
        return tile

    def _copy_out(self) -> list[str]:
        """The ``CopyOut`` helper: a tile of rows (J), or per-row values (R); none for a whole-tensor result."""
        op, T = self.op, self.T
        out_j, out_g = op.out_kind == "J", op.out_kind == "G"
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
        if out_g:
            return []
        return ["__aicore__ inline void CopyOut(uint32_t row0, uint32_t kk, uint32_t c0, uint32_t cc)",
                "{"] + _indent(co, 4) + ["}"]


    def _consts(self, J_ext: list[Ext], C_ext: list[Ext], R_ext: list[Ext], S_ext: list[Ext]) -> Consts:
        """The UB bytes per kind of buffer (after the tile's code: the pools' sizes are known then)."""
        op, A = self.op, self.A
        out_j, out_g = op.out_kind == "J", op.out_kind == "G"
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
        return c

    def _init(self, J_ext: list[Ext], C_ext: list[Ext], R_ext: list[Ext], S_ext: list[Ext], c: Consts
              ) -> tuple[list[str], list[str], list[str], list[str]]:
        """Init's lines, the queue members, the TBufs and the LocalTensors they hold."""
        op, T = self.op, self.T
        exts = op.exts
        out_j, out_g = op.out_kind == "J", op.out_kind == "G"
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
        return self._buffers(init, J_ext, C_ext, R_ext, S_ext, c)

    def _buffers(self, init: list[str], J_ext: list[Ext], C_ext: list[Ext], R_ext: list[Ext], S_ext: list[Ext],
                 c: Consts) -> tuple[list[str], list[str], list[str], list[str]]:
        T = self.T
        out_j, out_g = self.op.out_kind == "J", self.op.out_kind == "G"
        count_red = bool(self.op.reduces) and not self.repeat
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
        return init, members, tbufs, locals_

    def _process(self) -> list[str]:
        op = self.op
        out_g = op.out_kind == "G"
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
        return process

    def _class_text(self, cls: str, tiling_cls: str, init: list[str], process: list[str], tile: list[str],
                    helpers: list[str], members: list[str], tbufs: list[str], locals_: list[str],
                    S_ext: list[Ext]) -> str:
        exts, T = self.op.exts, self.T
        args = ", ".join(f"GM_ADDR {e.name}" for e in exts) + ", GM_ADDR out"
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
        return "\n".join(cls_lines)
