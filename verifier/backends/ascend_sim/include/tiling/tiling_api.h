// EvoKernel Ascend C CPU emulator: host API forwarding header (tiling/tiling_api.h).
#ifndef EVK_SIM_FWD_TILING_TILING_API_H
#define EVK_SIM_FWD_TILING_TILING_API_H
#include "evk_sim/host.h"
#endif
