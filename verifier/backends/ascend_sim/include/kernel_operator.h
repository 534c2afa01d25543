// EvoKernel Ascend C CPU emulator: the header Ascend C kernels include.
// See evk_sim/kernel.h for the implemented API subset and ../README.md for the rules it checks.
#ifndef EVK_SIM_KERNEL_OPERATOR_H
#define EVK_SIM_KERNEL_OPERATOR_H
#ifndef EVK_SIM_KERNEL
#define EVK_SIM_KERNEL 1
#endif
#include "evk_sim/kernel.h"
#endif
