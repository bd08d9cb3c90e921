#include "quantize/quantize_model.h"

#include <algorithm>

#include "gguf/file.h"
#include "gguf/writer.h"
#include "quantize/model_facts.h"
#include "quantize/quantize_order.h"
#include "quantize/tensor_conversion.h"
#include "quantize/tensor_type_rules.h"
#include "tensor/quantize.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace lumen::quantize {
namespace {

using tensor::DType;

constexpr uint32_t kQuantizationVersion = 2;  // ggml's GGML_QNT_VERSION

// Refuses, with the reason, a conversion the tool cannot or may not make.
void check_conversion(const gguf::TensorInfo& tensor, DType to, const QuantizeOptions& options) {
  if (!tensor::row_bytes(to, tensor.dims[0])) {
    fail("tensor '{}' has rows of {} elements, not whole {}-element blocks of {}", tensor.name,
         tensor.dims[0], tensor::dtype_info(to).block_elements, tensor::dtype_name(to));
  }
  if (to == tensor.type) return;
  if (!tensor::has_reference_kernels(tensor.type)) {
    fail("tensor '{}' is {}, which Lumen cannot convert from", tensor.name,
         tensor::dtype_name(tensor.type));
  }
  if (!tensor::has_ggml_quantizer(to)) {
    fail("tensor '{}': Lumen cannot quantize to {}", tensor.name, tensor::dtype_name(to));
  }
  if (is_quantized(tensor.type) && !options.allow_requantize) {
    fail("tensor '{}' is already quantized ({}): requantizing loses quality, so it is refused "
         "unless --allow-requantize is given (better: quantize from an F16/BF16/F32 model)",
         tensor.name, tensor::dtype_name(tensor.type));
  }
}

QuantizePlan make_plan(const gguf::GgufFile& input,
                       const std::vector<const gguf::TensorInfo*>& order,
                       const QuantizeOptions& options) {
  TensorTypePlanner planner(read_model_facts(input),
                            TypeChoiceOptions{options.mix, options.output_tensor_type,
                                              options.token_embedding_type, options.pure});
  QuantizePlan plan;
  for (const gguf::TensorInfo* tensor : order) {
    const DType to = planner.choose(tensor->name, tensor->type, tensor->dims);
    check_conversion(*tensor, to, options);
    plan.requantizes = plan.requantizes || (to != tensor->type && is_quantized(tensor->type));
    plan.tensors.push_back({tensor->name, tensor->dims, tensor->type, to, tensor->bytes,
                            *tensor::row_bytes(to, tensor->dims[0]) *
                                static_cast<uint64_t>(tensor->rows())});
  }
  plan.fallbacks = planner.fallbacks();
  return plan;
}

// The input's metadata, less the keys of split files, with the file type and quantization
// version appended last (where llama.cpp's gguf_set_val puts a key it replaces).
gguf::Metadata output_metadata(const gguf::Metadata& input, const QuantizeOptions& options) {
  gguf::Metadata metadata = input;
  for (const char* key : {"split.no", "split.count", "split.tensors.count",
                          "general.quantization_version", "general.file_type"}) {
    metadata.erase(key);
  }
  metadata.set("general.quantization_version", gguf::Value::u32(kQuantizationVersion));
  metadata.set("general.file_type", gguf::Value::u32(mix_info(options.mix).llama_ftype));
  return metadata;
}

}  // namespace

QuantizeReport quantize_model(const std::string& in_path, const std::string& out_path,
                              const QuantizeOptions& options, const TensorProgress& progress) {
  const gguf::GgufFile input = gguf::GgufFile::open(in_path);
  if (input.metadata().find_unsigned("split.count").value_or(1) > 1) {
    fail("{} is one part of a split model; merge it first (llama-gguf-split --merge)", in_path);
  }
  const std::vector<const gguf::TensorInfo*> order = quantize_order(input);
  QuantizeReport report;
  report.plan = make_plan(input, order, options);

  gguf::GgufWriter writer(input.alignment());
  writer.metadata() = output_metadata(input.metadata(), options);
  ThreadPool pool(options.threads);
  const size_t count = order.size();
  for (size_t i = 0; i < count; ++i) {
    const gguf::TensorInfo* source = order[i];
    const TensorPlanEntry* entry = &report.plan.tensors[i];  // the plan no longer changes
    report.bytes_in += entry->bytes_in;
    report.bytes_out += entry->bytes_out;
    report.elements += static_cast<uint64_t>(source->elements);
    writer.add_tensor(entry->name, entry->to, entry->dims,
                      [source, entry, i, count, &pool, &progress](std::span<uint8_t> out) {
                        if (entry->to == source->type) {
                          std::copy(source->data, source->data + source->bytes, out.begin());
                        } else {
                          convert_tensor(*source, entry->to, out, pool);
                        }
                        if (progress) progress(*entry, i, count);
                      });
  }
  writer.write(out_path);
  return report;
}

}  // namespace lumen::quantize
