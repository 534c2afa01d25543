#include "probe_custom_tiling.h"
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"

namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext* context)
{
    ProbeCustomTilingData tiling;
    auto attrs = context->GetAttrs();
    int64_t mode = *attrs->GetAttrPointer<int64_t>(4);
    if (mode == 2) return ge::GRAPH_FAILED;
    if (mode == 4) {  // a wrong input index: nullptr, dereferenced like careless host code does
        tiling.set_ndim(context->GetInputShape(5)->GetStorageShape().GetDimNum());
    }
    platform_ascendc::PlatformAscendC platform(context->GetPlatformInfo());
    uint64_t ub = 0;
    platform.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ub);
    tiling.set_coreNum(platform.GetCoreNumAiv());
    tiling.set_ubSize(ub);
    const gert::Shape& shape = context->GetInputShape(0)->GetStorageShape();
    tiling.set_ndim(shape.GetDimNum());
    int64_t dims[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < shape.GetDimNum() && i < 4; ++i) dims[i] = shape.GetDim(i);
    tiling.set_dims(dims);
    tiling.set_dtype(static_cast<int32_t>(context->GetInputTensor(0)->GetDataType()));
    tiling.set_alpha(*attrs->GetFloat(0));
    tiling.set_count(*attrs->GetInt(1));
    tiling.set_flag(*attrs->GetBool(2) ? 1 : 0);
    const gert::TypedContinuousVector<int64_t>* list = attrs->GetListInt(3);
    int64_t sum = 0;
    for (size_t i = 0; i < list->GetSize(); ++i) sum += list->GetData()[i];
    tiling.set_dimsSum(sum);
    tiling.set_socIs910b(platform.GetSocVersion() == platform_ascendc::SocVersion::ASCEND910B);
    if (mode != 1) context->SetBlockDim(2);
    context->SetTilingKey(7);
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
    if (mode != 3) context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
    size_t* workspace = context->GetWorkspaceSizes(1);
    workspace[0] = 1024;
    return ge::GRAPH_SUCCESS;
}
}

namespace ge {
static ge::graphStatus InferShape(gert::InferShapeContext* context)
{
    gert::Shape* y = context->GetOutputShape(0);
    y->SetDimNum(0);
    y->AppendDim(16);
    return GRAPH_SUCCESS;
}
}

namespace ops {
class ProbeCustom : public OpDef {
public:
    explicit ProbeCustom(const char* name) : OpDef(name)
    {
        this->Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT16}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
        this->Output("y").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
        this->Attr("alpha").AttrType(OPTIONAL).Float(0.5);
        this->Attr("count").AttrType(REQUIRED).Int();
        this->Attr("flag").AttrType(OPTIONAL).Bool(false);
        this->Attr("dims").AttrType(OPTIONAL).ListInt({1, 2});
        this->Attr("mode").AttrType(OPTIONAL).Int(0);
        this->SetInferShape(ge::InferShape);
        this->AICore().SetTiling(optiling::TilingFunc);
        this->AICore().AddConfig("ascend910b");
    }
};
OP_ADD(ProbeCustom);
}
