#pragma once
// POST /v1/embeddings: the request in OpenAI's shape. `input` is a string, a list of strings, a
// list of token ids or a list of such lists; `encoding_format` float (the default) or base64;
// `dimensions` only as the model's own width (Lumen does not shorten vectors: a model must be
// trained for that); `user` is accepted and ignored, as `model` is checked by the route.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "lumen/model.h"

namespace lumen::server {

struct EmbeddingLimits {
  int64_t vocab_size = 0;
  int64_t dimensions = 0;        // the model's embedding width
  int64_t max_inputs = 2048;     // inputs per request (OpenAI's limit)
  int64_t max_input_tokens = 0;  // tokens per input (the served max_model_len)
  // All inputs' tokens together (OpenAI's 300K): a request's share of every step lasts until its
  // last pass, so its total, not only its count and lengths, bounds what it costs the others.
  int64_t max_request_tokens = 300'000;
};

struct EmbeddingsRequest {
  std::vector<std::vector<int32_t>> inputs;  // each non-empty
  bool base64 = false;
};

// Throws ApiError(400) naming the field: a missing, empty or malformed input, more inputs than
// limits.max_inputs, an input past limits.max_input_tokens tokens, inputs past
// limits.max_request_tokens tokens together, a token id outside the
// vocabulary, an encoding_format other than float or base64, or dimensions other than the
// model's. Text is tokenized with the vocabulary's BOS/EOS rule (a BERT's [CLS] ... [SEP]);
// control tokens spelled in it stay text.
EmbeddingsRequest parse_embeddings_request(const nlohmann::json& body, const Model& model,
                                           const EmbeddingLimits& limits);

// The response's `data` entry for one vector: OpenAI's {"object": "embedding", "index", "embedding"},
// the embedding a list of numbers or, with base64, the base64 of its little-endian float32 bytes.
nlohmann::json embedding_entry(size_t index, const std::vector<float>& vector, bool base64);

// The base64 (RFC 4648, padded) of a vector's float32 values in little-endian byte order: what
// OpenAI's SDK decodes with numpy.frombuffer(..., dtype="float32").
std::string base64_floats(const std::vector<float>& values);

}  // namespace lumen::server
