// The speculative config's checks and vLLM's defaults for the prompt lookup bounds.
#include "spec/speculative_config.h"

#include <gtest/gtest.h>

#include "lumen/error.h"

namespace lumen::spec {
namespace {

SpeculativeConfig ngram(int32_t k, int32_t max_n = 0, int32_t min_n = 0) {
  SpeculativeConfig c;
  c.method = SpeculativeMethod::Ngram;
  c.num_speculative_tokens = k;
  c.prompt_lookup_max = max_n;
  c.prompt_lookup_min = min_n;
  return c;
}

TEST(SpeculativeConfig, LookupBoundsDefaultAsInVllm) {
  EXPECT_EQ(resolved(ngram(3)).prompt_lookup_min, 5);
  EXPECT_EQ(resolved(ngram(3)).prompt_lookup_max, 5);
  EXPECT_EQ(resolved(ngram(3, 4)).prompt_lookup_min, 4);
  EXPECT_EQ(resolved(ngram(3, 0, 2)).prompt_lookup_max, 2);
  const SpeculativeConfig both = resolved(ngram(3, 4, 2));
  EXPECT_EQ(both.prompt_lookup_min, 2);
  EXPECT_EQ(both.prompt_lookup_max, 4);
  EXPECT_NE(make_proposer(both), nullptr);
  EXPECT_EQ(make_proposer(SpeculativeConfig{}), nullptr);
}

TEST(SpeculativeConfig, OutOfRangeValuesAreRefusedNamingTheField) {
  auto refuses = [](SpeculativeConfig c, const std::string& field) {
    try {
      resolved(c);
      ADD_FAILURE() << "accepted, expected an error about " << field;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  refuses(ngram(0), "num_speculative_tokens");
  refuses(ngram(kMaxSpeculativeTokens + 1), "num_speculative_tokens");
  refuses(ngram(3, 2, 4), "prompt_lookup_min");
  refuses(ngram(3, -1), "prompt_lookup");
  refuses(ngram(3, 2000), "prompt_lookup_max");
  SpeculativeConfig c = ngram(3);
  c.disable_by_batch_size = -1;
  refuses(c, "disable_by_batch_size");
  c = ngram(3);
  c.min_acceptance_rate = 1.5;
  refuses(c, "min_acceptance_rate");
  // Off: nothing else is looked at.
  SpeculativeConfig off;
  off.num_speculative_tokens = -5;
  EXPECT_NO_THROW(resolved(off));
}

TEST(SpeculativeConfig, EachModelMethodNeedsItsOwnFieldsAndNoOthers) {
  auto refuses = [](SpeculativeConfig c, const std::string& field) {
    try {
      resolved(c);
      ADD_FAILURE() << "accepted, expected an error about " << field;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  SpeculativeConfig draft;
  draft.method = SpeculativeMethod::DraftModel;
  draft.num_speculative_tokens = 4;
  refuses(draft, "\"model\"");  // no path
  draft.model = "draft.gguf";
  EXPECT_NO_THROW(resolved(draft));
  // The engine makes it (it needs the target): not the n-gram factory.
  EXPECT_EQ(make_proposer(resolved(draft)), nullptr);
  SpeculativeConfig lookup = draft;
  lookup.prompt_lookup_max = 3;
  refuses(lookup, "prompt_lookup");
  SpeculativeConfig layers = draft;
  layers.num_layers = 4;
  refuses(layers, "num_layers");
  SpeculativeConfig skip;
  skip.method = SpeculativeMethod::LayerSkip;
  skip.num_speculative_tokens = 4;
  refuses(skip, "num_layers");
  skip.num_layers = 8;
  EXPECT_NO_THROW(resolved(skip));
  skip.model = "draft.gguf";
  refuses(skip, "\"model\"");
  SpeculativeConfig ngram_with_model = ngram(3);
  ngram_with_model.model = "draft.gguf";
  refuses(ngram_with_model, "draft_model only");
}

}  // namespace
}  // namespace lumen::spec
