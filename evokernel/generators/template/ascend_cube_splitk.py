"""Split-K for the cube template (the ``split_k`` knob): K cut into ``split_k`` ranges of whole ``base_k``
steps, each a tile of its own, so a matmul with few output tiles and a long K (33_matmul_large_k: 144 x 160
from K = 2048) keeps more cube cores busy.

Each (output tile, K range) accumulates its range in L0C and adds it into C in GM through the Fixpipe with
``SetAtomicAdd`` (the host's binding allocates C zero-filled); the bias enters with the first range only.
Only for float32 cube-only kernels without ReLU (a ReLU of partial sums is not the ReLU of the sum), without
a vector epilogue and without a batch. Not for float16: atomic adds of half-rounded partial sums round once
more per range, and the verifier refuses that on npu_l1/33 (its heavy-inputs trial: 3 of 23040 elements off
by more than 1e-2); that would need float partial sums in a workspace and a second pass, not written.
"""
from __future__ import annotations

from typing import Any


def allowed(op: Any) -> bool:
    return not op.half and not op.mix and not op.relu and op.batch == 1


def k_chunk(K: int, base_k: int, split: int) -> tuple[int, int]:
    """(elements of K per range, ranges actually used): whole base_k steps, no empty range."""
    steps = -(-K // base_k)
    chunk = -(-steps // split) * base_k
    return chunk, -(-K // chunk)


def splitk_kernel(op: Any, text: str, T: str) -> str:
    def sub(old: str, new: str) -> None:
        nonlocal text
        assert text.count(old) == 1, old
        text = text.replace(old, new)

    sub("        tilesM = t.tilesM; tilesN = t.tilesN;\n",
        "        tilesM = t.tilesM; tilesN = t.tilesN;\n        splitK = t.splitK; kChunk = t.kChunk;\n")
    sub("        for (uint32_t tile = GetBlockIdx(); tile < tilesM * tilesN; tile += GetBlockNum()) {\n"
        "            uint32_t m0 = (tile / tilesN) * baseM;\n"
        "            uint32_t n0 = (tile % tilesN) * baseN;\n",
        "        for (uint32_t tile = GetBlockIdx(); tile < tilesM * tilesN * splitK; tile += GetBlockNum()) {\n"
        "            uint32_t ks = tile / (tilesM * tilesN);  // this tile's range of K\n"
        "            uint32_t mn = tile % (tilesM * tilesN);\n"
        "            uint32_t m0 = (mn / tilesN) * baseM;\n"
        "            uint32_t n0 = (mn % tilesN) * baseN;\n"
        "            uint32_t kBegin = ks * kChunk, kEnd = Min(K, kBegin + kChunk);\n"
        "            withBias = (ks == 0);  // the bias is added once, by the first range\n")
    sub("            for (uint32_t k0 = 0; k0 < K; k0 += baseK) {\n"
        "                uint32_t k = Min(baseK, K - k0);\n",
        "            for (uint32_t k0 = kBegin; k0 < kEnd; k0 += baseK) {\n"
        "                uint32_t k = Min(baseK, kEnd - k0);\n")
    sub("                Compute(c1Local, m, n, k, k0 == 0);\n", "                Compute(c1Local, m, n, k, k0 == kBegin);\n")
    if op.bias:
        sub("        if (first) {\n            Mmad(c1Local, a2Local, b2Local, bias2Local, params);",
            "        if (first && withBias) {\n            Mmad(c1Local, a2Local, b2Local, bias2Local, params);")
    sub("        Fixpipe(cGm[m0 * N + n0], c1Local, params);\n",
        f"        SetAtomicAdd<{T}>();  // the K ranges of one tile add up in GM (C starts zero-filled)\n"
        "        Fixpipe(cGm[m0 * N + n0], c1Local, params);\n        SetAtomicNone();\n")
    sub("    uint32_t M = 0, N = 0, K = 0, baseM = 0, baseN = 0, baseK = 0, tilesM = 0, tilesN = 0;\n",
        "    uint32_t M = 0, N = 0, K = 0, baseM = 0, baseN = 0, baseK = 0, tilesM = 0, tilesN = 0;\n"
        "    uint32_t splitK = 1, kChunk = 0;\n    bool withBias = true;\n")
    return text


def splitk_host(host: str, split: int) -> str:
    def sub(old: str, new: str) -> None:
        nonlocal host
        assert host.count(old) == 1, old
        host = host.replace(old, new)

    sub("    uint32_t tiles = tilesM * tilesN;\n",
        f"    uint32_t kSteps = (K + BASE_K - 1) / BASE_K;\n"
        f"    uint32_t kChunk = (kSteps + {split} - 1) / {split} * BASE_K;  // whole K steps per range\n"
        "    uint32_t splitK = (K + kChunk - 1) / kChunk;  // no empty range\n"
        "    uint32_t tiles = tilesM * tilesN * splitK;\n")
    sub("    tiling.set_tilesN(tilesN);\n", "    tiling.set_tilesN(tilesN);\n    tiling.set_splitK(splitK);\n"
        "    tiling.set_kChunk(kChunk);\n")
    return host
