// EvoKernel Ascend C CPU emulator: kernel_tiling/kernel_tiling.h, the kernel-side tiling structures of the
// high-level APIs (AscendC::tiling::TCubeTiling; evk_sim/matmul_tiling.h) and REGISTER_TILING_DEFAULT, which
// names a plain tiling struct for GET_TILING_DATA (the host fills it through context->GetTilingData<T>()).
#ifndef EVK_SIM_KERNEL_TILING_KERNEL_TILING_H
#define EVK_SIM_KERNEL_TILING_KERNEL_TILING_H
#include "evk_sim/matmul_tiling.h"
#ifndef REGISTER_TILING_DEFAULT
#define REGISTER_TILING_DEFAULT(type) using EvkRegisteredTilingData = type
#endif
#ifndef REGISTER_TILING_FOR_TILINGKEY
#define REGISTER_TILING_FOR_TILINGKEY(key, type)
#endif
#endif
