// EvoKernel Ascend C CPU emulator: host API forwarding header (tiling/tiling_api.h): the host API and the
// matmul tiling (matmul_tiling::MultiCoreMatmulTiling, TCubeTiling; evk_sim/matmul_tiling.h) and the
// SoftMax/LayerNorm/RmsNorm tiling (evk_sim/norm_tiling.h).
#ifndef EVK_SIM_FWD_TILING_TILING_API_H
#define EVK_SIM_FWD_TILING_TILING_API_H
#include "evk_sim/host.h"
#include "evk_sim/matmul_tiling.h"
#include "evk_sim/norm_tiling.h"
#endif
