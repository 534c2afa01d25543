// FAKE for tests (see ../README.md): what our fake libnnopbase.so stores in the opaque aclnn objects, shared
// with the fake custom-op library. The real layouts are CANN-internal; these only serve the CPU run test.
#pragma once

#include <cstdarg>
#include <cstdint>
#include <string>
#include <vector>

#include "acl/acl_base.h"

struct aclTensor {
    std::vector<int64_t> view;
    std::vector<int64_t> strides;
    int64_t offset = 0;
    aclDataType dtype = ACL_DT_UNDEFINED;
    aclFormat format = ACL_FORMAT_UNDEFINED;
    std::vector<int64_t> storage;
    void* data = nullptr;
};
struct aclScalar {
    aclDataType dtype = ACL_DT_UNDEFINED;
    double as_double = 0;
    int64_t as_int = 0;
};
struct aclIntArray { std::vector<int64_t> values; };
struct aclFloatArray { std::vector<float> values; };
struct aclBoolArray { std::vector<bool> values; };
struct aclTensorList { std::vector<const aclTensor*> items; };

typedef int32_t aclnnStatus;

extern "C" {
// Appends one line to the file named by $EVK_FAKE_ACL_LOG (no-op when unset).
void evk_fake_log(const char* fmt, ...);
}

inline std::string evk_fake_dims(const std::vector<int64_t>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s + "]";
}

inline std::string evk_fake_describe(const aclTensor* t) {
    if (t == nullptr) return "null";
    return "view=" + evk_fake_dims(t->view) + " strides=" + evk_fake_dims(t->strides) +
           " offset=" + std::to_string(t->offset) + " dtype=" + std::to_string(static_cast<int>(t->dtype)) +
           " format=" + std::to_string(static_cast<int>(t->format)) + " storage=" + evk_fake_dims(t->storage);
}
