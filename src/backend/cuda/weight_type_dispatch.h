#pragma once
// One call per weight type with the type as a template argument, for the kernels that read any
// weight row (rows.cu's get_rows and f16 conversion, gemm_experts.cu's staging).
#include "tensor/dtype.h"

namespace lumen::backend::cuda {

// Calls launch.template operator()<F>() for `type`: every type tensor::dequantize_row reads but
// FP8 (a KV cache type only). false: another type (nothing called).
template <typename Launch>
bool dispatch_weight_type(tensor::DType type, Launch&& launch) {
  using tensor::DType;
  switch (type) {
    case DType::F32: launch.template operator()<DType::F32>(); return true;
    case DType::F16: launch.template operator()<DType::F16>(); return true;
    case DType::BF16: launch.template operator()<DType::BF16>(); return true;
    case DType::Q4_0: launch.template operator()<DType::Q4_0>(); return true;
    case DType::Q4_1: launch.template operator()<DType::Q4_1>(); return true;
    case DType::Q5_0: launch.template operator()<DType::Q5_0>(); return true;
    case DType::Q5_1: launch.template operator()<DType::Q5_1>(); return true;
    case DType::Q8_0: launch.template operator()<DType::Q8_0>(); return true;
    case DType::Q8_1: launch.template operator()<DType::Q8_1>(); return true;
    case DType::Q2_K: launch.template operator()<DType::Q2_K>(); return true;
    case DType::Q3_K: launch.template operator()<DType::Q3_K>(); return true;
    case DType::Q4_K: launch.template operator()<DType::Q4_K>(); return true;
    case DType::Q5_K: launch.template operator()<DType::Q5_K>(); return true;
    case DType::Q6_K: launch.template operator()<DType::Q6_K>(); return true;
    case DType::Q8_K: launch.template operator()<DType::Q8_K>(); return true;
    case DType::IQ4_NL: launch.template operator()<DType::IQ4_NL>(); return true;
    case DType::IQ4_XS: launch.template operator()<DType::IQ4_XS>(); return true;
    case DType::MXFP4: launch.template operator()<DType::MXFP4>(); return true;
    default: return false;
  }
}

}  // namespace lumen::backend::cuda
