// A context shift on an ALiBi model (bloom): its keys carry no rope, so shift_keys must leave
// them as they are (the bias reads the cache positions at attention time); rotating them as a
// rope model's would corrupt every cached key.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "gguf/file.h"
#include "lumen_testdata.h"
#include "model/kv_cache.h"
#include "model/synth.h"
#include "model/transformer.h"

namespace lumen::model {
namespace {

TEST(AlibiShift, KeysAreNotRotated) {
  LUMEN_REQUIRE_TESTDATA();
  const std::string path = (std::filesystem::temp_directory_path() / "lumen_alibi_shift.gguf").string();
  write_synthetic_model({"bloom-mini", tensor::DType::Q4_0,
                         std::string(LUMEN_TESTDATA_DIR) + "/tokenizer/ggml-vocab-llama-spm.gguf", 3, 2, 2},
                        path);
  {
    gguf::GgufFile file = gguf::GgufFile::open(path);
    HParams hp = read_hparams(file);
    backend::CpuBackend backend(2);
    Transformer transformer(backend, file, hp);
    KvCache cache(backend, hp, 2, 16);
    std::vector<int32_t> tokens, positions;
    for (int32_t i = 0; i < 24; ++i) {
      tokens.push_back(5 + 7 * i);
      positions.push_back(i);
    }
    const std::vector<int32_t> blocks = {0, 1}, rows = {23};
    backend::SequenceSlice seq;
    seq.n_tokens = 24;
    seq.block_table = blocks;
    const std::vector<backend::SequenceSlice> seqs = {seq};
    std::vector<float> logits(hp.vocab_size);
    transformer.forward({tokens, positions, seqs, rows}, cache, logits.data());
    auto keys = [&] {
      std::vector<uint8_t> bytes;
      for (size_t l = 0; l < hp.block_count; ++l) {
        const backend::KvLayer& layer = cache.layer(l);
        const auto* data = static_cast<const uint8_t*>(layer.k.data);
        bytes.insert(bytes.end(), data, data + 2 * backend::kv_block_bytes(layer));
      }
      return bytes;
    };
    const std::vector<uint8_t> before = keys();
    transformer.shift_keys(cache, blocks, -4);
    EXPECT_TRUE(keys() == before) << "a context shift rotated an ALiBi model's keys";
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace lumen::model
