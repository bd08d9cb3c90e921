// POST /v1/embeddings: every input of a request goes to the engine as one batch (Engine::embed),
// which runs it between generation steps; the HTTP thread waits for the vectors. The request
// holds one admission place per input while it waits, as generation's prompts do, so a flood of
// embedding requests queues (and is refused past the queue's bound) like any other work.
#include <algorithm>
#include <future>

#include "server/api_error.h"
#include "server/client_id.h"
#include "server/embeddings_request.h"
#include "server/json_body.h"
#include "server/routes.h"

namespace lumen::server {

void handle_embeddings(ServerContext& context, const httplib::Request& request, httplib::Response& response) {
  const nlohmann::json body = parse_request_body(request, JsonEndpoint::Embeddings, response);
  check_model(context, body);
  EmbeddingLimits limits;
  limits.vocab_size = context.limits.vocab_size;
  limits.dimensions = context.engine.embedding_dimensions();
  limits.max_inputs = context.limits.max_embedding_inputs;
  limits.max_input_tokens = context.limits.max_embedding_input_tokens > 0
                                ? std::min(context.limits.max_embedding_input_tokens, context.limits.max_model_len)
                                : context.limits.max_model_len;
  limits.max_request_tokens = context.limits.max_embedding_request_tokens;
  EmbeddingsRequest parsed = parse_embeddings_request(body, context.model, limits);
  const auto n_inputs = static_cast<int64_t>(parsed.inputs.size());
  if (n_inputs > context.admission.max_per_client()) {
    invalid("input", "{} inputs; one client may have at most {} queued or running (--max-queued-requests-per-client)",
            n_inputs, context.admission.max_per_client());
  }
  const Admission::Places places = context.admission.reserve(
      client_id(context.salt_by_api_key, request.get_header_value("Authorization"), request.remote_addr), n_inputs);
  int64_t prompt_tokens = 0;
  for (const std::vector<int32_t>& input : parsed.inputs) prompt_tokens += static_cast<int64_t>(input.size());
  const std::vector<std::vector<float>> vectors = context.engine.embed(std::move(parsed.inputs)).get();
  nlohmann::json data = nlohmann::json::array();
  for (size_t i = 0; i < vectors.size(); ++i) data.push_back(embedding_entry(i, vectors[i], parsed.base64));
  const nlohmann::json reply = {{"object", "list"},
                                {"data", std::move(data)},
                                {"model", context.model_name},
                                {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
  context.metrics.count_embeddings(n_inputs, prompt_tokens);
  response.set_content(dump_json(reply), "application/json");
}

}  // namespace lumen::server
