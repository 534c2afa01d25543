// EvoKernel Ascend C CPU emulator: the host side of an operator project.
//
// Our own implementation of the host API subset an msopgen-style operator project uses: ge status
// and dtype codes, gert::TilingContext / InferShapeContext with real shapes and attributes,
// platform_ascendc::PlatformAscendC (910B figures), and ops::OpDef registration (OP_ADD) into a
// registry the emulator runtime reads by op name.
#ifndef EVK_SIM_HOST_H
#define EVK_SIM_HOST_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <iostream>  // CANN's op-definition headers include it: host code prints with std::cout unincluded
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "evk_sim/common.h"

// ---------------------------------------------------------------------------------------------
// ge
// ---------------------------------------------------------------------------------------------
namespace ge {
using graphStatus = uint32_t;
constexpr graphStatus GRAPH_SUCCESS = 0;
constexpr graphStatus GRAPH_FAILED = 0xFFFFFFFFu;
constexpr graphStatus GRAPH_PARAM_INVALID = 50331649u;
constexpr graphStatus GRAPH_NOT_CHANGED = 1343242304u;

enum DataType {
    DT_FLOAT = 0,
    DT_FLOAT16 = 1,
    DT_INT8 = 2,
    DT_INT32 = 3,
    DT_UINT8 = 4,
    DT_INT16 = 6,
    DT_UINT16 = 7,
    DT_UINT32 = 8,
    DT_INT64 = 9,
    DT_UINT64 = 10,
    DT_DOUBLE = 11,
    DT_BOOL = 12,
    DT_STRING = 13,
    DT_COMPLEX64 = 16,
    DT_COMPLEX128 = 17,
    DT_BF16 = 27,
    DT_UNDEFINED = 28,
    DT_MAX = 255,
};

enum Format {
    FORMAT_NCHW = 0,
    FORMAT_NHWC = 1,
    FORMAT_ND = 2,
    FORMAT_NC1HWC0 = 3,
    FORMAT_FRACTAL_Z = 4,
    FORMAT_FRACTAL_NZ = 29,
    FORMAT_NCDHW = 30,
    FORMAT_NDHWC = 32,
    FORMAT_RESERVED = 40,
    FORMAT_ALL = 41,
    FORMAT_NULL = 42,
    FORMAT_MAX = 0xff,
};

class AscendString {
public:
    AscendString() = default;
    AscendString(const char* s) : s_(s ? s : "") {}
    const char* GetString() const { return s_.c_str(); }
    size_t GetLength() const { return s_.size(); }
    bool operator==(const AscendString& o) const { return s_ == o.s_; }

private:
    std::string s_;
};

class Operator {};

class TypeUtils {
public:
    static std::string DataTypeToSerialString(DataType dt);
    static std::string FormatToSerialString(Format f) { return f == FORMAT_ND ? "ND" : "FORMAT_" + std::to_string(int(f)); }
    // graph/utils/type_utils.h: the element size of a dtype in bytes; false for a type without one
    static bool GetDataTypeLength(DataType dt, uint32_t& length);
};

// element size in bytes (0 for unknown)
inline int GetSizeByDataType(DataType dt) {
    switch (dt) {
        case DT_FLOAT: case DT_INT32: case DT_UINT32: return 4;
        case DT_FLOAT16: case DT_BF16: case DT_INT16: case DT_UINT16: return 2;
        case DT_INT8: case DT_UINT8: case DT_BOOL: return 1;
        case DT_INT64: case DT_UINT64: case DT_DOUBLE: case DT_COMPLEX64: return 8;
        case DT_COMPLEX128: return 16;
        default: return 0;
    }
}
inline bool TypeUtils::GetDataTypeLength(DataType dt, uint32_t& length) {
    const int n = GetSizeByDataType(dt);
    if (n <= 0) return false;
    length = static_cast<uint32_t>(n);
    return true;
}
}  // namespace ge

namespace fe {
class PlatFormInfos {};
}  // namespace fe

