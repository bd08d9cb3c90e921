#include "engine/draft_proposers.h"

#include "engine/draft_model_proposer.h"
#include "engine/vocabulary_match.h"
#include "spec/speculative_config.h"
#include "util/error.h"

namespace lumen::engine {

namespace {

DraftWeights load_draft_model(const std::string& path, const LoadedModel& target, backend::Backend& backend) {
  DraftWeights w;
  try {
    w.file_model = std::make_unique<LoadedModel>(LoadedModel::load(path, backend));
  } catch (const Error& e) {
    fail("speculative config: the draft model {} does not load: {}", path, e.what());
  }
  require_same_vocabulary(target.tokenizer.vocab(), target.hparams, w.file_model->tokenizer.vocab(),
                          w.file_model->hparams, path);
  return w;
}

DraftWeights layer_view(int32_t num_layers, const LoadedModel& target) {
  const uint64_t n_target = target.hparams.block_count;
  if (static_cast<uint64_t>(num_layers) >= n_target) {
    fail("speculative config: num_layers must be below the target's {} layers for layer_skip (got {})", n_target,
         num_layers);
  }
  DraftWeights w;
  w.layer_view = std::make_unique<model::Transformer>(*target.transformer, static_cast<uint64_t>(num_layers));
  return w;
}

}  // namespace

std::unique_ptr<spec::Proposer> make_proposer(const SpeculativeConfig& config, const LoadedModel& target,
                                              backend::Backend& backend, int32_t n_blocks, int32_t block_size) {
  switch (config.method) {
    case SpeculativeMethod::DraftModel:
      return std::make_unique<DraftModelProposer>(load_draft_model(config.model, target, backend), backend, n_blocks,
                                                  block_size);
    case SpeculativeMethod::LayerSkip:
      return std::make_unique<DraftModelProposer>(layer_view(config.num_layers, target), backend, n_blocks,
                                                  block_size);
    case SpeculativeMethod::Lookahead:
      // Its window rides in the verification pass under a tree attention mask.
      if (!backend.supports_tree_attention()) {
        fail("speculative config: method lookahead needs tree attention, which the {} backend does not have",
             backend.name());
      }
      break;
    case SpeculativeMethod::None:
    case SpeculativeMethod::Ngram:
      break;
  }
  return spec::make_proposer(config);
}

}  // namespace lumen::engine
