"""Batched matmul on the cube unit (``torch.bmm``, ``matmul`` of (..., M, K) by (..., K, N)): the cube
template's operator with the batch folded into the tile index.

The tiles of every batch entry are spread over the cube cores together (``batch x tilesM x tilesN`` tiles);
a tile's batch entry offsets its reads of A (``M x K`` per entry), B (``K x N``, or ``N x K`` given
transposed) and its write of C (``M x N``) in GM. The batch dims are contiguous (row-major), so any number
of them folds into one count. Bias and ReLU (the cube's bias table and the Fixpipe) apply as for a 2-D
matmul; a vector epilogue after a batched matmul is refused by name (not templated).
"""
from __future__ import annotations

from typing import Any


def _sub(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


def batch_kernel(op: Any, text: str, T: str, tiling_cls: str) -> str:
    """The 2-D cube kernel's text with a batch count in the tiling and per-tile GM offsets."""
    b_rows = "N * K" if op.trans_b else "K * N"
    a = op.exts[0].name
    b = op.exts[1].name
    text = _sub(text, f"        aGm.SetGlobalBuffer((__gm__ {T}*){a}, M * K);\n",
                f"        batch = t.batch;\n        aGm.SetGlobalBuffer((__gm__ {T}*){a}, batch * M * K);\n")
    text = _sub(text, f"        bGm.SetGlobalBuffer((__gm__ {T}*){b}, {b_rows});\n",
                f"        bGm.SetGlobalBuffer((__gm__ {T}*){b}, batch * {b_rows});\n")
    text = _sub(text, f"        cGm.SetGlobalBuffer((__gm__ {T}*)out, M * N);\n",
                f"        cGm.SetGlobalBuffer((__gm__ {T}*)out, batch * M * N);\n")
    text = _sub(text, "        for (uint32_t tile = GetBlockIdx(); tile < tilesM * tilesN; tile += GetBlockNum()) {\n"
                      "            uint32_t m0 = (tile / tilesN) * baseM;\n"
                      "            uint32_t n0 = (tile % tilesN) * baseN;\n",
                "        for (uint32_t tile = GetBlockIdx(); tile < batch * tilesM * tilesN; tile += GetBlockNum()) {\n"
                "            uint64_t entry = tile / (tilesM * tilesN);  // the batch entry of this tile\n"
                "            aOff = entry * M * K;\n"
                f"            bOff = entry * {b_rows};\n"
                "            cOff = entry * M * N;\n"
                "            uint32_t m0 = ((tile % (tilesM * tilesN)) / tilesN) * baseM;\n"
                "            uint32_t n0 = (tile % tilesN) * baseN;\n")
    text = _sub(text, "DataCopy(a1Local, aGm[m0 * K + k0], aParams);", "DataCopy(a1Local, aGm[aOff + m0 * K + k0], aParams);")
    # every copy of B (whole bands, one band at a time, the K tail) reads the entry's matrix
    assert "bGm[bOff" not in text and text.count("bGm[") >= 1
    text = text.replace("bGm[", "bGm[bOff + ")
    text = _sub(text, "Fixpipe(cGm[m0 * N + n0], c1Local, params);", "Fixpipe(cGm[cOff + m0 * N + n0], c1Local, params);")
    text = _sub(text, "    uint32_t M = 0, N = 0, K = 0, baseM = 0, baseN = 0, baseK = 0, tilesM = 0, tilesN = 0;\n",
                "    uint32_t M = 0, N = 0, K = 0, baseM = 0, baseN = 0, baseK = 0, tilesM = 0, tilesN = 0;\n"
                "    uint32_t batch = 1;\n    uint64_t aOff = 0, bOff = 0, cOff = 0;  // the current batch entry's\n")
    return text


def batch_host(op: Any, host: str, b_rows: str, b_cols: str) -> str:
    """The host's shape checks and tiling for (..., M, K) x (..., K, N)."""
    nd = len(op.out_shape)
    lead = nd - 2
    old_check = (f"    if (a.GetDimNum() != 2 || b.GetDimNum() != 2 || a.GetDim(1) != b.GetDim({b_rows})) {{\n"
                 "        return ge::GRAPH_FAILED;\n    }}\n"
                 f"    uint32_t M = a.GetDim(0), K = a.GetDim(1), N = b.GetDim({b_cols});\n").replace("{{", "{").replace("}}", "}")
    new_check = (f"    if (a.GetDimNum() != {nd} || b.GetDimNum() != {nd} || "
                 f"a.GetDim({lead + 1}) != b.GetDim({lead + int(b_rows)})) {{\n"
                 "        return ge::GRAPH_FAILED;\n    }\n"
                 "    uint32_t batch = 1;\n"
                 f"    for (uint32_t d = 0; d < {lead}; ++d) {{\n"
                 "        if (a.GetDim(d) != b.GetDim(d)) {\n            return ge::GRAPH_FAILED;  // no broadcast of batch dims\n"
                 "        }\n        batch *= a.GetDim(d);\n    }\n"
                 f"    uint32_t M = a.GetDim({lead}), K = a.GetDim({lead + 1}), N = b.GetDim({lead + int(b_cols)});\n")
    host = _sub(host, old_check, new_check)
    host = _sub(host, "    uint32_t tiles = tilesM * tilesN;\n", "    uint32_t tiles = batch * tilesM * tilesN;\n")
    host = _sub(host, "    tiling.set_tilesN(tilesN);\n", "    tiling.set_tilesN(tilesN);\n    tiling.set_batch(batch);\n")
    old_infer = ("    y->SetDimNum(2);\n    y->SetDim(0, context->GetInputShape(0)->GetDim(0));\n"
                 f"    y->SetDim(1, context->GetInputShape(1)->GetDim({b_cols}));")
    new_infer = [f"    y->SetDimNum({nd});"]
    new_infer += [f"    y->SetDim({d}, context->GetInputShape(0)->GetDim({d}));" for d in range(lead + 1)]
    new_infer.append(f"    y->SetDim({lead + 1}, context->GetInputShape(1)->GetDim({lead + int(b_cols)}));")
    return _sub(host, old_infer, "\n".join(new_infer))


def batch_alloc(op: Any, a: str, b: str, b_cols: str) -> str:
    nd = len(op.out_shape)
    dims = [f"{a}.size({d})" for d in range(nd - 1)] + [f"{b}.size({nd - 2 + int(b_cols)})"]
    return f"at::Tensor result = at::empty({{{', '.join(dims)}}}, {a}.options());"