// ---------------------------------------------------------------------------------------------
// gert: shapes, tensors, attributes, contexts
// ---------------------------------------------------------------------------------------------
namespace gert {

class Shape {
public:
    static constexpr size_t kMaxDimNum = 25;
    static constexpr int64_t kInvalidDimValue = std::numeric_limits<int64_t>::min();
    Shape() = default;
    Shape(std::initializer_list<int64_t> dims) {
        for (int64_t d : dims) AppendDim(d);
    }
    size_t GetDimNum() const { return dim_num_; }
    void SetDimNum(size_t n) { dim_num_ = n > kMaxDimNum ? kMaxDimNum : n; }
    int64_t GetDim(size_t i) const { return i < dim_num_ ? dims_[i] : kInvalidDimValue; }
    void SetDim(size_t i, int64_t v) {
        if (i < kMaxDimNum) {
            dims_[i] = v;
            if (i >= dim_num_) dim_num_ = i + 1;
        }
    }
    Shape& AppendDim(int64_t v) {
        if (dim_num_ < kMaxDimNum) dims_[dim_num_++] = v;
        return *this;
    }
    int64_t GetShapeSize() const {
        int64_t s = 1;
        for (size_t i = 0; i < dim_num_; ++i) s *= dims_[i];
        return s;
    }
    bool IsScalar() const { return dim_num_ == 0; }
    int64_t operator[](size_t i) const { return dims_[i < kMaxDimNum ? i : 0]; }
    int64_t& operator[](size_t i) { return dims_[i < kMaxDimNum ? i : 0]; }
    bool operator==(const Shape& o) const {
        if (dim_num_ != o.dim_num_) return false;
        for (size_t i = 0; i < dim_num_; ++i)
            if (dims_[i] != o.dims_[i]) return false;
        return true;
    }
    bool operator!=(const Shape& o) const { return !(*this == o); }

private:
    size_t dim_num_ = 0;
    int64_t dims_[kMaxDimNum] = {};
};

class StorageShape {
public:
    StorageShape() = default;
    StorageShape(std::initializer_list<int64_t> origin, std::initializer_list<int64_t> storage)
        : origin_(origin), storage_(storage) {}
    const Shape& GetOriginShape() const { return origin_; }
    const Shape& GetStorageShape() const { return storage_; }
    Shape& MutableOriginShape() { return origin_; }
    Shape& MutableStorageShape() { return storage_; }
    const Shape& GetShape() const { return storage_; }

    Shape origin_;
    Shape storage_;
};

class CompileTimeTensorDesc {
public:
    ge::DataType GetDataType() const { return dtype_; }
    ge::Format GetStorageFormat() const { return format_; }
    ge::Format GetOriginFormat() const { return format_; }
    ge::Format GetFormat() const { return format_; }
    ge::DataType dtype_ = ge::DT_FLOAT;
    ge::Format format_ = ge::FORMAT_ND;
};

class Tensor {
public:
    const Shape& GetOriginShape() const { return shape_.GetOriginShape(); }
    const Shape& GetStorageShape() const { return shape_.GetStorageShape(); }
    const StorageShape& GetShape() const { return shape_; }
    int64_t GetShapeSize() const { return shape_.GetStorageShape().GetShapeSize(); }
    ge::DataType GetDataType() const { return dtype_; }
    ge::Format GetStorageFormat() const { return format_; }
    ge::Format GetOriginFormat() const { return format_; }
    const void* GetAddr() const { return data_; }
    template <typename T> const T* GetData() const { return static_cast<const T*>(data_); }
    size_t GetSize() const { return nbytes_; }

