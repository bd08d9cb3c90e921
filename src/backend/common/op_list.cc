// What op_observer.h's op list generates besides OpKind: each op's name and availability, and
// the capability query and refusal that a declared op's default implementation uses.
#include <fmt/format.h>

#include "backend/backend.h"

namespace lumen::backend {

namespace {

struct OpInfo {
  std::string_view name;
  OpAvailability availability;
};

// Written out by the same list as OpKind, in the same order: entry k describes OpKind k.
constexpr OpInfo kOps[] = {
#define LUMEN_OP_INFO(kind, name, availability) \
  {#name, [] {                                  \
     using namespace op_availability;           \
     return availability;                       \
   }()},
    LUMEN_BACKEND_OPS(LUMEN_OP_INFO)
#undef LUMEN_OP_INFO
};
static_assert(std::size(kOps) == kOpKindCount);

}  // namespace

std::string_view op_name(OpKind kind) { return kOps[static_cast<size_t>(kind)].name; }

OpAvailability op_availability_of(OpKind kind) { return kOps[static_cast<size_t>(kind)].availability; }

bool Backend::has_op(OpKind op) const {
  const OpAvailability a = op_availability_of(op);
  switch (a.kind) {
    case OpAvailability::Kind::Every: return true;
    case OpAvailability::Kind::Feature: return supports(a.feature);
    case OpAvailability::Kind::Declared: return do_has_op(op);
  }
  return false;
}

void Backend::require_op(OpKind op) const {
  if (!has_op(op)) refuse_op(op);
}

void Backend::refuse_op(OpKind op) const {
  fail("the {} backend has no {} (Backend::has_op({}) is false: run the ops it fuses instead)", name(), op_name(op),
       op_name(op));
}

}  // namespace lumen::backend
