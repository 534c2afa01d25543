// FAKE for tests (see ../README.md): only the names pytorch_npu_helper.hpp uses, values from the public
// CANN aclDataType / aclFormat documentation.
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void* aclrtStream;
typedef struct aclOpExecutor aclOpExecutor;

typedef enum {
    ACL_DT_UNDEFINED = -1,
    ACL_FLOAT = 0,
    ACL_FLOAT16 = 1,
    ACL_INT8 = 2,
    ACL_INT32 = 3,
    ACL_UINT8 = 4,
    ACL_INT16 = 6,
    ACL_INT64 = 9,
    ACL_DOUBLE = 11,
    ACL_BOOL = 12,
    ACL_BF16 = 27,
} aclDataType;

typedef enum {
    ACL_FORMAT_UNDEFINED = -1,
    ACL_FORMAT_ND = 2,
} aclFormat;

#ifdef __cplusplus
}
#endif
