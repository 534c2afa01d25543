/* EvoKernel Ascend C CPU emulator: the runtime's C ABI.
 *
 * Link runtime.cpp (compiled once) with the kernel translation unit and, for the operator flow,
 * the host translation unit (TilingFunc, InferShape, OpDef + OP_ADD). Then either
 *   - call evk_sim_run()    : registered op -> TilingFunc on the given shapes/dtypes/attrs ->
 *                             kernel once per block 0..blockDim-1 -> JSON report;
 *   - call evk_sim_launch() : direct launch of a kernel with raw buffers and a block count;
 *   - or make the launcher's main() `return evk_sim_main(argc, argv, (evk_kernel_fn)&my_kernel);`
 *     and drive it with a spec file (see README.md).
 * All functions are safe to call repeatedly in one process (each run starts from a clean state);
 * they are not thread-safe.
 */
#ifndef EVK_SIM_RUNTIME_H
#define EVK_SIM_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EVK_SIM_ABI_VERSION 3 /* 2: evk_options.hw_model_json; 3: evk_sim_tiling, evk_sim_run_kernel, the GM window */

/* A kernel entry point (extern "C" void k(GM_ADDR, ..., GM_ADDR)), cast to this type. */
typedef void (*evk_kernel_fn)(void);

/* dtype codes = ge::DataType */
enum {
    EVK_DT_FLOAT = 0,
    EVK_DT_FLOAT16 = 1,
    EVK_DT_INT8 = 2,
    EVK_DT_INT32 = 3,
    EVK_DT_UINT8 = 4,
    EVK_DT_INT16 = 6,
    EVK_DT_UINT16 = 7,
    EVK_DT_UINT32 = 8,
    EVK_DT_INT64 = 9,
    EVK_DT_UINT64 = 10,
    EVK_DT_DOUBLE = 11,
    EVK_DT_BOOL = 12,
    EVK_DT_BF16 = 27
};

typedef struct evk_tensor {
    const char* name;   /* optional (messages); defaults to the OpDef's parameter name */
    int32_t dtype;      /* EVK_DT_* */
    int32_t ndim;
    const int64_t* dims;
    void* data;         /* caller-owned; outputs are overwritten */
    uint64_t nbytes;    /* size of data in bytes */
} evk_tensor;

enum { EVK_ATTR_INT = 1, EVK_ATTR_FLOAT = 2, EVK_ATTR_BOOL = 3, EVK_ATTR_STR = 4, EVK_ATTR_LIST_INT = 5,
       EVK_ATTR_LIST_FLOAT = 6 };

typedef struct evk_attr {
    const char* name;   /* matched against the OpDef's Attr names */
    int32_t kind;       /* EVK_ATTR_* */
    int64_t i;          /* INT, BOOL */
    double f;           /* FLOAT */
    const char* s;      /* STR */
    int32_t n;          /* LIST_*: element count */
    const int64_t* ints;
    const double* floats;
} evk_attr;

typedef struct evk_options {
    uint32_t core_num_aiv;          /* 0 -> hw model's aiv_cores (40): what GetCoreNumAiv()/GetCoreNum() return */
    uint64_t ub_size;               /* 0 -> 196608 (192 KiB): Unified Buffer per block */
    int32_t half_overflow_saturate; /* 0 -> IEEE inf (910B default), 1 -> saturate to +-65504 */
    int32_t keep_outputs;           /* 0 -> outputs are filled with 0xFF bytes (NaN) before the run */
    uint64_t max_instructions;      /* per block; 0 -> unlimited */
    int32_t max_violations;         /* distinct violations kept in the report; 0 -> 200 */
    const char* hw_model_json;      /* latency-model constants: a flat JSON object {"key": number, ..., "name": "..."}
                                       (hardware.py's Ascend910B().runtime_json()); NULL or "" -> built-in defaults
                                       (equal to the dataclass defaults); unknown keys are a configuration error.
                                       Its aiv_cores is the default of core_num_aiv. */
} evk_options;

typedef struct evk_run_config {
    const char* op_type;            /* OpDef name, e.g. "AddCustom" */
    evk_kernel_fn kernel;           /* e.g. (evk_kernel_fn)&add_custom */
    int32_t n_inputs;
    const evk_tensor* inputs;       /* in OpDef input order */
    int32_t n_outputs;
    const evk_tensor* outputs;      /* in OpDef output order */
    int32_t n_attrs;
    const evk_attr* attrs;
    const char* report_path;        /* JSON report destination (NULL: none) */
    evk_options options;
} evk_run_config;