    StorageShape shape_;
    ge::DataType dtype_ = ge::DT_FLOAT;
    ge::Format format_ = ge::FORMAT_ND;
    const void* data_ = nullptr;
    size_t nbytes_ = 0;
};

template <typename T> class TypedContinuousVector {
public:
    size_t GetSize() const { return v_.size(); }
    size_t GetCapacity() const { return v_.size(); }
    const T* GetData() const { return v_.data(); }
    const T& operator[](size_t i) const { return v_[i]; }
    std::vector<T> v_;
};
using ContinuousVector = TypedContinuousVector<int64_t>;

// One attribute value (the kind is the OpDef's declaration).
struct AttrValue {
    enum Kind { NONE = 0, INT, FLOAT, BOOL, STR, LIST_INT, LIST_FLOAT, LIST_BOOL };
    Kind kind = NONE;
    int64_t i = 0;
    float f = 0.0f;
    bool b = false;
    std::string s;
    TypedContinuousVector<int64_t> li;
    TypedContinuousVector<float> lf;
    TypedContinuousVector<bool> lb;
    // the value's bytes, zero-padded to 16, for an accessor of another scalar type (see RuntimeAttrs::pick)
    alignas(8) mutable unsigned char raw[16] = {};
    // every kind has bytes a scalar accessor can be given: a list's are its (element count, element count)
    // header as two 64-bit words (CANN keeps a list attribute as a ContinuousVector, a capacity and size
    // header before the elements; an assumption about its layout)
    bool scalar() const { return kind != NONE; }
    const void* ptr() const {
        switch (kind) {
            case INT: return &i;
            case FLOAT: return &f;
            case BOOL: return &b;
            case STR: return s.c_str();
            default: {
                const uint64_t n = kind == LIST_INT ? li.v_.size() : kind == LIST_FLOAT ? lf.v_.size() : lb.v_.size();
                std::memcpy(raw, &n, sizeof n);
                std::memcpy(raw + 8, &n, sizeof n);
                return raw;
            }
        }
    }
    size_t bytes() const {
        return kind == INT ? sizeof i : kind == FLOAT ? sizeof f : kind == BOOL ? sizeof b
             : kind == STR ? (s.size() + 1 < sizeof raw ? s.size() + 1 : sizeof raw) : sizeof raw;
    }
};

class RuntimeAttrs {
public:
    size_t GetAttrNum() const { return attrs_.size(); }
    const int64_t* GetInt(size_t i) const { return pick<int64_t>(i, AttrValue::INT); }
    const float* GetFloat(size_t i) const { return pick<float>(i, AttrValue::FLOAT); }
    const bool* GetBool(size_t i) const { return pick<bool>(i, AttrValue::BOOL); }
    const char* GetStr(size_t i) const { return pick<char>(i, AttrValue::STR); }
    const TypedContinuousVector<int64_t>* GetListInt(size_t i) const {
        return has(i, AttrValue::LIST_INT) ? &attrs_[i].li : nullptr;
    }
    const TypedContinuousVector<float>* GetListFloat(size_t i) const {
        return has(i, AttrValue::LIST_FLOAT) ? &attrs_[i].lf : nullptr;
    }
    template <typename T> const T* GetAttrPointer(size_t i) const {
        if (i >= attrs_.size()) return nullptr;
        const AttrValue& a = attrs_[i];
        if constexpr (std::is_same<T, float>::value) return pick<float>(i, AttrValue::FLOAT);
        else if constexpr (std::is_same<T, int64_t>::value) return pick<int64_t>(i, AttrValue::INT);
        else if constexpr (std::is_same<T, bool>::value) return pick<bool>(i, AttrValue::BOOL);
        else if constexpr (std::is_same<T, char>::value) return pick<char>(i, AttrValue::STR);
        else if constexpr (std::is_arithmetic<T>::value) return pick<T>(i, a.kind);  // int32_t, double, ...: the bytes
        else if constexpr (std::is_same<T, TypedContinuousVector<int64_t>>::value)
            return a.kind == AttrValue::LIST_INT ? &a.li : nullptr;
        else if constexpr (std::is_same<T, TypedContinuousVector<float>>::value)
            return a.kind == AttrValue::LIST_FLOAT ? &a.lf : nullptr;
        else return nullptr;
    }
    std::vector<AttrValue> attrs_;

private:
    bool has(size_t i, AttrValue::Kind k) const;
    // CANN's attribute accessors return a pointer to the attribute's stored bytes, typed as asked: GetInt on a
    // float attribute reads the float's bytes as an int64 (RuntimeAttrs::GetAttrPointer<T> is a reinterpret
    // cast, and GetInt/GetFloat/GetBool/GetStr are GetAttrPointer of their type). A TilingFunc that asks with
    // the wrong type gets those bytes here too (zero-padded to 16), with a warning naming the attribute,
    // rather than a nullptr CANN would not give (which crashed such TilingFuncs before).
    template <typename T> const T* pick(size_t i, AttrValue::Kind k) const {
        if (!has(i, k)) {
            if (i >= attrs_.size() || !attrs_[i].scalar()) return nullptr;
            const AttrValue& a = attrs_[i];
            unsigned char bytes[sizeof a.raw] = {};
            std::memcpy(bytes, a.ptr(), a.bytes());
            std::memcpy(a.raw, bytes, sizeof a.raw);
            return reinterpret_cast<const T*>(a.raw);
        }
        return reinterpret_cast<const T*>(attrs_[i].ptr());
    }
};

class TilingData {
public:
    void* GetData() { return data_; }
    const void* GetData() const { return data_; }
    size_t GetCapacity() const { return capacity_; }
    size_t GetDataSize() const { return size_; }
    void SetDataSize(size_t size) { size_ = size; }
    template <typename T> TilingData& Append(const T& v) {
        if (size_ + sizeof(T) <= capacity_) {
            std::memcpy(static_cast<uint8_t*>(data_) + size_, &v, sizeof(T));
            size_ += sizeof(T);
        }
        return *this;
    }

