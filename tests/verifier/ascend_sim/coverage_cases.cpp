// What the API moved, per kernel argument (the report's "args"), and output bytes written behind its back.
// Arguments: a (256 float input), out (256 float output).
using namespace AscendC;

CASE(c_copy_all, GM_ADDR a, GM_ADDR out) {  // every output byte through DataCopy
    GlobalTensor<float> ga, go;
    ga.SetGlobalBuffer((__gm__ float*)a, 256);
    go.SetGlobalBuffer((__gm__ float*)out, 256);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 1024);
    LocalTensor<float> x = b.Get<float>();
    DataCopy(x, ga, 256);
    PipeBarrier<PIPE_ALL>();
    DataCopy(go, x, 256);
}

CASE(c_half_behind_api, GM_ADDR a, GM_ADDR out) {  // half by DataCopy, half through the runtime's own memory
    GlobalTensor<float> ga, go;
    ga.SetGlobalBuffer((__gm__ float*)a, 256);
    go.SetGlobalBuffer((__gm__ float*)out, 256);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 1024);
    LocalTensor<float> x = b.Get<float>();
    DataCopy(x, ga, 256);
    PipeBarrier<PIPE_ALL>();
    DataCopy(go, x, 128);
    // what a kernel that found the address translation could do (the binary judge refuses the name)
    float* raw = reinterpret_cast<float*>(::evk_sim::gm_host((__gm__ float*)out + 128));
    for (int i = 0; i < 128; ++i) raw[i] = 3.0f;
}