/* Run a registered operator: TilingFunc, then the kernel with arguments
 * (inputs..., outputs..., workspace, tiling) once per block. Return codes:
 *   0  the kernel ran for every block (see the report for violations);
 *   10 the run stopped early (tiling failed, a block crashed); the report says why;
 *   1  bad configuration (unknown op, wrong argument count, ...); see evk_sim_last_error();
 *   2  the report could not be written. */
int evk_sim_run(const evk_run_config* cfg);

/* The host half alone (what a separate host process runs): InferShape and TilingFunc on the shapes, dtypes and
 * attributes (cfg->kernel may be NULL; a tensor's data reaches TilingFunc only for an input the OpDef declares
 * ValueDepend, as on CANN). The report (tiling bytes, blockDim, tiling key, workspace sizes, host violations) goes
 * to cfg->report_path. Return codes as evk_sim_run (10: the tiling failed). */
int evk_sim_tiling(const evk_run_config* cfg);

/* What the host half produced, handed to the kernel half. */
typedef struct evk_tiling {
    uint32_t block_dim;
    uint64_t tiling_key;
    uint32_t schedule_mode;
    const uint8_t* data;            /* the tiling bytes (at most 64 KiB) */
    uint64_t size;
    int32_t n_workspace;            /* GetWorkspaceSizes entries (at most 64) */
    const uint64_t* workspace_sizes;
} evk_tiling;

/* The kernel half alone: no OpDef registry, no TilingFunc (the library need not contain host code). Inputs and
 * outputs as in evk_sim_run (their names name them in the report), attributes ignored; the kernel runs once per
 * block with (inputs..., outputs..., workspace, tiling). Return codes as evk_sim_run. */
int evk_sim_run_kernel(const evk_run_config* cfg, const evk_tiling* tiling);

/* The GM window: kernel GM addresses lie in [base, base + size), where nothing but a read-only view of the tiling is
 * mapped, so a raw dereference faults (gm_raw_access). Set it once, before the first run, at a 1 GiB-aligned base
 * whose terabyte is unused (0: the default, 33 TiB); every library loaded into one process needs its own.
 * evk_sim_set_window returns 0 (1: see evk_sim_last_error); evk_sim_window returns the base (0: not set yet). */
int evk_sim_set_window(uint64_t base);
uint64_t evk_sim_window(uint64_t* size);

/* Direct launch: arguments passed to the kernel in the given order. */
enum { EVK_ARG_INPUT = 0, EVK_ARG_OUTPUT = 1, EVK_ARG_WORKSPACE = 2, EVK_ARG_TILING = 3, EVK_ARG_INOUT = 4 };
typedef struct evk_buffer {
    const char* name;
    int32_t kind;                   /* EVK_ARG_*: outputs get the overlap check (and poisoning) */
    void* data;
    uint64_t nbytes;
} evk_buffer;
typedef struct evk_launch_config {
    evk_kernel_fn kernel;
    const char* kernel_name;        /* for the report */
    uint32_t block_dim;
    int32_t n_args;
    const evk_buffer* args;
    uint64_t tiling_key;
    const char* report_path;
    evk_options options;
} evk_launch_config;
int evk_sim_launch(const evk_launch_config* cfg); /* return codes as evk_sim_run */

/* Spec-file CLI around evk_sim_run: `launcher SPEC` (format in README.md). */
int evk_sim_main(int argc, char** argv, evk_kernel_fn kernel);
/* Argument CLI around evk_sim_launch:
 *   launcher --block-dim N --report PATH [--tiling-key K] [--in FILE] [--inout FILE]
 *            [--out FILE:NBYTES] [--workspace NBYTES] [--tiling FILE] [--option KEY=VALUE] ...
 * (buffers become kernel arguments in command-line order; outputs are written back to FILE). */
int evk_sim_launch_main(int argc, char** argv, evk_kernel_fn kernel);

/* Registry queries (JSON strings owned by the runtime, valid until the next call). */
const char* evk_sim_list_ops(void);                 /* ["AddCustom", ...] */
const char* evk_sim_describe_op(const char* op);     /* declared inputs/outputs/attrs; NULL if unknown */
const char* evk_sim_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* EVK_SIM_RUNTIME_H */
