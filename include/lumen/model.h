#pragma once
// A model ready to run: a GGUF file loaded onto a device, with its tokenizer and chat template.
// Model is a cheap handle: copies share the one loaded model, which lives as long as any copy
// (an Engine holds one). Every const method is thread-safe.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lumen/image_encoder.h"

namespace lumen {

// What a Model handle shares, and the way Lumen's own code reaches it: defined in
// src/engine/model_state.h, opaque here.
struct ModelState;
struct ModelAccess;

// ModelOptions::n_gpu_layers' two words.
inline constexpr int kAllGpuLayers = -1;   // the whole model on the device, embedding table included
inline constexpr int kAutoGpuLayers = -2;  // as many as fit the device's free memory

struct ModelOptions {
  std::string device = "cpu";  // "cpu", "cuda" or "cuda:N" (a build with -DLUMEN_CUDA=ON)
  unsigned threads = 0;        // CPU threads; 0: one per core
  // A built-in chat template's name (chat::builtin_chat_template_names) to use instead of the
  // model's own; empty: the model's.
  std::string chat_template = {};
  // A chat template's own Jinja source to use instead of the model's (what `lumen serve
  // --chat-template-file` reads; llama-server's option of that name); empty: none. Setting both
  // this and chat_template is an error.
  std::string chat_template_source = {};
  // Load the tokenizer and chat template only: no weights, no device memory (tokenizing
  // tools). An Engine refuses such a model.
  bool vocab_only = false;
  // > 1: tensor parallelism across this many processes, started together by MPI
  // (`mpirun -np N`), each loading its share of the weights and KV cache (a build with MPI).
  // Rank 0's Model is the one that runs Engines; the others call follow_model_parallel_leader
  // (lumen/engine.h) with theirs. Dense grouped-query attention models on the CPU only.
  int tensor_parallel_size = 1;
  // > 1: pipeline parallelism: the layers cut into this many stages, each held by
  // tensor_parallel_size processes (mpirun -np tensor x pipeline; ranked stage by stage). Any
  // architecture; the CPU only.
  int pipeline_parallel_size = 1;
  // A forward pass goes through the stages in at most this many micro-batches (of 64 rows or
  // more), so that stages work at once; 0: four times the stages.
  int pipeline_micro_batches = 0;
  // > 1: expert parallelism: each of this many processes (mpirun -np N) holds 1/N of every MoE
  // layer's routed experts, everything else whole, and routed tokens' rows are exchanged
  // all-to-all. Mixture-of-experts models whose expert count N divides; the CPU only; not
  // combined with tensor or pipeline parallelism yet.
  int expert_parallel_size = 1;
  // With expert_parallel_size > 1: each process runs the attention, norms, dense FFNs and output
  // head for its own share of the sequences only (holding only their KV), the MoE layers
  // exchanging rows all-to-all and the logit rows gathered to rank 0 (SGLang's DP attention).
  bool data_parallel_attention = false;
  // > 1: context parallelism: each of this many processes (mpirun -np N) holds the whole model,
  // and a long prompt's prefill is shared among them (ring attention over the prompt's chunks);
  // rank 0 then holds the whole KV cache and decodes alone. Not combined with tensor, pipeline or
  // expert parallelism, nor with n_gpu_layers; the CPU only.
  int context_parallel_size = 1;
  // A vision-language model's projector file (llama.cpp's mmproj GGUF: the vision encoder and
  // its connector to this model), loaded as the model's image_encoder(): LLaVA-1.5 ("mlp") and
  // Gemma 3 projectors (docs/vision.md). Refused with lumen::Error when its features are not this
  // model's embedding width, or its family is one the engine cannot take yet (Idefics3's tiles).
  std::string mmproj = {};
  // Models bigger than the GPU (llama.cpp's --n-gpu-layers; docs/backends.md): with a GPU device,
  // the last n_gpu_layers of the model's layers and its output head (L + 1 units; the head goes
  // first) run on the GPU and the token embedding and the other layers on the CPU (`threads`),
  // in one forward pass. 0 to L + 1, kAllGpuLayers (the default: everything on the device) or
  // kAutoGpuLayers: the most whose weights, and K/V for gpu_layers_context tokens (0: the
  // model's context, at most 4096), fit gpu_layers_memory_fraction of the device's free memory.
  // Anything but kAllGpuLayers with device "cpu", or beyond L + 1, is refused with lumen::Error.
  int n_gpu_layers = kAllGpuLayers;
  int64_t gpu_layers_context = 0;
  double gpu_layers_memory_fraction = 0.9;
};

struct TokenizeOptions {
  bool add_special = true;     // BOS/EOS as the vocabulary says (add_bos_token, add_eos_token)
  bool parse_special = false;  // text that spells a control token ("<|im_end|>") becomes it
};

// How a conversation becomes a prompt (Model::chat_prompt).
struct ChatOptions {
  bool add_generation_prompt = true;  // end with the assistant's turn opener
  // End inside the final message, an assistant's, which the model then continues (vLLM's
  // continue_final_message, an assistant prefill): the rendered text is cut right after that
  // message's text. Needs add_generation_prompt off. Throws lumen::Error when the final message
  // is not an assistant's with text, or the template does not end the conversation with it.
  bool continue_final_message = false;
  // The template's `tools` variable; absent: None.
  std::optional<nlohmann::ordered_json> tools;
  // More top-level template variables (chat_template_kwargs: enable_thinking...). A name the
  // renderer sets itself (messages, bos_token...) is refused.
  nlohmann::ordered_json extra_context = nlohmann::ordered_json::object();
  // Let the messages' text spell control tokens. Off (the default), a user who types
  // "<|im_end|>" gets those characters, never the end of their turn.
  bool parse_special_in_messages = false;
  // The most bytes the rendering may produce (also bounds each string a template builds);
  // 0: 16 MiB.
  size_t max_rendered_bytes = 0;
};

struct ModelInfo {
  std::string path;
  std::string architecture;     // general.architecture: "llama", "qwen2"...
  int64_t vocab_size = 0;
  int64_t context_length = 0;   // the context the model was trained for
  uint64_t parameters = 0;      // elements in all tensors
  uint64_t file_bytes = 0;      // bytes of all tensors
  std::string weight_type;      // the type holding most bytes of the 2-D weights ("Q4_1")
  std::string device;           // what it runs on ("cpu", "cuda:0"); empty when vocab_only
  // Where the image encoder (ModelOptions::mmproj) runs its tower: "cpu", the device ("cuda"),
  // or "cpu (<why not the device>)"; empty for a text-only model.
  std::string vision_tower;
  int parallel_rank = 0;         // this process among all of the model's (0: it leads)
  int tensor_parallel_rank = 0;  // its rank among its stage's tensor_parallel_size
  int tensor_parallel_size = 1;
  int pipeline_stage = 0;        // its stage of pipeline_parallel_size
  int pipeline_parallel_size = 1;
  int expert_parallel_size = 1;   // processes sharing the routed experts (this one is parallel_rank)
  int context_parallel_size = 1;  // processes sharing a long prompt's prefill (context parallelism)
  uint64_t weight_bytes = 0;      // the weights this process holds: all, or its share
  // Of the model's layers and output head, how many run on the GPU (ModelOptions::n_gpu_layers,
  // auto resolved); kAllGpuLayers: the whole model on its device.
  int n_gpu_layers = kAllGpuLayers;
};

// What is wrong with the role of message `index` (counted from 0) of an OpenAI-style
// conversation, naming the role when there is one; empty when it is one of system, developer,
// user, assistant and tool. The server and the Python package check every message with it
// before rendering, so both refuse the same conversations in the same words.
std::string chat_message_role_problem(const nlohmann::json& message, size_t index);

class Model {
 public:
  // Throws lumen::Error naming what is wrong: the file (missing, not GGUF, broken, an
  // architecture or tensor type Lumen does not run), the device, or the chat template name.
  static Model load(const std::string& path, const ModelOptions& options = {});

