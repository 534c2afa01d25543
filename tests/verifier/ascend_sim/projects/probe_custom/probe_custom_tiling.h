#include "register/tilingdata_base.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(ProbeCustomTilingData)
  TILING_DATA_FIELD_DEF(uint32_t, coreNum);
  TILING_DATA_FIELD_DEF(uint64_t, ubSize);
  TILING_DATA_FIELD_DEF(uint32_t, ndim);
  TILING_DATA_FIELD_DEF_ARR(int64_t, 4, dims);
  TILING_DATA_FIELD_DEF(int32_t, dtype);
  TILING_DATA_FIELD_DEF(float, alpha);
  TILING_DATA_FIELD_DEF(int64_t, count);
  TILING_DATA_FIELD_DEF(uint8_t, flag);
  TILING_DATA_FIELD_DEF(int64_t, dimsSum);
  TILING_DATA_FIELD_DEF(uint32_t, socIs910b);
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(ProbeCustom, ProbeCustomTilingData)
}
