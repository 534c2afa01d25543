// FAKE libnnopbase.so for tests (see ../README.md): aclCreate* / aclDestroy* with the documented
// prototypes, recording what they receive in $EVK_FAKE_ACL_LOG.
#include <cstdio>
#include <cstdlib>

#include "fake_acl_objects.h"

extern "C" {

void evk_fake_log(const char* fmt, ...) {
    const char* path = std::getenv("EVK_FAKE_ACL_LOG");
    if (path == nullptr) return;
    FILE* f = std::fopen(path, "a");
    if (f == nullptr) return;
    va_list ap;
    va_start(ap, fmt);
    std::vfprintf(f, fmt, ap);
    va_end(ap);
    std::fputc('\n', f);
    std::fclose(f);
}

aclTensor* aclCreateTensor(const int64_t* viewDims, uint64_t viewDimsNum, aclDataType dataType, const int64_t* stride,
                           int64_t offset, aclFormat format, const int64_t* storageDims, uint64_t storageDimsNum,
                           void* tensorData) {
    auto* t = new aclTensor();
    t->view.assign(viewDims, viewDims + viewDimsNum);
    t->strides.assign(stride, stride + viewDimsNum);
    t->offset = offset;
    t->dtype = dataType;
    t->format = format;
    t->storage.assign(storageDims, storageDims + storageDimsNum);
    t->data = tensorData;
    evk_fake_log("aclCreateTensor %s", evk_fake_describe(t).c_str());
    return t;
}

aclScalar* aclCreateScalar(void* value, aclDataType dataType) {
    auto* s = new aclScalar();
    s->dtype = dataType;
    if (dataType == ACL_DOUBLE) s->as_double = *static_cast<double*>(value);
    else if (dataType == ACL_INT64) s->as_int = *static_cast<int64_t*>(value);
    else if (dataType == ACL_BOOL) s->as_int = *static_cast<bool*>(value) ? 1 : 0;
    evk_fake_log("aclCreateScalar dtype=%d", static_cast<int>(dataType));
    return s;
}

aclIntArray* aclCreateIntArray(const int64_t* value, uint64_t size) {
    auto* a = new aclIntArray();
    a->values.assign(value, value + size);
    evk_fake_log("aclCreateIntArray %s", evk_fake_dims(a->values).c_str());
    return a;
}

aclFloatArray* aclCreateFloatArray(const float* value, uint64_t size) {
    auto* a = new aclFloatArray();
    a->values.assign(value, value + size);
    evk_fake_log("aclCreateFloatArray n=%llu", static_cast<unsigned long long>(size));
    return a;
}

aclBoolArray* aclCreateBoolArray(const bool* value, uint64_t size) {
    auto* a = new aclBoolArray();
    a->values.assign(value, value + size);
    evk_fake_log("aclCreateBoolArray n=%llu", static_cast<unsigned long long>(size));
    return a;
}

aclTensorList* aclCreateTensorList(const aclTensor* const* value, uint64_t size) {
    auto* l = new aclTensorList();
    l->items.assign(value, value + size);
    evk_fake_log("aclCreateTensorList n=%llu", static_cast<unsigned long long>(size));
    return l;
}

aclnnStatus aclDestroyTensor(const aclTensor* t) {
    evk_fake_log("aclDestroyTensor");
    delete t;
    return 0;
}

aclnnStatus aclDestroyScalar(const aclScalar* s) {
    evk_fake_log("aclDestroyScalar");
    delete s;
    return 0;
}

aclnnStatus aclDestroyIntArray(const aclIntArray* a) {
    evk_fake_log("aclDestroyIntArray");
    delete a;
    return 0;
}

aclnnStatus aclDestroyFloatArray(const aclFloatArray* a) {
    evk_fake_log("aclDestroyFloatArray");
    delete a;
    return 0;
}

aclnnStatus aclDestroyBoolArray(const aclBoolArray* a) {
    evk_fake_log("aclDestroyBoolArray");
    delete a;
    return 0;
}

// As documented: destroying the list also destroys the tensors in it.
aclnnStatus aclDestroyTensorList(const aclTensorList* l) {
    evk_fake_log("aclDestroyTensorList");
    for (const aclTensor* t : l->items) {
        if (t != nullptr) aclDestroyTensor(t);
    }
    delete l;
    return 0;
}

}  // extern "C"
