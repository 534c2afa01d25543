// EvoKernel Ascend C CPU emulator: host API forwarding header (tiling/platform/platform_ascendc.h).
#ifndef EVK_SIM_FWD_TILING_PLATFORM_PLATFORM_ASCENDC_H
#define EVK_SIM_FWD_TILING_PLATFORM_PLATFORM_ASCENDC_H
#include "evk_sim/host.h"
#endif
