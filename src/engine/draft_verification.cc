// OutputProcessor's side of speculative decoding: a verified draft's tokens are streamed like any
// other, the sequence keeps the accepted tokens' K/V (or ends), and the outcome is counted.
#include "engine/draft_verification.h"

#include "engine/output_processor.h"

namespace lumen::engine {

void OutputProcessor::verify_draft(Completion& c, std::span<const int32_t> draft, std::span<const float> rows) {
  const DraftOutcome outcome =
      engine::verify_draft(c.sampler, workspace, draft, rows, static_cast<size_t>(vocab_size),
                           [&](const sampling::SampleResult& result) { return emit(c, result); });
  speculation.record(c.seq, static_cast<int64_t>(draft.size()), outcome.accepted);
  if (outcome.finish) {
    finish_completion(c, *outcome.finish);  // its blocks, rejected positions and all, go back
    return;
  }
  scheduler.accept_draft(&c.seq, outcome.accepted);
}

}  // namespace lumen::engine