    void* data_ = nullptr;
    size_t capacity_ = 0;
    size_t size_ = 0;
};

class TilingContext {
public:
    const StorageShape* GetInputShape(size_t i) const;
    const Tensor* GetInputTensor(size_t i) const;
    const CompileTimeTensorDesc* GetInputDesc(size_t i) const;
    const StorageShape* GetOptionalInputShape(size_t i) const;
    const Tensor* GetOptionalInputTensor(size_t i) const;
    const StorageShape* GetOutputShape(size_t i) const;
    const CompileTimeTensorDesc* GetOutputDesc(size_t i) const;
    const RuntimeAttrs* GetAttrs() const { return attrs_; }
    size_t GetComputeNodeInputNum() const { return inputs_.size(); }
    size_t GetComputeNodeOutputNum() const { return outputs_.size(); }

    ge::graphStatus SetBlockDim(uint32_t block_dim) {
        block_dim_ = block_dim;
        block_dim_set_ = true;
        return ge::GRAPH_SUCCESS;
    }
    uint32_t GetBlockDim() const { return block_dim_; }
    ge::graphStatus SetTilingKey(uint64_t key) {
        tiling_key_ = key;
        return ge::GRAPH_SUCCESS;
    }
    uint64_t GetTilingKey() const { return tiling_key_; }
    ge::graphStatus SetScheduleMode(uint32_t mode) {
        schedule_mode_ = mode;
        return ge::GRAPH_SUCCESS;
    }
    ge::graphStatus SetNeedAtomic(bool) { return ge::GRAPH_SUCCESS; }
    TilingData* GetRawTilingData() { return &tiling_; }
    template <typename T> T* GetTilingData() {
        if (tiling_.size_ < sizeof(T)) tiling_.size_ = sizeof(T);
        return static_cast<T*>(tiling_.data_);
    }
    size_t* GetWorkspaceSizes(size_t num) {
        if (workspace_.size() < num) workspace_.resize(num, 0);
        return workspace_.data();
    }
    size_t GetWorkspaceNum() const { return workspace_.size(); }
    fe::PlatFormInfos* GetPlatformInfo() const { return &platform_info_; }
    const char* GetNodeName() const { return op_type_.c_str(); }
    const char* GetNodeType() const { return op_type_.c_str(); }
    template <typename T> const T* GetCompileInfo() const { return nullptr; }

