// EvoKernel Ascend C CPU emulator: host API forwarding header (graph/ge_error_codes.h).
#ifndef EVK_SIM_FWD_GRAPH_GE_ERROR_CODES_H
#define EVK_SIM_FWD_GRAPH_GE_ERROR_CODES_H
#include "evk_sim/host.h"
#endif
