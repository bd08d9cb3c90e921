#pragma once
// The one hook through which code outside a backend watches it: the profiler, the test
// backends' fault injection and the step recorder are observers, not wrappers. A wrapper had to
// forward every op and capability by hand, and each one it forgot was silently lost (a profiled
// backend once reported no tree attention). An observer sees each call of the Backend's public
// methods, after its arguments were checked: before_op just before the backend runs it,
// after_op once it returned (not when it threw).
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "backend/backend_needs.h"
#include "backend/backend_types.h"

namespace lumen::backend {

class Buffer;

// Which backends run an op (Backend::has_op):
//   every:      all of them (a pure virtual do_*, or a default composed of other ops);
//   feature(F): those that support BackendFeature F; the base class's do_* refuses;
//   declared:   those whose do_has_op says so; the base class's do_* refuses. A new op starts
//               here: it needs a kernel on the CPU only, and its callers ask has_op first and
//               otherwise run the ops it fuses (CONTRIBUTING.md, "Add a backend op").
struct OpAvailability {
  enum class Kind : uint8_t { Every, Feature, Declared };
  Kind kind = Kind::Every;
  BackendFeature feature = BackendFeature::MoeFfn;  // Kind::Feature only
};
namespace op_availability {
inline constexpr OpAvailability every{OpAvailability::Kind::Every};
inline constexpr OpAvailability declared{OpAvailability::Kind::Declared};
constexpr OpAvailability feature(BackendFeature f) { return {OpAvailability::Kind::Feature, f}; }
}  // namespace op_availability

// Every op of the Backend, once: X(OpKind enumerator, public method's name, availability).
// OpKind, op_name and has_op are all generated from this list, so they cannot disagree.
#define LUMEN_BACKEND_OPS(X)                                                           \
  X(Allocate, allocate, every)                                                         \
  X(UploadWeights, upload_weights, every)                                              \
  X(CopyToHost, copy_to_host, every)                                                   \
  X(Matmul, matmul, every)                                                             \
  X(MatmulSameInput, matmul_same_input, every)                                         \
  X(MatmulGlu, matmul_glu, every)                                                      \
  X(MoeFfn, moe_ffn, feature(BackendFeature::MoeFfn))                                  \
  X(GetRows, get_rows, every)                                                          \
  X(RmsNorm, rms_norm, every)                                                          \
  X(Add, add, every)                                                                   \
  X(AddRow, add_row, every)                                                            \
  X(Scale, scale, every)                                                               \
  X(Swiglu, swiglu, every)                                                             \
  X(Geglu, geglu, every)                                                               \
  X(RotateHeads, rotate_heads, feature(BackendFeature::RotatedKv))                     \
  X(LayerNorm, layer_norm, feature(BackendFeature::LayerNorm))                         \
  X(GeluErf, gelu_erf, feature(BackendFeature::LayerNorm))                             \
  X(GeluTanh, gelu_tanh, feature(BackendFeature::LayerNorm))                           \
  X(Activation, activation, feature(BackendFeature::LayerNorm))                        \
  X(Rope, rope, every)                                                                 \
  X(StoreKv, store_kv, every)                                                          \
  X(CopyKvBlock, copy_kv_block, every)                                                 \
  X(CopyKvRow, copy_kv_row, feature(BackendFeature::TreeAttention))                    \
  X(ReadKvBlock, read_kv_block, every)                                                 \
  X(WriteKvBlock, write_kv_block, every)                                               \
  X(ShiftKeys, shift_keys, feature(BackendFeature::ShiftKeys))                         \
  X(Attention, attention, every)                                                       \
  X(BidirectionalAttention, bidirectional_attention, feature(BackendFeature::Encoder)) \
  X(SsmConv, ssm_conv, feature(BackendFeature::StateSpace))                            \
  X(SsmScan, ssm_scan, feature(BackendFeature::StateSpace))                            \
  X(RwkvWkv7, rwkv_wkv7, feature(BackendFeature::Rwkv7))                               \
  X(Rwkv7Norm, rwkv7_norm, feature(BackendFeature::Rwkv7))                             \
  X(Rwkv7TokenShift, rwkv7_token_shift, feature(BackendFeature::Rwkv7))                \
  X(Rwkv7Activation, rwkv7_activation, feature(BackendFeature::Rwkv7))                 \
  X(Rwkv7ValueResidual, rwkv7_value_residual, feature(BackendFeature::Rwkv7))          \
  X(Rwkv7Keys, rwkv7_keys, feature(BackendFeature::Rwkv7))                             \
  X(Rwkv7BonusGate, rwkv7_bonus_gate, feature(BackendFeature::Rwkv7))                  \
  X(AttentionScores, attention_scores, feature(BackendFeature::KvEviction))            \
  X(GatherKvRows, gather_kv_rows, feature(BackendFeature::KvEviction))                 \
  X(CopyFromHost, copy_from_host, every)                                               \
  X(BeginStep, begin_step, every)                                                      \
  X(EndStep, end_step, every)                                                          \
  X(AddRmsNorm, add_rms_norm, declared)                                                \
  X(AttentionScored, attention_scored, declared)                                       \
  X(RopeStoreKv, rope_store_kv, declared)                                              \
  X(RouteExperts, route_experts, declared)                                             \
  X(MoeFfnRouted, moe_ffn_routed, declared)

enum class OpKind : uint8_t {
#define LUMEN_OP_KIND(kind, name, availability) kind,
  LUMEN_BACKEND_OPS(LUMEN_OP_KIND)
#undef LUMEN_OP_KIND
};
// How many kinds there are (arrays indexed by OpKind).
inline constexpr size_t kOpKindCount = 0
#define LUMEN_OP_COUNT(kind, name, availability) +1
    LUMEN_BACKEND_OPS(LUMEN_OP_COUNT)
#undef LUMEN_OP_COUNT
    ;

std::string_view op_name(OpKind kind);
// Which backends run it (the list above).
OpAvailability op_availability_of(OpKind kind);

// One call's arguments by role; what an op does not take stays empty. Tensors are in the
// method's parameter order: matmul in = {w, x}, out = {y}; matmul_glu in = {gate_w, up_w, x},
// out = {gate, up}; add_rms_norm in = {a, b, weight}, out = {sum, out}; rope_store_kv in = {v},
// out = {q, k}; route_experts in = {logits, selection_bias}, out = {experts, weights, counts};
// moe_ffn_routed in = {x, experts, weights}, out = {out}; an op that updates a tensor in place
// (scale, rope) lists it as out only; an optional tensor not given is null.
struct OpCall {
  explicit OpCall(OpKind op) : kind(op) {}
  OpKind kind;
  std::array<const TensorView*, 5> in{};
  std::array<const TensorView*, 3> out{};
  std::span<const MatmulOutput> matmul_outputs;  // matmul_same_input
  std::span<const ExpertWork> experts;           // moe_ffn
  const RouterConfig* router = nullptr;          // route_experts
  const RoutedExperts* routed = nullptr;         // moe_ffn_routed's matrices
  // Host arrays of indices: get_rows' ids, rope's positions, shift_keys' blocks.
  std::span<const int32_t> indices;
  std::span<const SequenceSlice> seqs;  // store_kv, attention(_scored), attention_scores (its one slice)
  std::span<const AttentionScoreTarget> score_targets;  // attention_scored
  std::span<const SsmSequence> ssm_seqs;  // ssm_conv, ssm_scan
  const SsmScanWeights* ssm = nullptr;    // ssm_scan
  // rwkv_wkv7: its six row operands and its sequences (out is out[0], head_size numbers[0]).
  const Wkv7Rows* wkv7 = nullptr;
  std::span<const Wkv7Sequence> wkv7_seqs;
  // rwkv7_token_shift's sequences; rwkv7_keys' rows (in holds its weights); rwkv7_activation's
  // function.
  std::span<const TokenShiftSequence> shift_seqs;
  const Rwkv7KeyRows* rwkv7_keys = nullptr;
  Rwkv7Activation rwkv7_activation = Rwkv7Activation::Tanh;
  // gather_kv_rows: the source and destination block tables (indices holds the kept slots).
  std::span<const int32_t> src_table;
  std::span<const int32_t> dst_table;
  const KvLayer* cache = nullptr;       // the K/V ops, attention
  const RopeConfig* rope = nullptr;     // rope, shift_keys
  const AttentionConfig* attention = nullptr;
  const StepMetadata* step = nullptr;  // begin_step (valid during the call only: copy it to keep it)
  Glu glu = Glu::Swiglu;               // matmul_glu, moe_ffn, moe_ffn_routed
  float value = 0.0f;  // rms_norm's, add_rms_norm's and layer_norm's eps, scale's factor, activation's kind
  // n_slots (moe_ffn), head_dim (rotate_heads, shift_keys, gather_kv_rows), head_size (rwkv_wkv7),
  // delta (shift_keys),
  // value_dim (gather_kv_rows), the source and destination block or row (copy_kv_block,
  // copy_kv_row), the block (read/write_kv_block), first_row and slot_stride (attention_scores).
  std::array<int64_t, 2> numbers{};
  // Host memory an op reads or writes: upload_weights' source, copy_to_host's destination,
  // read_kv_block's and write_kv_block's K and V, attention_scores' table; allocate's size in
  // bytes.
  const void* host_in = nullptr;
  void* host_out = nullptr;
  const void* host_in2 = nullptr;
  void* host_out2 = nullptr;
  size_t bytes = 0;
  // after_op of allocate and upload_weights: what the backend returned.
  const Buffer* buffer = nullptr;
  const TensorView* result = nullptr;
};

class OpObserver {
 public:
  virtual ~OpObserver() = default;
  virtual void before_op(const OpCall& call) { (void)call; }
  virtual void after_op(const OpCall& call) { (void)call; }
};

}  // namespace lumen::backend
