// EvoKernel Ascend C CPU emulator: host API forwarding header (exe_graph/runtime/infer_shape_context.h).
#ifndef EVK_SIM_FWD_EXE_GRAPH_RUNTIME_INFER_SHAPE_CONTEXT_H
#define EVK_SIM_FWD_EXE_GRAPH_RUNTIME_INFER_SHAPE_CONTEXT_H
#include "evk_sim/host.h"
#endif
