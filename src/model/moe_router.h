#pragma once
// The router lives with the backends (backend/common/expert_router.h), which route on the
// device where they can; the model's code names it as before.
#include "backend/common/expert_router.h"

namespace lumen::model {

using backend::RouterConfig;
using ExpertGating = backend::ExpertGating;
using backend::common::ExpertGroups;
using backend::common::group_by_expert;
using backend::common::route_tokens;
using backend::common::Routing;

}  // namespace lumen::model