  const ModelInfo& info() const;

  std::vector<int32_t> tokenize(std::string_view text, const TokenizeOptions& options = {}) const;
  // The text of tokens (ids outside the vocabulary throw lumen::Error); skip_special leaves
  // control tokens' text out.
  std::string detokenize(std::span<const int32_t> tokens, bool skip_special = false) const;
  // The bytes one token stands for (possibly part of a UTF-8 character).
  std::string token_bytes(int32_t token) const;
  // Whether the token ends a generation (EOS, <|im_end|>, <end_of_turn>...).
  bool ends_generation(int32_t token) const;

  bool has_chat_template() const;
  // Why there is no chat template (the file has none, or it does not parse); empty with one.
  const std::string& chat_template_problem() const;
  // The conversation (OpenAI-style [{"role", "content"}...]) rendered by the chat template and
  // tokenized: the template's own markers become control tokens, the messages' text never does
  // (unless options say so), and a model that wants BOS gets exactly one. Throws
  // lumen::ChatRefused when the conversation is at fault, lumen::Error when the template fails
  // (or there is none).
  std::vector<int32_t> chat_prompt(const nlohmann::ordered_json& messages, const ChatOptions& options = {}) const;

  // The chat template's Jinja text (empty without one). Tool calling reads from it which
  // format the model writes its calls in (Hermes' <tool_call>, Llama 3's JSON...).
  const std::string& chat_template_source() const;

  // The image encoder (lumen/image_encoder.h) of a vision-language model; null for a model that
  // takes text only. Engine::encode_image uses it.
  std::shared_ptr<const ImageEncoder> image_encoder() const;
  // Gives the model an image encoder (or none: null), before any Engine is made from it. Throws
  // lumen::Error when its vectors are not this model's embedding_length wide.
  void set_image_encoder(std::shared_ptr<const ImageEncoder> encoder);

 private:
  friend struct ModelAccess;
  explicit Model(std::shared_ptr<ModelState> state);
  std::shared_ptr<ModelState> state_;
};

}  // namespace lumen
