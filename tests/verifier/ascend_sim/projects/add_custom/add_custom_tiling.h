#include "register/tilingdata_base.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(AddCustomTilingData)
  TILING_DATA_FIELD_DEF(uint32_t, totalLength);
  TILING_DATA_FIELD_DEF(uint32_t, unitLength);   // elements per 32-byte unit
  TILING_DATA_FIELD_DEF(uint32_t, unitsPerBlock);
  TILING_DATA_FIELD_DEF(uint32_t, bigBlocks);    // the first bigBlocks blocks take one unit more
  TILING_DATA_FIELD_DEF(uint32_t, tileLength);   // elements per tile (a multiple of unitLength)
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(AddCustom, AddCustomTilingData)
}