    // filled by the runtime
    std::string op_type_;
    std::vector<Tensor> inputs_;
    std::vector<Tensor> outputs_;
    std::vector<CompileTimeTensorDesc> input_descs_;
    std::vector<CompileTimeTensorDesc> output_descs_;
    const RuntimeAttrs* attrs_ = nullptr;
    uint32_t block_dim_ = 0;
    bool block_dim_set_ = false;
    uint64_t tiling_key_ = 0;
    uint32_t schedule_mode_ = 0;
    TilingData tiling_;
    std::vector<size_t> workspace_;
    mutable fe::PlatFormInfos platform_info_;
};

class InferShapeContext {
public:
    const Shape* GetInputShape(size_t i) const { return i < inputs_.size() ? &inputs_[i] : nullptr; }
    const Shape* GetOptionalInputShape(size_t i) const { return GetInputShape(i); }
    const Shape* GetRequiredInputShape(size_t i) const { return GetInputShape(i); }
    const Tensor* GetInputTensor(size_t i) const { return i < tensors_.size() ? &tensors_[i] : nullptr; }
    Shape* GetOutputShape(size_t i) { return i < outputs_.size() ? &outputs_[i] : nullptr; }
    const RuntimeAttrs* GetAttrs() const { return attrs_; }
    const char* GetNodeName() const { return op_type_.c_str(); }

    std::string op_type_;
    std::vector<Shape> inputs_;
    std::vector<Tensor> tensors_;
    std::vector<Shape> outputs_;
    const RuntimeAttrs* attrs_ = nullptr;
};

class InferDataTypeContext {
public:
    ge::DataType GetInputDataType(size_t i) const { return i < inputs_.size() ? inputs_[i] : ge::DT_UNDEFINED; }
    ge::DataType GetOptionalInputDataType(size_t i) const { return GetInputDataType(i); }
    ge::DataType GetOutputDataType(size_t i) const { return i < outputs_.size() ? outputs_[i] : ge::DT_UNDEFINED; }
    ge::graphStatus SetOutputDataType(size_t i, ge::DataType dt) {
        if (i >= outputs_.size()) return ge::GRAPH_FAILED;
        outputs_[i] = dt;
        return ge::GRAPH_SUCCESS;
    }
    const RuntimeAttrs* GetAttrs() const { return attrs_; }

    std::vector<ge::DataType> inputs_;
    std::vector<ge::DataType> outputs_;
    const RuntimeAttrs* attrs_ = nullptr;
};

class InferShapeRangeContext {};
class TilingParseContext {};

using TilingKernelFunc = ge::graphStatus (*)(TilingContext*);
using InferShapeKernelFunc = ge::graphStatus (*)(InferShapeContext*);
using InferDataTypeKernelFunc = ge::graphStatus (*)(InferDataTypeContext*);

// IMPL_OP_OPTILING(Op).Tiling(fn) / IMPL_OP_INFERSHAPE(Op).InferShape(fn) style registration.
class OpImplRegisterV2 {
public:
    using TilingKernelFunc = gert::TilingKernelFunc;
    using InferShapeKernelFunc = gert::InferShapeKernelFunc;
    using InferDataTypeKernelFunc = gert::InferDataTypeKernelFunc;
    explicit OpImplRegisterV2(const char* op_type) : op_type_(op_type) {}
    OpImplRegisterV2& Tiling(TilingKernelFunc f, size_t = 0);
    OpImplRegisterV2& InferShape(InferShapeKernelFunc f);
    OpImplRegisterV2& InferDataType(InferDataTypeKernelFunc f);
    template <typename... A> OpImplRegisterV2& TilingParse(A...) { return *this; }
    template <typename CI, typename... A> OpImplRegisterV2& TilingParse(A...) { return *this; }
    template <typename... A> OpImplRegisterV2& InferShapeRange(A...) { return *this; }
    template <typename... A> OpImplRegisterV2& TilingInputsDataDependency(A...) { return *this; }
    template <typename... A> OpImplRegisterV2& InputsDataDependency(A...) { return *this; }
    template <typename... A> OpImplRegisterV2& PrivateAttr(A...) { return *this; }

private:
    std::string op_type_;
};
}  // namespace gert

