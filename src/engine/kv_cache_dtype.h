#pragma once
// The KV cache's element type as the public API names it (lumen::KvCacheDtype) and as the
// backend stores it (tensor::DType).
#include "lumen/engine_config.h"
#include "tensor/dtype.h"

namespace lumen::engine {

tensor::DType kv_tensor_type(KvCacheDtype dtype);

}  // namespace lumen::engine
