// EvoKernel Ascend C CPU emulator: host API forwarding header (exe_graph/runtime/shape.h).
#ifndef EVK_SIM_FWD_EXE_GRAPH_RUNTIME_SHAPE_H
#define EVK_SIM_FWD_EXE_GRAPH_RUNTIME_SHAPE_H
#include "evk_sim/host.h"
#endif
