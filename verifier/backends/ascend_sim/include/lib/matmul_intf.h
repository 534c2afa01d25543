// EvoKernel Ascend C CPU emulator: lib/matmul_intf.h, the high-level Matmul API (evk_sim/matmul.h).
#ifndef EVK_SIM_LIB_MATMUL_INTF_H
#define EVK_SIM_LIB_MATMUL_INTF_H
#include "evk_sim/matmul.h"
#endif
