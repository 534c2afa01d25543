// EvoKernel Ascend C CPU emulator: host API forwarding header (graph/types.h).
#ifndef EVK_SIM_FWD_GRAPH_TYPES_H
#define EVK_SIM_FWD_GRAPH_TYPES_H
#include "evk_sim/host.h"
#endif