#define EVK_CAT_(a, b) a##b
#define EVK_CAT(a, b) EVK_CAT_(a, b)
#define IMPL_OP(op) static ::gert::OpImplRegisterV2 EVK_CAT(evk_impl_op_, __COUNTER__) = ::gert::OpImplRegisterV2(#op)
#define IMPL_OP_OPTILING(op) IMPL_OP(op)
#define IMPL_OP_INFERSHAPE(op) IMPL_OP(op)

// ---------------------------------------------------------------------------------------------
// platform_ascendc (Ascend 910B figures, overridable by the runtime config)
// ---------------------------------------------------------------------------------------------
namespace platform_ascendc {
enum class CoreMemType { L0_A = 0, L0_B = 1, L0_C = 2, L1 = 3, L2 = 4, UB = 5, HBM = 6, FB = 7, BT = 8, RESERVED };
enum class SocVersion { ASCEND910 = 0, ASCEND910B, ASCEND910_93, ASCEND310P, ASCEND310B, ASCEND910_95, RESERVED_VERSION };

class PlatformAscendC {
public:
    PlatformAscendC() = default;
    explicit PlatformAscendC(fe::PlatFormInfos*) {}
    uint32_t GetCoreNum() const;
    uint32_t GetCoreNumAic() const;
    uint32_t GetCoreNumAiv() const;
    uint32_t GetCoreNumVector() const { return GetCoreNumAiv(); }
    void GetCoreMemSize(const CoreMemType& memType, uint64_t& size) const;
    void GetCoreMemBw(const CoreMemType& memType, uint64_t& bwSize) const;
    SocVersion GetSocVersion() const { return SocVersion::ASCEND910B; }
    uint32_t GetLibApiWorkSpaceSize() const { return 16u * 1024u * 1024u; }
    uint32_t GetResGroupBarrierWorkSpaceSize() const { return 0; }
    uint32_t CalcTschBlockDim(uint32_t sliceNum, uint32_t aicCoreNum, uint32_t aivCoreNum) const {
        (void)aicCoreNum;
        (void)aivCoreNum;
        return sliceNum;
    }
    fe::PlatFormInfos* GetPlatFormInfo() const { return nullptr; }
};

class PlatformAscendCManager {
public:
    static PlatformAscendC* GetInstance() {
        static PlatformAscendC p;
        return &p;
    }
    static PlatformAscendC* GetInstance(const char*) { return GetInstance(); }
};
}  // namespace platform_ascendc

// ---------------------------------------------------------------------------------------------
// ops::OpDef registration
// ---------------------------------------------------------------------------------------------
namespace ops {
enum Option { IGNORE = 0, OPTIONAL = 1, REQUIRED = 2, DYNAMIC = 3, VIRTUAL = 4 };
enum class DependScope : uint32_t { ALL = 0, TILING = 1, INVALID_SCOPE };
enum class FollowType : uint32_t { ALL = 0, DTYPE = 1, FORMAT = 2, SHAPE = 3, INVALID_TYPE };
enum class ItemFindStatus { ITEM_FIND = 0, ITEM_NOEXIST = 1 };

class OpParamDef {
public:
    explicit OpParamDef(const char* name) : name_(name ? name : "") {}
    OpParamDef& ParamType(Option t) { type_ = t; return *this; }
    OpParamDef& DataType(std::vector<ge::DataType> v) { dtypes_ = v; return *this; }
    OpParamDef& DataTypeList(std::vector<ge::DataType> v) { dtypes_ = v; return *this; }
    OpParamDef& Format(std::vector<ge::Format> v) { formats_ = v; return *this; }
    OpParamDef& FormatList(std::vector<ge::Format> v) { formats_ = v; return *this; }
    OpParamDef& UnknownShapeFormat(std::vector<ge::Format>) { return *this; }
    OpParamDef& ValueDepend(Option) { value_depend_ = true; return *this; }
    OpParamDef& ValueDepend(Option, DependScope) { value_depend_ = true; return *this; }
    OpParamDef& IgnoreContiguous() { return *this; }
    OpParamDef& AutoContiguous() { return *this; }
    OpParamDef& Scalar() { return *this; }
    OpParamDef& ScalarList() { return *this; }
    OpParamDef& To(ge::DataType) { return *this; }
    OpParamDef& To(const char*) { return *this; }
    OpParamDef& Follow(const char*) { return *this; }
    OpParamDef& Follow(const char*, FollowType) { return *this; }
    OpParamDef& OutputShapeDependOnCompute() { return *this; }
    OpParamDef& InitValue(uint64_t) { return *this; }
    OpParamDef& Comment(const char*) { return *this; }
    OpParamDef& Version(uint32_t) { return *this; }

