#include "quantize/quantize_model.h"

#include <algorithm>
#include <map>

#include "gguf/file.h"
#include "gguf/writer.h"
#include "quantize/imatrix_file.h"
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
                                              options.token_embedding_type, options.pure,
                                              !options.imatrix_path.empty()});
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

using ImportanceMap = std::map<std::string, std::vector<float>>;

// The importance matrix's weights by tensor name, checked against the model: every entry must
// name one of its tensors with the same input width and matrix count (llama-quantize refuses a
// width mismatch too; an entry for a tensor the model lacks means the imatrix is for another
// model). Quantized tensors without an entry are quantized unweighted, as llama-quantize does
// (the output and token embeddings never have one); they are listed in the plan.
ImportanceMap load_importance(const Imatrix& imatrix, const std::string& path, const gguf::GgufFile& input,
                              QuantizePlan& plan) {
  ImportanceMap importance;
  for (const auto& [name, entry] : imatrix.entries) {
    const gguf::TensorInfo* tensor = input.find_tensor(name);
    if (tensor == nullptr) {
      fail("{}: the importance matrix has an entry for '{}', which {} does not have: it was made for another "
           "model", path, name, input.source_name());
    }
    const int64_t matrices = tensor->dims.size() > 2 ? tensor->dims[2] : 1;
    if (entry.columns != tensor->dims[0] || entry.matrices() != matrices) {
      fail("{}: the importance matrix has {} x {} values for '{}', whose weight has {} columns x {} matrices: it "
           "was made for another model", path, entry.columns, entry.matrices(), name, tensor->dims[0], matrices);
    }
    importance.emplace(name, importance_of(entry));
  }
  size_t covered = 0;
  for (const TensorPlanEntry& entry : plan.tensors) {
    if (entry.to == entry.from || !is_quantized(entry.to)) continue;
    if (importance.contains(entry.name)) {
      ++covered;
    } else {
      plan.without_importance.push_back(entry.name);
    }
  }
  if (covered == 0) fail("{}: the importance matrix has no entry for any tensor this quantization converts", path);
  return importance;
}

// The keys llama-quantize adds after general.file_type when it has an importance matrix
// (strings cut at 127 bytes, as its fixed-size override buffers do).
void add_imatrix_metadata(gguf::Metadata& metadata, const std::string& path, const Imatrix& imatrix) {
  metadata.set("quantize.imatrix.file", gguf::Value::of_string(path.substr(0, 127)));
  if (!imatrix.datasets.empty()) {
    metadata.set("quantize.imatrix.dataset", gguf::Value::of_string(imatrix.datasets[0].substr(0, 127)));
  }
  metadata.set("quantize.imatrix.entries_count", gguf::Value::u32(static_cast<uint32_t>(imatrix.entries.size())));
  if (imatrix.chunk_count > 0) {
    metadata.set("quantize.imatrix.chunks_count", gguf::Value::u32(imatrix.chunk_count));
  }
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
  ImportanceMap importance;
  Imatrix imatrix;
  if (!options.imatrix_path.empty()) {
    imatrix = read_imatrix(options.imatrix_path);
    importance = load_importance(imatrix, options.imatrix_path, input, report.plan);
  }

  gguf::GgufWriter writer(input.alignment());
  writer.metadata() = output_metadata(input.metadata(), options);
  if (!options.imatrix_path.empty()) add_imatrix_metadata(writer.metadata(), options.imatrix_path, imatrix);
  ThreadPool pool(options.threads);
  const size_t count = order.size();
  if (options.measure_error) report.errors.resize(count);
  for (size_t i = 0; i < count; ++i) {
    const gguf::TensorInfo* source = order[i];
    const TensorPlanEntry* entry = &report.plan.tensors[i];  // the plan no longer changes
    const auto found = importance.find(entry->name);
    const float* weights = found != importance.end() ? found->second.data() : nullptr;
    TensorError* error = options.measure_error ? &report.errors[i] : nullptr;
    report.bytes_in += entry->bytes_in;
    report.bytes_out += entry->bytes_out;
    report.elements += static_cast<uint64_t>(source->elements);
    writer.add_tensor(entry->name, entry->to, entry->dims,
                      [source, entry, weights, error, i, count, &pool, &progress](std::span<uint8_t> out) {
                        if (entry->to == source->type) {
                          std::copy(source->data, source->data + source->bytes, out.begin());
                        } else {
                          convert_tensor(*source, entry->to, out, pool, weights, error);
                        }
                        if (progress) progress(*entry, i, count);
                      });
  }
  writer.write(out_path);
  return report;
}

}  // namespace lumen::quantize
