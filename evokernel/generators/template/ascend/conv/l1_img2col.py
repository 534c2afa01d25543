"""The convolution fed to the cube from L1 (``ascend_conv`` with ``lowering = cube``, ``conv_algo = l1_img2col``):
LoadData 3D builds each tile's im2col rows in L0A; no im2col matrix in GM.

A MIX kernel in three phases (``SyncAll<false>()`` between them: the cube reads what every vector core wrote):

1. **vector cores: layouts the cube reads.** ``x`` (NCHW) -> ``xT`` (per image ``[H*W, Cp]``, NHWC with the
   channels zero-padded to ``Cp`` = a multiple of C0 = 8 floats): a chunk of ``QX`` pixels of every channel is
   copied into UB (``Cin`` rows, one zero row after them), one ``Gather`` transposes it (byte offsets built once per
   core by ``Adds`` doublings), one copy writes it out. The weights ``[Cout, Cin, KH, KW]`` -> ``wk``
   (``[Coutp, Kp]``, ``Kp = Cp*KH*KW`` ordered ``(c1, kh, kw, c0)``, the documented filter order of LoadData 3D's
   K axis; padded rows and channels zero), one Gather by one vector core.
2. **cube cores.** Per tile of ``MT`` output pixels of one image: the band of input rows the tile reads
   ``GM xT -> L1`` by ``Nd2Nz`` (``[pixels, Cp]`` -> NC1HWC0), ``SetFmatrix`` with the band's height and its own top /
   bottom padding, LoadData 3D (``mStartPt`` = the tile's first pixel inside the band) -> L0A, the weights (loaded
   once per core: ``Nd2Nz`` into L1, LoadData 2D into L0B), one ``Mmad``, ``Fixpipe`` -> ``yT`` (``[pixels, Coutp]``).
3. **vector cores: back to NCHW.** A chunk of ``QY`` pixels of ``yT`` into UB, one Gather to ``[Cout, QY]``, the bias
   added per row (``Adds``), one strided copy into the output.

x and y each cross GM once more (against ``col``, KH*KW times x, in the GM im2col). The geometry is fixed at
generation time (the task's shapes) and the host refuses other shapes. Applies to dense convolutions whose
weights fit L0B whole (``Coutp * Kp`` floats <= 64 KiB) and whose band fits L1; else the GM im2col
(:mod:`.implicit_gemm`) stays. Not done: K tiling, double-buffered L1/L0, per-AI-core flags instead of SyncAll.
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.ascend.conv import implicit_gemm
from evokernel.generators.template.ascend.conv.gemm_shape import _shape
from evokernel.generators.template.ascend.conv.op import _dims, host_tail, project_parts
from evokernel.generators.template.ascend.gemm import balance as B
from evokernel.generators.template.ascend.gemm.op import CUBE_CORES

UB_FLOATS = 196608 // 4 - 256  # the vector core's UB, less a margin
L0A_BYTES, L0B_BYTES, L0C_BYTES, L1_BYTES = 65536, 65536, 131072, 524288
AIV = 2 * CUBE_CORES


def _up(a: int, b: int) -> int:
    return -(-a // b) * b


def geometry(op: Any, knobs: dict[str, Any] | None = None) -> dict[str, int] | None:
    """The fixed geometry of the kernel for the task's shapes, or None when it does not apply / fit."""
    if op.groups != 1:
        return None
    n, c, h, w, co, ho, wo, kh, kw = _dims(op)
    (sh, sw), (ph, pw), (dh, dw) = op.stride, op.padding, op.dilation
    cp, coutp = _up(c, 8), _up(co, 16)
    kp = cp * kh * kw
    P = ho * wo
    if coutp * kp * 4 > L0B_BYTES or h * w > 65535 or max(ph, pw) > 255 or kp > 65535:
        return None
    cap = min(L0A_BYTES // (kp * 4), L0C_BYTES // (coutp * 4), 1024) // 16 * 16
    if cap < 16:
        return None
    # about three tiles per AI core, so the vector cores' layouts overlap the cube's tiles
    per = int((knobs or {}).get("tiles_per_core", 3))
    mt = min(cap, max(32, _up(-(-(n * P) // (per * CUBE_CORES)), 16)), _up(P, 16))
    span = -(-(mt - 1) // wo) + 1  # output rows a tile touches, at most
    band = min(h, (span - 1) * sh + (kh - 1) * dh + 1)
    # pixels of the map in L1: a band of rows, or (one-row image) the window of columns a tile reads
    bandpix = min(w, (mt - 1) * sw + (kw - 1) * dw + 1) if h == 1 and ho == 1 else band * w
    if bandpix * cp * 4 + coutp * kp * 4 > L1_BYTES or bandpix > 65535:
        return None
    kk = c * kh * kw
    ws = _up(kk, 8) + 8  # a UB row of weights: kk values, then zeros
    # each vector core: half a band (x) and half a tile (y) per tile, in chunks of qx / qy pixels
    qx0, qy0 = _up(-(-bandpix // 2), 8), _up(-(-mt // 2), 8)
    for qx, qy in ((qx0, qy0), (min(qx0, 256), min(qy0, 256)), (min(qx0, 64), min(qy0, 64)), (8, 8)):
        A = max(coutp * ws, (c + 1) * qx, qy * coutp)
        B = max(coutp * kp, qx * cp, co * qy)
        OX, OY = qx * cp, max(co * qy, coutp * kp)
        if A + B + OX + OY + _up(co, 8) + (2 * co * qy if op.bias else 0) <= UB_FLOATS:
            break
    else:
        return None
    return {"lowering": "cube", "conv_algo": "l1_img2col", "mix": 1, "blockDim": CUBE_CORES,
            "batch": n, "cin": c, "h": h, "w": w, "cout": co, "ho": ho, "wo": wo, "kh": kh, "kw": kw,
            "cp": cp, "coutp": coutp, "kp": kp, "P": P, "mt": mt, "tilesM": -(-P // mt), "band": band,
            "bandpix": bandpix,
            "qx": qx, "qy": qy, "ws": ws, "ubA": A, "ubB": B, "ubOX": OX, "ubOY": OY, "sh": sh, "sw": sw,
            "ph": ph, "pw": pw, "dh": dh, "dw": dw}


def modelled_bytes(op: Any) -> tuple[int, int]:
    """GM bytes moved: (this kernel, the GM im2col), for the draft's choice: x and y twice each here; col
    (Cin*KH*KW x Ho*Wo per image, written and read once, plus read by every N tile) there."""
    n, c, h, w, co, ho, wo, kh, kw = _dims(op)
    x, y = n * c * h * w * 4, n * co * ho * wo * 4
    col = n * c * kh * kw * ho * wo * 4
    return 3 * x + 3 * y, x + 2 * col + y


def _consts(g: dict[str, int]) -> str:
    keys = ["batch", "cin", "h", "w", "cout", "ho", "wo", "kh", "kw", "cp", "coutp", "kp", "P", "mt", "tilesM",
            "band", "bandpix", "qx", "qy", "ws", "ubA", "ubB", "ubOX", "ubOY", "sh", "sw", "ph", "pw", "dh", "dw"]
    return "\n".join(f"constexpr uint32_t L_{k.upper()} = {g[k]};" for k in keys)


_KERNEL = r"""
constexpr uint32_t L_KK = L_CIN * L_KH * L_KW;
constexpr uint32_t ITEMS = L_BATCH * L_TILESM;
// per AI core: wk, two band slots of xT, two tile slots of yT (64-float aligned)
constexpr uint64_t WK_FLOATS = (static_cast<uint64_t>(L_COUTP) * L_KP + 63) / 64 * 64;
constexpr uint64_t XS_FLOATS = (static_cast<uint64_t>(L_BANDPIX) * L_CP + 63) / 64 * 64;
constexpr uint64_t YS_FLOATS = (static_cast<uint64_t>(L_MT) * L_COUTP + 63) / 64 * 64;
constexpr uint64_t SLOT_FLOATS = WK_FLOATS + 2 * XS_FLOATS + 2 * YS_FLOATS;
// cross-core flags inside an AI core (mode 2)
// (AIV -> AIC flags by parity: the AIC's wait needs both vector cores' sets, and one vector core may run a tile
// ahead of the other). The slots need no flags of their own: a vector core writes band t + 1 after it waited for
// tile t - 1 (the cube had read band t - 1), and sets F_X for band t after it read tile t - 2.
constexpr uint16_t F_W = 0, F_X = 1, F_Y = 4;

__aicore__ inline uint32_t Min(uint32_t a, uint32_t b) { return a < b ? a : b; }

// The part of the image tile `item` reads: image n, its first pixel (pix0) and pixel count, the map's l1H x l1W and
// its own zero padding (left, right, top, bottom), the tile's first position in it (mStart). Rows of the image in
// general (a band of input rows); a single-row image (1-D) is windowed along W too.
struct Band {
    uint32_t n, m0, rows, pix0, pixels, l1H, l1W, mStart;
    uint8_t pad[4];
    __aicore__ inline Band(uint32_t item)
    {
        n = item / L_TILESM;
        m0 = (item % L_TILESM) * L_MT;
        rows = Min(L_MT, L_P - m0);
        if (L_H == 1 && L_HO == 1) {
            int32_t c0 = static_cast<int32_t>(m0 * L_SW) - static_cast<int32_t>(L_PW);
            int32_t c1 = static_cast<int32_t>((m0 + rows - 1) * L_SW + (L_KW - 1) * L_DW + 1) -
                         static_cast<int32_t>(L_PW);
            uint32_t left = c0 < 0 ? static_cast<uint32_t>(-c0) : 0;
            uint32_t right = c1 > static_cast<int32_t>(L_W) ? static_cast<uint32_t>(c1 - static_cast<int32_t>(L_W)) : 0;
            pix0 = c0 < 0 ? 0 : static_cast<uint32_t>(c0);
            pixels = static_cast<uint32_t>(c1 - c0) - left - right;
            l1H = 1;
            l1W = pixels;
            mStart = 0;
            pad[0] = static_cast<uint8_t>(left);
            pad[1] = static_cast<uint8_t>(right);
            pad[2] = 0;
            pad[3] = 0;
            return;
        }
        uint32_t ohA = m0 / L_WO, ohB = (m0 + rows - 1) / L_WO;
        int32_t r0 = static_cast<int32_t>(ohA * L_SH) - static_cast<int32_t>(L_PH);
        int32_t r1 = static_cast<int32_t>(ohB * L_SH + (L_KH - 1) * L_DH + 1) - static_cast<int32_t>(L_PH);
        uint32_t top = r0 < 0 ? static_cast<uint32_t>(-r0) : 0;
        uint32_t bottom = r1 > static_cast<int32_t>(L_H) ? static_cast<uint32_t>(r1 - static_cast<int32_t>(L_H)) : 0;
        uint32_t first = r0 < 0 ? 0 : static_cast<uint32_t>(r0);
        l1H = static_cast<uint32_t>(r1 - r0) - top - bottom;
        l1W = L_W;
        pix0 = first * L_W;
        pixels = l1H * L_W;
        mStart = m0 - ohA * L_WO;
        pad[0] = static_cast<uint8_t>(L_PW);
        pad[1] = static_cast<uint8_t>(L_PW);
        pad[2] = static_cast<uint8_t>(top);
        pad[3] = static_cast<uint8_t>(bottom);
    }
};

// t[0, unit) is set; t[r * unit + i] = t[i] + r * step for r < count (Adds doublings on the vector unit)
__aicore__ inline void Repeat(const LocalTensor<int32_t>& t, uint32_t unit, uint32_t count, int32_t step)
{
    for (uint32_t r = 1; r < count; r *= 2) {
        uint32_t k = Min(r, count - r);
        Adds(t[r * unit], t, static_cast<int32_t>(r) * step, static_cast<int32_t>(k * unit));
    }
}

// A vector core: for each tile of its AI core, half of the next tile's band x NCHW -> xT [pixels, Cp] (one
// Gather a chunk), then half of this tile's yT [pixels, Coutp] -> out NCHW (one Gather a chunk, the bias added).
class LayoutsKERNELNAME {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR wt, GM_ADDR bias, GM_ADDR out, GM_ADDR workspace)
    {
        core = GetBlockIdx() / GetTaskRation();
        sub = GetSubBlockIdx();
        xGm.SetGlobalBuffer((__gm__ float*)x, L_BATCH * L_CIN * L_H * L_W);
        wGm.SetGlobalBuffer((__gm__ float*)wt, L_COUT * L_KK);
        outGm.SetGlobalBuffer((__gm__ float*)out, L_BATCH * L_COUT * L_P);
        slotGm.SetGlobalBuffer((__gm__ float*)workspace + core * SLOT_FLOATS, SLOT_FLOATS);
        pipe.InitBuffer(bufA, L_UBA * sizeof(float));
        pipe.InitBuffer(bufB, L_UBB * sizeof(float));
        pipe.InitBuffer(bufOX, L_UBOX * sizeof(int32_t));
        pipe.InitBuffer(bufOY, L_UBOY * sizeof(int32_t));
        pipe.InitBuffer(bufBias, (L_COUT + 7) / 8 * 8 * sizeof(float));
        a = bufA.Get<float>();
        b = bufB.Get<float>();
        ox = bufOX.Get<int32_t>();
        oy = bufOY.Get<int32_t>();
        HAS_BIAS_INIT
    }
    __aicore__ inline void Process()
    {
        uint32_t tiles = core < ITEMS ? (ITEMS - core + GetBlockNum() - 1) / GetBlockNum() : 0;
        if (tiles == 0) {
            return;
        }
        Duplicate(a, 0.0f, L_UBA);  // the zero row / tails the gathers read for padded channels and rows
        Flag<HardEvent::V_MTE2>();
        if (sub == 0) {
            Weights();
        }
        CrossCoreSetFlag<2, PIPE_MTE3>(F_W);
        // x offsets: gathered entry q * Cp + c = source row min(c, Cin) (row Cin: zeros), column q
        Flag<HardEvent::V_S>();
        for (uint32_t c = 0; c < L_CP; ++c) {
            ox.SetValue(c, static_cast<int32_t>((c < L_CIN ? c : L_CIN) * L_QX * sizeof(float)));
        }
        // y offsets: gathered entry c * QY + q = source row q, column c
        for (uint32_t q = 0; q < 8; ++q) {
            oy.SetValue(q, static_cast<int32_t>(q * L_COUTP * sizeof(float)));
        }
        Flag<HardEvent::S_V>();
        Repeat(ox, L_CP, L_QX, sizeof(float));
        Repeat(oy, 8, L_QY / 8, 8 * L_COUTP * sizeof(float));
        Repeat(oy, L_QY, L_COUT, sizeof(float));
        BandToXT(0);
        for (uint32_t t = 0; t < tiles; ++t) {
            if (t + 1 < tiles) {
                // band t + 1 goes into the slot of band t - 1: the cube read it before it set F_Y for tile t - 1,
                // which this core waited for in the last iteration
                BandToXT(t + 1);
            }
            CrossCoreWaitFlag(F_Y);  // tile t is in its yT slot
            TileToOut(t);
        }
    }

private:
    template <HardEvent E> __aicore__ inline void Flag()
    {
        TEventID id = GetTPipePtr()->FetchEventID(E);
        SetFlag<E>(id);
        WaitFlag<E>(id);
    }
    __aicore__ inline void BandToXT(uint32_t t)
    {
        Band bd(core + t * GetBlockNum());
        uint32_t pixels = bd.pixels, half = (pixels / 2 + 7) / 8 * 8;
        uint32_t p0 = sub == 0 ? 0 : Min(half, pixels), p1 = sub == 0 ? Min(half, pixels) : pixels;
        uint64_t src = static_cast<uint64_t>(bd.n) * L_CIN * L_H * L_W + bd.pix0;
        uint64_t dst = WK_FLOATS + (t % 2) * XS_FLOATS;
        for (uint32_t p = p0; p < p1; p += L_QX) {
            uint32_t q = Min(L_QX, p1 - p);
            Flag<HardEvent::V_MTE2>();  // the last gather read a
            DataCopyExtParams in{static_cast<uint16_t>(L_CIN), static_cast<uint32_t>(q * sizeof(float)),
                                 static_cast<uint32_t>((L_H * L_W - q) * sizeof(float)),
                                 static_cast<uint32_t>((L_QX - (q + 7) / 8 * 8) / 8), 0};
            // each row's last 32-byte block completed with zeros (the y gathers later read stale entries of a)
            DataCopyPadExtParams<float> pad{true, 0, static_cast<uint8_t>((q + 7) / 8 * 8 - q), 0.0f};
            DataCopyPad(a, xGm[src + p], in, pad);
            Flag<HardEvent::MTE2_V>();
            Flag<HardEvent::MTE3_V>();  // the last copy-out read b
            Gather(b, a, ox.ReinterpretCast<uint32_t>(), 0, q * L_CP);
            Flag<HardEvent::V_MTE3>();
            DataCopyExtParams outCopy{1, static_cast<uint32_t>(q * L_CP * sizeof(float)), 0, 0, 0};
            DataCopyPad(slotGm[dst + static_cast<uint64_t>(p) * L_CP], b, outCopy);
        }
        CrossCoreSetFlag<2, PIPE_MTE3>(F_X + t % 2);
    }
    __aicore__ inline void TileToOut(uint32_t t)
    {
        Band bd(core + t * GetBlockNum());
        uint32_t half = (bd.rows / 2 + 7) / 8 * 8;
        uint32_t p0 = sub == 0 ? 0 : Min(half, bd.rows), p1 = sub == 0 ? Min(half, bd.rows) : bd.rows;
        uint64_t src = WK_FLOATS + 2 * XS_FLOATS + (t % 2) * YS_FLOATS;
        for (uint32_t p = p0; p < p1; p += L_QY) {
            uint32_t q = Min(L_QY, p1 - p);
            Flag<HardEvent::V_MTE2>();
            DataCopyExtParams in{1, static_cast<uint32_t>(q * L_COUTP * sizeof(float)), 0, 0, 0};
            DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};
            DataCopyPad(a, slotGm[src + static_cast<uint64_t>(p) * L_COUTP], in, pad);
            Flag<HardEvent::MTE2_V>();
            Flag<HardEvent::MTE3_V>();
            Gather(b, a, oy.ReinterpretCast<uint32_t>(), 0, L_COUT * L_QY);
HAS_BIAS_ADD            Flag<HardEvent::V_MTE3>();
            DataCopyExtParams outCopy{static_cast<uint16_t>(L_COUT), static_cast<uint32_t>(q * sizeof(float)),
                                      static_cast<uint32_t>((L_QY - (q + 7) / 8 * 8) / 8),
                                      static_cast<uint32_t>((L_P - q) * sizeof(float)), 0};
            DataCopyPad(outGm[static_cast<uint64_t>(bd.n) * L_COUT * L_P + bd.m0 + p], b, outCopy);
        }
        Flag<HardEvent::MTE3_V>();
    }
    __aicore__ inline void Weights()
    {
        // W rows (kk values each) into UB rows of WS floats (the tail zeros), Gather into wk's (c1, kh, kw, c0)
        DataCopyExtParams in{static_cast<uint16_t>(L_COUT), static_cast<uint32_t>(L_KK * sizeof(float)), 0,
                             static_cast<uint32_t>((L_WS - (L_KK + 7) / 8 * 8) / 8), 0};
        DataCopyPadExtParams<float> pad{true, 0, static_cast<uint8_t>((L_KK + 7) / 8 * 8 - L_KK), 0.0f};
        DataCopyPad(a, wGm, in, pad);
WEIGHT_OFFSETS        Flag<HardEvent::S_V>();
        Repeat(oy, L_KP, L_COUTP, L_WS * sizeof(float));
        Flag<HardEvent::MTE2_V>();
        Gather(b, a, oy.ReinterpretCast<uint32_t>(), 0, L_COUTP * L_KP);
        Flag<HardEvent::V_MTE3>();
        DataCopyExtParams outCopy{1, static_cast<uint32_t>(L_COUTP * L_KP * sizeof(float)), 0, 0, 0};
        DataCopyPad(slotGm, b, outCopy);
        Flag<HardEvent::MTE3_V>();
        Flag<HardEvent::MTE3_MTE2>();
        Duplicate(a, 0.0f, L_UBA);
        Flag<HardEvent::V_MTE2>();
    }
    TPipe pipe;
    TBuf<TPosition::VECCALC> bufA, bufB, bufOX, bufOY, bufBias, bufBiasB, bufOB;
    LocalTensor<float> a, b, biasLocal, biasB;
    LocalTensor<int32_t> ox, oy;
    GlobalTensor<float> xGm, wGm, outGm, slotGm, biasGm;
    uint32_t core = 0, sub = 0;
};

// The cube core: per tile of MT output pixels, its band (xT) into L1 as NC1HWC0, LoadData 3D -> L0A, the
// weights in L0B (once), Mmad, Fixpipe -> the tile's yT slot; flags to and from its vector cores.
class ConvKERNELNAME {
public:
    __aicore__ inline void Run(GM_ADDR workspace)
    {
        uint32_t id = GetBlockIdx(), num = GetBlockNum();
        uint32_t tiles = id < ITEMS ? (ITEMS - id + num - 1) / num : 0;
        if (tiles == 0) {
            return;
        }
        slotGm.SetGlobalBuffer((__gm__ float*)workspace + id * SLOT_FLOATS, SLOT_FLOATS);
        pipe.InitBuffer(qx, 1, L_BANDPIX * L_CP * sizeof(float));
        pipe.InitBuffer(qw, 1, L_COUTP * L_KP * sizeof(float));
        pipe.InitBuffer(qa2, 1, (L_MT + 15) / 16 * 16 * L_KP * sizeof(float));
        pipe.InitBuffer(qb2, 1, L_COUTP * L_KP * sizeof(float));
        pipe.InitBuffer(qc, 1, (L_MT + 15) / 16 * 16 * L_COUTP * sizeof(float));
        constexpr uint32_t K1 = L_KP / 8, N1 = L_COUTP / 16;
        CrossCoreWaitFlag(F_W);
        LocalTensor<float> w1 = qw.AllocTensor<float>();
        DataCopy(w1, slotGm, Nd2NzParams(1, L_COUTP, L_KP, 0, L_KP, L_COUTP, 1, 0));  // B^T [Coutp, Kp] -> NZ
        qw.EnQue(w1);
        w1 = qw.DeQue<float>();
        LocalTensor<float> b2 = qb2.AllocTensor<float>();
        for (uint32_t j = 0; j < K1; ++j) {
            LoadData(b2[j * N1 * 16 * 8], w1[j * L_COUTP * 8], LoadData2DParams(0, N1, 1, 0, 0, false, 0));
        }
        qb2.EnQue(b2);
        b2 = qb2.DeQue<float>();
        for (uint32_t t = 0; t < tiles; ++t) {
            Band bd(id + t * num);
            CrossCoreWaitFlag(F_X + t % 2);  // both vector cores wrote their half of the band
            LocalTensor<float> x1 = qx.AllocTensor<float>();
            DataCopy(x1, slotGm[WK_FLOATS + (t % 2) * XS_FLOATS],
                     Nd2NzParams(1, bd.pixels, L_CP, 0, L_CP, bd.pixels, 1, 0));  // -> NC1HWC0
            qx.EnQue(x1);
            x1 = qx.DeQue<float>();
            SetFmatrix(static_cast<uint16_t>(bd.l1H), static_cast<uint16_t>(bd.l1W), bd.pad, FmatrixMode::FMATRIX_LEFT);
            SetLoadDataPaddingValue<float>(0.0f);
            LocalTensor<float> a2 = qa2.AllocTensor<float>();
            LoadData3DParamsV2<float> p;
            p.channelSize = L_CP;
            p.kStartPt = 0;
            p.kExtension = L_KP;
            p.mStartPt = bd.mStart;
            p.mExtension = (bd.rows + 15) / 16 * 16;
            p.strideH = L_SH;
            p.strideW = L_SW;
            p.filterH = L_KH;
            p.filterW = L_KW;
            p.dilationFilterH = L_DH;
            p.dilationFilterW = L_DW;
            LoadData<float, REGS_CFG>(a2, x1, p);
            qx.FreeTensor(x1);
            qa2.EnQue(a2);
            a2 = qa2.DeQue<float>();
            LocalTensor<float> c = qc.AllocTensor<float>();
            Mmad(c, a2, b2, MmadParams(bd.rows, L_COUTP, L_KP, 0, false, true));
            qa2.FreeTensor(a2);
            qc.EnQue(c);
            c = qc.DeQue<float>();
            // tile t goes into the slot of tile t - 2: the vector cores read it out before they set F_X for band t
            FixpipeParamsV220 fp;
            fp.nSize = L_COUTP;
            fp.mSize = bd.rows;
            fp.srcStride = (bd.rows + 15) / 16 * 16;
            fp.dstStride = L_COUTP;
            Fixpipe(slotGm[WK_FLOATS + 2 * XS_FLOATS + (t % 2) * YS_FLOATS], c, fp);
            qc.FreeTensor(c);
            CrossCoreSetFlag<2, PIPE_FIX>(F_Y);
        }
        qb2.FreeTensor(b2);
        qw.FreeTensor(w1);
    }

private:
    static constexpr IsResetLoad3dConfig REGS_CFG = {false, false};
    TPipe pipe;
    TQue<TPosition::A1, 1> qx;
    TQue<TPosition::B1, 1> qw;
    TQue<TPosition::A2, 1> qa2;
    TQue<TPosition::B2, 1> qb2;
    TQue<TPosition::CO1, 1> qc;
    GlobalTensor<float> slotGm;
};
"""

_W_SCALAR = """        for (uint32_t k = 0; k < L_KP; ++k) {  // entry k = ((c1 * KH + i) * KW + j) * 8 + c0
            uint32_t c0 = k % 8, j = (k / 8) % L_KW, i = (k / 8 / L_KW) % L_KH, c = (k / 8 / L_KW / L_KH) * 8 + c0;
            oy.SetValue(k, static_cast<int32_t>((c < L_CIN ? (c * L_KH + i) * L_KW + j : (L_KK + 7) / 8 * 8) *
                                                sizeof(float)));
        }
"""
_W_VEC = """        // entry ((c1 * KH + i) * KW + j) * 8 + c0 = value (c1 * 8 + c0) * KH * KW + i * KW + j: the c0 row by
        // the scalar unit, then KW, KH and C1 repeats (every channel exists: Cin is a multiple of 8)
        for (uint32_t c0 = 0; c0 < 8; ++c0) {
            oy.SetValue(c0, static_cast<int32_t>(c0 * L_KH * L_KW * sizeof(float)));
        }
        Flag<HardEvent::S_V>();
        Repeat(oy, 8, L_KW, sizeof(float));
        Repeat(oy, 8 * L_KW, L_KH, L_KW * sizeof(float));
        Repeat(oy, 8 * L_KW * L_KH, L_CP / 8, 8 * L_KH * L_KW * sizeof(float));
"""
_BIAS_INIT = """biasGm.SetGlobalBuffer((__gm__ float*)bias, L_COUT);
        biasLocal = bufBias.Get<float>();
        pipe.InitBuffer(bufBiasB, L_COUT * L_QY * sizeof(float));
        pipe.InitBuffer(bufOB, L_COUT * L_QY * sizeof(int32_t));
        biasB = bufBiasB.Get<float>();
        LocalTensor<int32_t> ob = bufOB.Get<int32_t>();
        for (uint32_t q = 0; q < 8; ++q) {
            ob.SetValue(q, 0);
        }
        DataCopyExtParams bc{1, static_cast<uint32_t>(L_COUT * sizeof(float)), 0, 0, 0};
        DataCopyPadExtParams<float> bpad{false, 0, 0, 0.0f};
        DataCopyPad(biasLocal, biasGm, bc, bpad);
        Flag<HardEvent::S_V>();
        Repeat(ob, 8, L_QY / 8, 0);
        Repeat(ob, L_QY, L_COUT, sizeof(float));  // entry c * QY + q: bias c
        Flag<HardEvent::MTE2_V>();
        Gather(biasB, biasLocal, ob.ReinterpretCast<uint32_t>(), 0, L_COUT * L_QY);"""
_BIAS_ADD = """            Add(b, b, biasB, static_cast<int32_t>(L_COUT * L_QY));
"""


def _kernel(op: Any, g: dict[str, int]) -> str:
    x, wt = op.exts[0].name, op.exts[1].name
    bias = op.exts[2].name if op.bias else "nullptr"
    args = ", ".join(f"GM_ADDR {e.name}" for e in op.exts)
    body = (_KERNEL.replace("KERNELNAME", op.op_type)
            .replace("HAS_BIAS_INIT", _BIAS_INIT if op.bias else "")
            .replace("HAS_BIAS_ADD", _BIAS_ADD if op.bias else "")
            .replace("WEIGHT_OFFSETS", _W_VEC if g["cin"] % 8 == 0 else _W_SCALAR))
    return f"""#include "kernel_operator.h"
using namespace AscendC;

{_consts(g)}
{body}
extern "C" __global__ __aicore__ void {op.kernel_name}({args}, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);  // per block: the cube core and two vector cores
    GET_TILING_DATA(t, tiling);
    (void)t;
    if ASCEND_IS_AIC {{
        Conv{op.op_type} conv;
        conv.Run(workspace);
    }} else {{
        Layouts{op.op_type} lay;
        lay.Init({x}, {wt}, {bias if op.bias else "nullptr"}, out, workspace);
        lay.Process();
    }}
}}"""


def _host(op: Any, g: dict[str, int], tiling_cls: str) -> str:
    nd = op.nd
    (sh, sw), (ph, pw), (dh, dw) = op.stride, op.padding, op.dilation
    xs = [g["batch"], g["cin"], g["h"], g["w"]] if nd == 2 else [g["batch"], g["cin"], g["w"]]
    ws = [g["cout"], g["cin"], g["kh"], g["kw"]] if nd == 2 else [g["cout"], g["cin"], g["kw"]]
    checks = " || ".join([f"x.GetDim({i}) != {v}" for i, v in enumerate(xs)]
                         + [f"wt.GetDim({i}) != {v}" for i, v in enumerate(ws)])
    slot = (_up(g["coutp"] * g["kp"], 64) + 2 * _up(g["bandpix"] * g["cp"], 64)
            + 2 * _up(g["mt"] * g["coutp"], 64))
    return f"""#include "{op.kernel_name}_tiling.h"
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"

// the module's attributes
constexpr int64_t STRIDE_H = {sh}, STRIDE_W = {sw}, PAD_H = {ph}, PAD_W = {pw}, DIL_H = {dh}, DIL_W = {dw};

namespace optiling {{
static ge::graphStatus TilingFunc(gert::TilingContext* context)
{{
    const gert::Shape& x = context->GetInputShape(0)->GetStorageShape();
    const gert::Shape& wt = context->GetInputShape(1)->GetStorageShape();
    if (x.GetDimNum() != {nd + 2} || wt.GetDimNum() != {nd + 2}) {{
        return ge::GRAPH_FAILED;
    }}
    if ({checks}) {{
        return ge::GRAPH_FAILED;  // the kernel's geometry is fixed for the task's shapes
    }}
    auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
    context->SetBlockDim(platform.GetCoreNumAic());  // MIX: every AI core (its vector cores do the layouts)
    {tiling_cls} tiling;
    tiling.set_batch({g["batch"]});
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
    size_t* workspace = context->GetWorkspaceSizes(1);
    // per AI core: wk (filter order), two band slots of xT (NHWC, channels padded), two tile slots of yT
    workspace[0] = {slot}ULL * platform.GetCoreNumAic() * sizeof(float);
    return ge::GRAPH_SUCCESS;
}}
}}

""" + host_tail(op)


def render_project(op: Any, knobs: dict[str, Any]) -> tuple[dict[str, str], None, dict[str, int] | None]:
    """The six strings of the operator project and the geometry (None: does not apply / fit)."""
    g = geometry(op, knobs)
    if g is None:
        return {}, None, None
    tiling_cls = f"{op.op_type}TilingData"
    parts = project_parts(op, ["batch"], tiling_cls, _host(op, g, tiling_cls), _kernel(op, g),
                          "convolution on the cube, im2col by LoadData 3D from L1")
    return parts, None, g


# ---- the draft's choice between this kernel and the GM im2col, from a model of both (in cycles of one AI core) ----
SYNC_ALL = 2000.0  # a SyncAll's cycles (the emulated 910B's, hardware.py sync_all_cycles)


def _copy(nbytes: float) -> float:
    """One GM copy: setup, first-byte latency, bytes at the MTE rate (bursts not counted)."""
    return B.MTE2_SETUP + B.MTE2_LATENCY + nbytes / B.MTE2_BYTES_PER_CYCLE


def pipeline_cycles(op: Any, g: dict[str, int]) -> float:
    """Modelled cycles of the busiest AI core of this kernel: the weights, the first band, then per tile the slowest
    of its three stages (the vector cores' band for the next tile and this tile's output, the cube's tile), the last
    output. Each vector core moves half a band / half a tile."""
    tiles = -(-g["batch"] * g["tilesM"] // CUBE_CORES)
    band_in = g["bandpix"] * g["cin"] * 4 / 2
    band_out = g["bandpix"] * g["cp"] * 4 / 2
    xv = -(-(g["bandpix"] // 2) // g["qx"]) * (B.MTE2_SETUP + 64) + _copy(band_in) + B.FIX_LATENCY + band_out / 32
    yv = -(-(g["mt"] // 2) // g["qy"]) * (B.MTE2_SETUP + 64) + _copy(g["mt"] * g["coutp"] * 4 / 2) \
        + B.FIX_LATENCY + g["mt"] * g["cout"] * 4 / 2 / 32
    mp, kp, np_ = _up(g["mt"], 16), g["kp"], g["coutp"]
    cube = (_copy(g["bandpix"] * g["cp"] * 4) + B.MTE1_SETUP + mp * kp * 4 / B.MTE1_BYTES_PER_CYCLE
            + B.MMAD_SETUP + mp * np_ * kp / (B.MACS_PER_CYCLE_FP16 * B.FP32_RATIO)
            + B.FIX_SETUP + B.FIX_LATENCY + mp * np_ * 4 / B.FIX_BYTES_PER_CYCLE)
    weights = _copy(g["cout"] * g["cin"] * g["kh"] * g["kw"] * 4) + B.FIX_LATENCY + g["coutp"] * g["kp"] * 4 / 32
    return weights + xv + tiles * max(xv + yv, cube) + yv


def gm_im2col_cycles(op: Any, knobs: dict[str, Any]) -> float:
    """Modelled cycles of the GM im2col lowering (:mod:`.implicit_gemm`) at ``knobs``: its GEMM (the base-block
    model, :mod:`..gemm.balance`) plus, for a MIX kernel, the vector cores' im2col (each col row copied in and
    out, 40 vector cores) and copy-out, and a SyncAll before and after the GEMM."""
    s = _shape(op)
    gemm = B.core_cycles(implicit_gemm.gemm_op(op), int(knobs["base_m"]), int(knobs["base_n"]),
                         int(knobs["base_k"]), int(knobs["buffer_num"]))
    if not (s["im2col"] or s["copyOut"]):
        return gemm
    col = s["batch"] * s["K"] * s["Np"] * 4
    items = -(-s["batch"] * s["kc"] // AIV)
    vec = items * (_copy(0) + B.FIX_LATENCY) + 2 * col / AIV / B.MTE2_BYTES_PER_CYCLE if s["im2col"] else 0.0
    out = (_copy(0) + B.FIX_LATENCY + 2 * s["batch"] * s["cout"] * s["Np"] * 4 / AIV / B.MTE2_BYTES_PER_CYCLE
           + SYNC_ALL) if s["copyOut"] else 0.0
    return vec + SYNC_ALL + gemm + out


def faster(op: Any, gm_knobs: dict[str, Any]) -> bool:
    """True when this kernel applies and models faster than the GM im2col at ``gm_knobs`` (the draft's block)."""
    g = geometry(op, gm_knobs)
    return g is not None and pipeline_cycles(op, g) < gm_im2col_cycles(op, gm_knobs)
