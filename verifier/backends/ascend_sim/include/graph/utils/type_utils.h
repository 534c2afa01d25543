// EvoKernel Ascend C CPU emulator: host API forwarding header (graph/utils/type_utils.h).
#ifndef EVK_SIM_FWD_GRAPH_UTILS_TYPE_UTILS_H
#define EVK_SIM_FWD_GRAPH_UTILS_TYPE_UTILS_H
#include "evk_sim/host.h"
#endif
