// FAKE installed custom-op library (libcust_opapi.so) for tests (see ../README.md): msopgen-style two-phase
// entry points working on CPU pointers. It links against the fake libnnopbase.so, as the real one links
// against CANN's.
#include <string>

#include "fake_acl_objects.h"

namespace {

struct FakeExecutor {
    std::string op;
    std::vector<const aclTensor*> tensors;
    int64_t scale = 0;   // foo: out = x * scale + shift
    double shift = 0;
};

// Element i (row-major over the view) of a float32 tensor, honouring strides, offset and the storage base.
float* element(const aclTensor* t, int64_t linear) {
    int64_t pos = t->offset;
    for (int64_t d = static_cast<int64_t>(t->view.size()) - 1; d >= 0; --d) {
        const int64_t n = t->view[d];
        pos += (linear % n) * t->strides[d];
        linear /= n;
    }
    return static_cast<float*>(t->data) + pos;
}

int64_t numel(const aclTensor* t) {
    int64_t n = 1;
    for (int64_t d : t->view) n *= d;
    return n;
}

std::string stream_text(aclrtStream stream) { return std::to_string(reinterpret_cast<uintptr_t>(stream)); }

// out = x + y over executor tensors {x, y, out}; frees the executor
void add_into(FakeExecutor* e) {
    const aclTensor *x = e->tensors[0], *y = e->tensors[1], *out = e->tensors[2];
    for (int64_t i = 0; i < numel(out); ++i) *element(out, i) = *element(x, i) + *element(y, i);
    delete e;
}

}  // namespace

extern "C" {

aclnnStatus aclnnAddCustomGetWorkspaceSize(const aclTensor* x, const aclTensor* y, const aclTensor* out,
                                           uint64_t* workspaceSize, aclOpExecutor** executor) {
    evk_fake_log("aclnnAddCustomGetWorkspaceSize x{%s} y{%s} out{%s}", evk_fake_describe(x).c_str(),
                 evk_fake_describe(y).c_str(), evk_fake_describe(out).c_str());
    *workspaceSize = 64;
    *executor = reinterpret_cast<aclOpExecutor*>(new FakeExecutor{"add", {x, y, out}});
    return 0;
}

aclnnStatus aclnnAddCustom(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
    auto* e = reinterpret_cast<FakeExecutor*>(executor);
    evk_fake_log("aclnnAddCustom workspace=%s size=%llu stream=%s", workspace ? "set" : "null",
                 static_cast<unsigned long long>(workspaceSize), stream_text(stream).c_str());
    add_into(e);
    return 0;
}

// Foo: x (Int a, Float b, Bool c, ListInt l) -> out = x * a + b + c + sum(l)
aclnnStatus aclnnFooCustomGetWorkspaceSize(const aclTensor* x, int64_t a, double b, bool c, const aclIntArray* l,
                                           const aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor) {
    int64_t sum = 0;
    for (int64_t v : l->values) sum += v;
    evk_fake_log("aclnnFooCustomGetWorkspaceSize a=%lld b=%g c=%d l=%s", static_cast<long long>(a), b, c ? 1 : 0,
                 evk_fake_dims(l->values).c_str());
    *workspaceSize = 0;
    *executor = reinterpret_cast<aclOpExecutor*>(
        new FakeExecutor{"foo", {x, out}, a, b + (c ? 1 : 0) + static_cast<double>(sum)});
    return 0;
}

aclnnStatus aclnnFooCustom(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
    auto* e = reinterpret_cast<FakeExecutor*>(executor);
    evk_fake_log("aclnnFooCustom workspace=%s size=%llu stream=%s", workspace ? "set" : "null",
                 static_cast<unsigned long long>(workspaceSize), stream_text(stream).c_str());
    const aclTensor *x = e->tensors[0], *out = e->tensors[1];
    for (int64_t i = 0; i < numel(out); ++i)
        *element(out, i) = *element(x, i) * static_cast<float>(e->scale) + static_cast<float>(e->shift);
    delete e;
    return 0;
}

// Bar: (TensorList xs, optional tensor, Scalar s, ListFloat f, ListBool b, String mode) -> out = xs[0] + xs[1]
aclnnStatus aclnnBarCustomGetWorkspaceSize(const aclTensorList* xs, const aclTensor* maybe, const aclScalar* s,
                                           const aclFloatArray* f, const aclBoolArray* b, const char* mode,
                                           const aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor) {
    std::string fs, bs;
    for (float v : f->values) fs += (fs.empty() ? "" : ",") + std::to_string(v);
    for (bool v : b->values) bs += v ? "1" : "0";
    evk_fake_log("aclnnBarCustomGetWorkspaceSize n=%zu maybe=%s scalar_dtype=%d scalar=%g floats=[%s] bools=%s mode=%s",
                 xs->items.size(), maybe ? "set" : "null", static_cast<int>(s->dtype), s->as_double, fs.c_str(),
                 bs.c_str(), mode);
    *workspaceSize = 0;
    *executor = reinterpret_cast<aclOpExecutor*>(new FakeExecutor{"bar", {xs->items[0], xs->items[1], out}});
    return 0;
}

aclnnStatus aclnnBarCustom(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
    evk_fake_log("aclnnBarCustom workspace=%s size=%llu stream=%s", workspace ? "set" : "null",
                 static_cast<unsigned long long>(workspaceSize), stream_text(stream).c_str());
    add_into(reinterpret_cast<FakeExecutor*>(executor));
    return 0;
}

// Fail: the first phase rejects its arguments (161002 = ACLNN_ERR_PARAM_INVALID in generated aclnn code).
aclnnStatus aclnnFailCustomGetWorkspaceSize(const aclTensor*, const aclTensor*, uint64_t*, aclOpExecutor**) {
    evk_fake_log("aclnnFailCustomGetWorkspaceSize");
    return 161002;
}

aclnnStatus aclnnFailCustom(void*, uint64_t, aclOpExecutor*, aclrtStream) { return 0; }

}  // extern "C"
