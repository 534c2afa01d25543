// EvoKernel Ascend C CPU emulator: tiling-data definition macros (host and kernel side).
//
// BEGIN_TILING_DATA_DEF(Cls) ... END_TILING_DATA_DEF; defines one packed class (fields in
// declaration order, no padding, like the kernel-side struct the real build generates) with
// set_<field>/get_<field>, SaveToBuffer and GetDataSize. The same class is compiled into the kernel
// translation unit, where GET_TILING_DATA copies the bytes the TilingFunc saved.
// REGISTER_TILING_DATA_CLASS(Op, Cls) names it for GET_TILING_DATA (EvkRegisteredTilingData).
#ifndef EVK_SIM_REGISTER_TILINGDATA_BASE_H
#define EVK_SIM_REGISTER_TILINGDATA_BASE_H

#include <cstddef>
#include <cstdint>
#include <cstring>

#ifndef EVK_SIM_KERNEL
#include "evk_sim/host.h"
#endif

namespace evk_sim {
// host side: copy `size` bytes of tiling data into the context's buffer (checks the capacity)
void tiling_save(const void* obj, size_t size, void* buf, size_t cap, const char* cls);
}  // namespace evk_sim

#define BEGIN_TILING_DATA_DEF(class_name)       \
    class __attribute__((packed)) class_name {  \
    public:                                     \
        static constexpr const char* EvkClassName() { return #class_name; }

#define TILING_DATA_FIELD_DEF(data_type, field_name)                   \
public:                                                                \
    data_type field_name = data_type();                                \
    void set_##field_name(data_type v) { field_name = v; }             \
    data_type get_##field_name() const { return field_name; }

#define TILING_DATA_FIELD_DEF_ARR(data_type, arr_size, field_name)                                         \
public:                                                                                                    \
    data_type field_name[arr_size] = {};                                                                   \
    void set_##field_name(const data_type* v) { std::memcpy(field_name, v, sizeof(field_name)); }         \
    data_type* get_##field_name() { return field_name; }

#define TILING_DATA_FIELD_DEF_STRUCT(struct_type, field_name)                                              \
public:                                                                                                    \
    struct_type field_name;                                                                                \
    void set_##field_name(const struct_type& v) { std::memcpy(&field_name, &v, sizeof(field_name)); }     \
    struct_type& get_##field_name() { return field_name; }

#define END_TILING_DATA_DEF                                                                                \
public:                                                                                                    \
    void SaveToBuffer(void* buf, size_t cap) const {                                                       \
        ::evk_sim::tiling_save(this, sizeof(*this), buf, cap, EvkClassName());                            \
    }                                                                                                      \
    size_t GetDataSize() const { return sizeof(*this); }                                                   \
    }

// Complete declarations: works with or without a trailing ';' (an empty declaration).
#ifdef EVK_SIM_KERNEL
#define REGISTER_TILING_DATA_CLASS(op_type, class_name) using EvkRegisteredTilingData = class_name;
#else
#define REGISTER_TILING_DATA_CLASS(op_type, class_name)                                                   \
    using EvkRegisteredTilingData = class_name;                                                            \
    static const int evk_tiling_reg_##op_type =                                                            \
        (::evk_sim::register_tiling_class(#op_type, #class_name, sizeof(class_name)), 0);
#endif

#endif  // EVK_SIM_REGISTER_TILINGDATA_BASE_H
