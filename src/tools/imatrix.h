#pragma once
// `lumen imatrix`'s computation, as llama-imatrix does it so the files compare: the text's
// tokens (BOS first when the vocabulary adds one) cut into windows of n_ctx tokens, at most
// max_chunks of them, each evaluated from an empty context with BOS as its first token; every
// token of every window feeds the statistics (imatrix_collector.h). The result is llama.cpp's
// imatrix: chunk_count is the number of windows, chunk_size n_ctx, the dataset the text's name.
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "lumen/model.h"
#include "quantize/imatrix_file.h"

namespace lumen::tools {

struct ImatrixOptions {
  int64_t n_ctx = 512;     // tokens per window (llama-imatrix's -c)
  int64_t n_batch = 2048;  // tokens per forward pass: n_batch / n_ctx windows side by side
  int64_t max_chunks = -1; // at most this many windows; -1: all that fit
  std::string dataset;     // recorded in imatrix.datasets (llama-imatrix: the -f path)
};

struct ImatrixResult {
  quantize::Imatrix imatrix;
  int64_t n_windows = 0;
  int64_t tokens_evaluated = 0;
  double seconds = 0.0;  // the forward passes, after tokenization
};

// Throws lumen::Error (one sentence) when the tokens do not make two windows (llama-imatrix's
// requirement), n_ctx does not fit the model, or the architecture's matmuls cannot be watched.
ImatrixResult compute_imatrix(const Model& model, std::span<const int32_t> tokens, const ImatrixOptions& options,
                              const std::function<void(int64_t window, int64_t n_windows)>& progress = {});

}  // namespace lumen::tools
