// A raw GM read in a kernel built with line tables (-g1): the runtime names the exact kernel line.
using namespace AscendC;

CASE(g_raw_read_line, GM_ADDR a, GM_ADDR out) {
    GlobalTensor<float> go;
    go.SetGlobalBuffer((__gm__ float*)out, 256);
    float s = 0.0f;
    for (int i = 0; i < 64; ++i) s += ((__gm__ volatile float*)a)[i];  // LINE raw
    go.SetValue(0, s);
}
