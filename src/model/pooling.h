#pragma once
// Sentence embeddings from a model's final hidden states: how a sequence's rows are pooled into
// one vector ({arch}.pooling_type, llama.cpp's numbering) and the L2 normalisation OpenAI's
// embeddings carry. The forward pass gives the rows (model::Transformer::forward_hidden); this
// decides which rows it needs and what becomes of them.
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "model/hparams.h"

namespace lumen::model {

// llama.cpp's LLAMA_POOLING_TYPE_* values, as {arch}.pooling_type stores them.
enum class Pooling : uint32_t { None = 0, Mean = 1, Cls = 2, Last = 3, Rank = 4 };

std::string_view pooling_name(Pooling pooling);

// How this model's embeddings are pooled: the file's pooling_type when it names mean, CLS or
// last. A file without one, or with "none" (a decoder that was not trained for embeddings),
// gets the last token's state: under causal attention it is the only row that has seen the
// whole input (what decoder embedders such as e5-mistral and Qwen3-Embedding pool). Throws
// lumen::Error for rank pooling (a reranker's classifier head, which Lumen does not run).
Pooling embedding_pooling(const HParams& hp);

// The rows of an n-token sequence the pooling reads, ascending (indices into its tokens).
std::vector<int32_t> pooled_rows(Pooling pooling, int64_t n_tokens);

// One vector from the rows pooled_rows named (`rows` holds them one after another, `width`
// values each), L2-normalised: a zero vector stays zero.
std::vector<float> pool_and_normalize(Pooling pooling, std::span<const float> rows, int64_t width);

// Scales v to unit Euclidean length, summing in double; a zero vector stays zero.
void l2_normalize(std::span<float> v);

}  // namespace lumen::model
