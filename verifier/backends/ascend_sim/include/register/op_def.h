// EvoKernel Ascend C CPU emulator: host API forwarding header (register/op_def.h).
#ifndef EVK_SIM_FWD_REGISTER_OP_DEF_H
#define EVK_SIM_FWD_REGISTER_OP_DEF_H
#include "evk_sim/host.h"
#endif
