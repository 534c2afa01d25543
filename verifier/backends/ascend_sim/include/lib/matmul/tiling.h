// EvoKernel Ascend C CPU emulator: lib/matmul/tiling.h (the matmul tiling structure, evk_sim/matmul_tiling.h).
#ifndef EVK_SIM_LIB_MATMUL_TILING_H
#define EVK_SIM_LIB_MATMUL_TILING_H
#include "evk_sim/matmul_tiling.h"
#endif
