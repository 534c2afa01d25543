// EvoKernel Ascend C CPU emulator: host API forwarding header (exe_graph/runtime/tiling_context.h).
#ifndef EVK_SIM_FWD_EXE_GRAPH_RUNTIME_TILING_CONTEXT_H
#define EVK_SIM_FWD_EXE_GRAPH_RUNTIME_TILING_CONTEXT_H
#include "evk_sim/host.h"
#endif