    std::string name_;
    Option type_ = REQUIRED;
    std::vector<ge::DataType> dtypes_;
    std::vector<ge::Format> formats_;
    bool value_depend_ = false;
};

class OpAttrDef {
public:
    explicit OpAttrDef(const char* name) : name_(name ? name : "") {}
    OpAttrDef& AttrType(Option t) { type_ = t; return *this; }
    OpAttrDef& Bool(bool v) { value_.kind = gert::AttrValue::BOOL; value_.b = v; has_default_ = true; return *this; }
    OpAttrDef& Bool() { value_.kind = gert::AttrValue::BOOL; return *this; }
    OpAttrDef& Float(float v) { value_.kind = gert::AttrValue::FLOAT; value_.f = v; has_default_ = true; return *this; }
    OpAttrDef& Float() { value_.kind = gert::AttrValue::FLOAT; return *this; }
    OpAttrDef& Int(int64_t v) { value_.kind = gert::AttrValue::INT; value_.i = v; has_default_ = true; return *this; }
    OpAttrDef& Int() { value_.kind = gert::AttrValue::INT; return *this; }
    OpAttrDef& String(const char* v) { value_.kind = gert::AttrValue::STR; value_.s = v ? v : ""; has_default_ = true; return *this; }
    OpAttrDef& String() { value_.kind = gert::AttrValue::STR; return *this; }
    OpAttrDef& ListInt(std::vector<int64_t> v) { value_.kind = gert::AttrValue::LIST_INT; value_.li.v_ = v; has_default_ = true; return *this; }
    OpAttrDef& ListInt() { value_.kind = gert::AttrValue::LIST_INT; return *this; }
    OpAttrDef& ListFloat(std::vector<float> v) { value_.kind = gert::AttrValue::LIST_FLOAT; value_.lf.v_ = v; has_default_ = true; return *this; }
    OpAttrDef& ListFloat() { value_.kind = gert::AttrValue::LIST_FLOAT; return *this; }
    OpAttrDef& ListBool(std::vector<bool> v) {
        value_.kind = gert::AttrValue::LIST_BOOL;
        value_.lb.v_.assign(v.begin(), v.end());
        has_default_ = true;
        return *this;
    }
    OpAttrDef& Comment(const char*) { return *this; }
    OpAttrDef& Version(uint32_t) { return *this; }

    std::string name_;
    Option type_ = REQUIRED;
    gert::AttrValue value_;
    bool has_default_ = false;
};

class OpAICoreConfig {
public:
    OpAICoreConfig() = default;
    explicit OpAICoreConfig(const char*) {}
    OpAICoreConfig& DynamicCompileStaticFlag(bool) { return *this; }
    OpAICoreConfig& DynamicFormatFlag(bool) { return *this; }
    OpAICoreConfig& DynamicRankSupportFlag(bool) { return *this; }
    OpAICoreConfig& DynamicShapeSupportFlag(bool) { return *this; }
    OpAICoreConfig& NeedCheckSupportFlag(bool) { return *this; }
    OpAICoreConfig& PrecisionReduceFlag(bool) { return *this; }
    OpAICoreConfig& ExtendCfgInfo(const char*, const char*) { return *this; }
    OpParamDef& Input(const char* name) { ins_.emplace_back(name); return ins_.back(); }
    OpParamDef& Output(const char* name) { outs_.emplace_back(name); return outs_.back(); }

private:
    std::deque<OpParamDef> ins_, outs_;
};

class OpAICoreDef {
public:
    OpAICoreDef& SetTiling(gert::TilingKernelFunc f) { tiling_ = f; return *this; }
    template <typename F> OpAICoreDef& SetTilingParse(F) { return *this; }
    template <typename F> OpAICoreDef& SetCheckSupport(F) { return *this; }
    template <typename F> OpAICoreDef& SetOpSelectFormat(F) { return *this; }
    template <typename F> OpAICoreDef& SetOpSupportInfo(F) { return *this; }
    template <typename F> OpAICoreDef& SetOpSpecInfo(F) { return *this; }
    OpAICoreDef& AddConfig(const char* soc) { socs_.push_back(soc ? soc : ""); return *this; }
    OpAICoreDef& AddConfig(const char* soc, OpAICoreConfig&) { return AddConfig(soc); }
    OpAICoreDef& AddConfig(const char* soc, OpAICoreConfig&&) { return AddConfig(soc); }

