// quant_tool: the tensor module's reference kernels on files, for the Python tests that compare
// them with gguf-py.
//
//   quant_tool dequantize TYPE in.bin out.f32   packed blocks -> little-endian f32
//   quant_tool quantize TYPE in.f32 out.bin     little-endian f32 -> packed blocks
//   quant_tool quantize-ggml TYPE in.f32 out.bin  the same through quantize_row_ggml, the
//                                               quantizer bit-exact with ggml's reference
//   quant_tool types                            the dtype table, one type per line:
//                                               "id name block_elements block_bytes kernels"
// Exits 1 with a message on stderr for bad arguments or input that is not whole blocks.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/dtype.h"
#include "tensor/quantize.h"
#include "util/error.h"

namespace {

using lumen::fail;
using lumen::tensor::DType;

std::vector<char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open {}", path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const std::string& path, const void* data, size_t size) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) fail("cannot write {}", path);
}

DType parse_type(std::string_view name) {
  const auto type = lumen::tensor::dtype_from_name(name);
  if (!type) fail("unknown tensor type '{}'", name);
  return *type;
}

void dequantize(DType type, const std::string& in_path, const std::string& out_path) {
  const auto& info = lumen::tensor::dtype_info(type);
  const std::vector<char> packed = read_file(in_path);
  if (packed.size() % info.block_bytes != 0) {
    fail("{} is {} bytes, not a whole number of {}-byte {} blocks", in_path, packed.size(),
         info.block_bytes, info.name);
  }
  const auto n = static_cast<int64_t>(packed.size() / info.block_bytes) * info.block_elements;
  std::vector<float> values(static_cast<size_t>(n));
  lumen::tensor::dequantize_row(type, packed.data(), values.data(), n);
  write_file(out_path, values.data(), values.size() * sizeof(float));
}

void quantize(DType type, const std::string& in_path, const std::string& out_path, bool ggml) {
  const std::vector<char> raw = read_file(in_path);
  if (raw.size() % sizeof(float) != 0) fail("{} is not a whole number of f32 values", in_path);
  std::vector<float> values(raw.size() / sizeof(float));
  std::memcpy(values.data(), raw.data(), raw.size());
  const auto n = static_cast<int64_t>(values.size());
  const auto bytes = n == 0 ? std::optional<uint64_t>{0} : lumen::tensor::row_bytes(type, n);
  // row_bytes refuses partial blocks; quantize_row then explains why.
  std::vector<unsigned char> packed(bytes.value_or(0));
  if (ggml) {
    lumen::tensor::quantize_row_ggml(type, values.data(), packed.data(), n);
  } else {
    lumen::tensor::quantize_row(type, values.data(), packed.data(), n);
  }
  write_file(out_path, packed.data(), packed.size());
}

void print_types() {
  for (uint32_t id = 0; id < 64; ++id) {
    const auto* info = lumen::tensor::dtype_info(id);
    if (info == nullptr) continue;
    std::printf("%u %.*s %lld %zu %d\n", id, static_cast<int>(info->name.size()),
                info->name.data(), static_cast<long long>(info->block_elements),
                info->block_bytes, lumen::tensor::has_reference_kernels(info->type) ? 1 : 0);
  }
}

int usage() {
  std::fputs(
      "usage: quant_tool dequantize TYPE in.bin out.f32\n"
      "       quant_tool quantize TYPE in.f32 out.bin\n"
      "       quant_tool quantize-ggml TYPE in.f32 out.bin\n"
      "       quant_tool types\n",
      stderr);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() == 1 && args[0] == "types") {
      print_types();
    } else if (args.size() == 4 && args[0] == "dequantize") {
      dequantize(parse_type(args[1]), args[2], args[3]);
    } else if (args.size() == 4 && (args[0] == "quantize" || args[0] == "quantize-ggml")) {
      quantize(parse_type(args[1]), args[2], args[3], args[0] == "quantize-ggml");
    } else {
      return usage();
    }
  } catch (const lumen::Error& error) {
    std::fprintf(stderr, "quant_tool: %s\n", error.what());
    return 1;
  }
  return 0;
}
