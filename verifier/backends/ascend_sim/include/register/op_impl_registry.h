// EvoKernel Ascend C CPU emulator: host API forwarding header (register/op_impl_registry.h).
#ifndef EVK_SIM_FWD_REGISTER_OP_IMPL_REGISTRY_H
#define EVK_SIM_FWD_REGISTER_OP_IMPL_REGISTRY_H
#include "evk_sim/host.h"
#endif