    gert::TilingKernelFunc tiling_ = nullptr;
    std::vector<std::string> socs_;
};

class OpDef {
public:
    explicit OpDef(const char* type) : type_(type ? type : "") {}
    virtual ~OpDef() = default;
    OpParamDef& Input(const char* name) { inputs_.emplace_back(name); return inputs_.back(); }
    OpParamDef& Output(const char* name) { outputs_.emplace_back(name); return outputs_.back(); }
    OpAttrDef& Attr(const char* name) { attrs_.emplace_back(name); return attrs_.back(); }
    OpDef& SetInferShape(gert::InferShapeKernelFunc f) { infer_shape_ = f; return *this; }
    OpDef& SetInferDataType(gert::InferDataTypeKernelFunc f) { infer_dtype_ = f; return *this; }
    template <typename F> OpDef& SetInferShapeRange(F) { return *this; }
    OpAICoreDef& AICore() { return aicore_; }
    OpDef& Comment(const char*) { return *this; }
    template <typename... A> OpDef& FormatMatchMode(A...) { return *this; }
    template <typename... A> OpDef& EnableFallBack(A...) { return *this; }

    std::string type_;
    std::deque<OpParamDef> inputs_;
    std::deque<OpParamDef> outputs_;
    std::deque<OpAttrDef> attrs_;
    gert::InferShapeKernelFunc infer_shape_ = nullptr;
    gert::InferDataTypeKernelFunc infer_dtype_ = nullptr;
    OpAICoreDef aicore_;
};

using OpDefCreator = OpDef* (*)(const char*);
class OpDefRegisterer {
public:
    OpDefRegisterer(const char* name, OpDefCreator creator);
};
}  // namespace ops

#define OP_ADD(opType, ...)                                                                       \
    static ::ops::OpDefRegisterer EVK_CAT(evk_op_def_reg_, opType)(                               \
        #opType, [](const char* n) -> ::ops::OpDef* { return new opType(n); })

namespace optiling {}

// ---------------------------------------------------------------------------------------------
// Registry access for the runtime
// ---------------------------------------------------------------------------------------------
namespace evk_sim {
struct OpEntry {
    std::string name;
    ops::OpDef* def = nullptr;                    // from OP_ADD
    gert::TilingKernelFunc tiling = nullptr;       // AICore().SetTiling or IMPL_OP_OPTILING
    gert::InferShapeKernelFunc infer_shape = nullptr;
    gert::InferDataTypeKernelFunc infer_dtype = nullptr;
    std::string tiling_class;                      // REGISTER_TILING_DATA_CLASS
    size_t tiling_class_size = 0;
};
OpEntry* find_op(const std::string& name);  // nullptr when unknown
std::vector<std::string> op_names();

struct PlatformConfig {
    uint32_t core_num_aiv = 40;
    uint32_t core_num_aic = 20;
    uint64_t ub_size = 196608;
    uint64_t l1_size = 524288;
    uint64_t l0a_size = 65536;
    uint64_t l0b_size = 65536;
    uint64_t l0c_size = 131072;
    uint64_t l2_size = 201326592;
    uint64_t hbm_size = 68719476736ull;
};
PlatformConfig& platform();
void register_tiling_class(const char* op, const char* cls, size_t size);
}  // namespace evk_sim

#endif  // EVK_SIM_HOST_H
