// lumen._lumen._Engine, _Request, _Completion and _Embedding: the engine as the Python package drives it.
// Everything that computes (loading, tokenizing a long text, stepping, a whole batch) runs with
// the GIL released, so other Python threads and an asyncio loop go on meanwhile.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cmath>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bindings.h"
#include "engine_core.h"
#include "engine_options.h"
#include "util/error.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace lumen::python {

namespace {

nb::list alternatives(const std::vector<TokenAlternative>& top) {
  nb::list out;
  for (const TokenAlternative& a : top) out.append(nb::make_tuple(a.token, a.logprob));
  return out;
}

// [(token, logprob or None for the first, [(token, logprob)...])...]
nb::list prompt_logprobs(const std::vector<PromptLogprob>& rows) {
  nb::list out;
  for (const PromptLogprob& row : rows) {
    nb::object lp = std::isnan(row.logprob) ? nb::none() : nb::cast(row.logprob);
    out.append(nb::make_tuple(row.token, lp, alternatives(row.top)));
  }
  return out;
}

// What a stream chunk carries, as a tuple: (token_ids, text, logprobs, top_logprobs,
// prompt_logprobs, finished, finish_reason, error).
nb::tuple chunk_tuple(const StreamChunk& chunk) {
  nb::list ids, logprobs, top;
  std::string text;
  for (const GeneratedToken& t : chunk.tokens) {
    ids.append(t.token);
    logprobs.append(t.logprob);
    top.append(alternatives(t.top));
    text += t.text;
  }
  return nb::make_tuple(ids, nb::str(text.data(), text.size()), logprobs, top, prompt_logprobs(chunk.prompt_logprobs),
                        chunk.finished, finish_reason_name(chunk.finish_reason), chunk.error);
}

std::vector<SamplingParams> params_per_prompt(nb::handle params, size_t prompts) {
  if (nb::isinstance<SamplingParams>(params))
    return std::vector<SamplingParams>(prompts, nb::cast<SamplingParams>(params));
  auto list = nb::cast<std::vector<SamplingParams>>(params);
  if (list.size() != prompts) {
    fail("{} sampling parameter sets for {} prompts: give one, or one per prompt", list.size(), prompts);
  }
  return list;
}

// The images placed in one prompt (EngineCore::place_images), handed back to generate() with it:
// Python holds them without seeing inside (the features stay in C++, shared, never copied).
struct PlacedImages {
  std::vector<PromptImage> images;
};

// generate()'s images argument: empty, or one entry per prompt (None: a prompt without images).
std::vector<std::vector<PromptImage>> images_per_prompt(const nb::list& images, size_t prompts) {
  if (images.size() == 0) return {};
  if (images.size() != prompts) fail("{} image lists for {} prompts", images.size(), prompts);
  std::vector<std::vector<PromptImage>> out;
  for (nb::handle entry : images) {
    out.push_back(entry.is_none() ? std::vector<PromptImage>{} : nb::cast<const PlacedImages&>(entry).images);
  }
  return out;
}

// Engine::embed's answer for AsyncEngine: its loop thread steps the engine and polls ready()
// after each step, so no thread blocks on the vectors.
struct PendingEmbedding {
  std::future<std::vector<std::vector<float>>> vectors;
};

}  // namespace

void bind_engine(nb::module_& m) {
  nb::class_<PlacedImages>(m, "_PlacedImages", "Images placed in a prompt (internal: LLM.chat passes them on).")
      .def("__len__", [](const PlacedImages& placed) { return placed.images.size(); });
  nb::class_<PendingEmbedding>(m, "_Embedding", "Queued embeddings (internal: AsyncEngine.embed awaits them).")
      .def("ready",
           [](const PendingEmbedding& p) {
             return p.vectors.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
           })
      .def(
          "get",
          [](PendingEmbedding& p) {
            if (!p.vectors.valid()) fail("these embeddings were already taken");
            nb::gil_scoped_release release;
            return p.vectors.get();
          },
          "Each input's vector once ready() (raises LumenError when the engine refused them); once only.");

  nb::class_<GenerationResult>(m, "_Completion", "One finished completion (internal: lumen.CompletionOutput wraps it).")
      .def_ro("request_id", &GenerationResult::request_id)
      .def_ro("index", &GenerationResult::index)
      .def_ro("tokens", &GenerationResult::tokens)
      .def_prop_ro("text", [](const GenerationResult& r) { return nb::str(r.text.data(), r.text.size()); })
      .def_ro("logprobs", &GenerationResult::logprobs)
      .def_prop_ro("top_logprobs",
                   [](const GenerationResult& r) {
                     nb::list out;
                     for (const auto& top : r.top_logprobs) out.append(alternatives(top));
                     return out;
                   })
      .def_prop_ro("prompt_logprobs", [](const GenerationResult& r) { return prompt_logprobs(r.prompt_logprobs); })
      .def_prop_ro("finish_reason", [](const GenerationResult& r) { return finish_reason_name(r.finish); })
      .def_ro("error", &GenerationResult::error);

  nb::class_<RequestHandle>(m, "_Request", "One completion of a queued request (internal).")
      .def_prop_ro("id", &RequestHandle::id)
      .def_prop_ro("index", &RequestHandle::index)
      .def(
          "try_next",
          [](RequestHandle& handle) -> nb::object {
            StreamChunk chunk;
            if (!handle.try_next(chunk)) return nb::none();
            return chunk_tuple(chunk);
          },
          "What arrived since the last call, or None: (token_ids, text, logprobs, top_logprobs, "
          "prompt_logprobs, finished, finish_reason, error).");

  {
    nb::list names;
    for (const char* name : kEngineOptionNames) names.append(nb::str(name));
    m.attr("_ENGINE_OPTION_NAMES") = nb::tuple(names);
  }
  nb::class_<EngineCore>(m, "_Engine", "A model and the engine over it (internal: use lumen.LLM or lumen.AsyncEngine).")
      .def(
          "__init__",
          [](EngineCore* self, const std::string& path, const nb::dict& options) {
            const EngineOptions parsed = engine_options_from(options);
            nb::gil_scoped_release release;
            new (self) EngineCore(path, parsed);
          },
          "model"_a, "options"_a)
      .def(
          "tokenize",
          [](const EngineCore& core, const std::string& text, bool add_special, bool parse_special) {
            nb::gil_scoped_release release;
            return core.model().tokenize(text, {.add_special = add_special, .parse_special = parse_special});
          },
          "text"_a, "add_special"_a, "parse_special"_a)
      .def(
          "detokenize",
          [](const EngineCore& core, const std::vector<int32_t>& tokens, bool skip_special) {
            std::string text;
            {
              nb::gil_scoped_release release;
              text = core.model().detokenize(tokens, skip_special);
            }
            return nb::str(text.data(), text.size());
          },
          "tokens"_a, "skip_special"_a)
      .def(
          "token_text",
          [](const EngineCore& core, int32_t token) {
            // The token's own bytes, as the server's decoded_token; a token that is part of a
            // character (byte-level vocabularies) shows U+FFFD for the missing rest.
            const std::string bytes = core.model().token_bytes(token);
            return nb::str(nb::bytes(bytes.data(), bytes.size()).attr("decode")("utf-8", "replace"));
          },
          "token"_a, "A token's text, as Logprob.decoded_token.")
      .def(
          "chat_prompt",
          [](const EngineCore& core, const std::string& messages_json, bool add_generation_prompt,
             const std::string& extra_context_json) {
            // The server's role check, before any rendering.
            const nlohmann::json messages = nlohmann::json::parse(messages_json);
            for (size_t i = 0; i < messages.size(); ++i) {
              if (const std::string problem = chat_message_role_problem(messages[i], i); !problem.empty()) {
                throw Error(problem);
              }
            }
            nb::gil_scoped_release release;
            ChatOptions options;
            options.add_generation_prompt = add_generation_prompt;
            options.extra_context = nlohmann::ordered_json::parse(extra_context_json);
            // The messages' text is never read for control tokens (ChatOptions's default).
            return core.model().chat_prompt(nlohmann::ordered_json::parse(messages_json), options);
          },
          "messages_json"_a, "add_generation_prompt"_a, "extra_context_json"_a,
          "A conversation (JSON text) as prompt tokens through the model's chat template.")
      .def(
          "place_images",
          [](EngineCore& core, std::vector<int32_t> prompt, const std::vector<nb::bytes>& files) {
            std::vector<std::string> bytes;
            for (const nb::bytes& file : files) bytes.emplace_back(file.c_str(), file.size());
            PlacedImages placed;
            {
              nb::gil_scoped_release release;
              placed.images = core.place_images(prompt, bytes);
            }
            return nb::make_tuple(nb::cast(prompt), nb::cast(std::move(placed)));
          },
          "prompt"_a, "files"_a,
          "Encodes the image files and expands the prompt's image markers for them: (token ids, placed images).")
      .def(
          "submit",
          [](EngineCore& core, std::vector<int32_t> prompt, const SamplingParams& params, nb::handle images) {
            std::vector<PromptImage> placed;
            if (!images.is_none()) placed = nb::cast<const PlacedImages&>(images).images;
            nb::gil_scoped_release release;
            return core.submit(std::move(prompt), params, std::move(placed));
          },
          "prompt"_a, "params"_a, "images"_a = nb::none())
      .def(
          "abort", [](EngineCore& core, uint64_t id) { core.engine().abort(id); }, "request_id"_a)
      .def(
          "embed",
          [](EngineCore& core, std::vector<std::vector<int32_t>> inputs) {
            nb::gil_scoped_release release;
            return core.embed(std::move(inputs));
          },
          "inputs"_a, "Each input's embedding (pooled, L2-normalised): a list of floats per input.")
      .def(
          "submit_embed",
          [](EngineCore& core, std::vector<std::vector<int32_t>> inputs) {
            nb::gil_scoped_release release;
            return PendingEmbedding{core.engine().embed(std::move(inputs))};
          },
          "inputs"_a, "Queues the inputs for the thread that steps the engine; the vectors come in the _Embedding.")
      .def("step",
           [](EngineCore& core) {
             nb::gil_scoped_release release;
             return core.step();
           })
      .def(
          "wait_for_work",
          [](EngineCore& core, double seconds) {
            nb::gil_scoped_release release;
            core.engine().wait_for_work(std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)));
          },
          "seconds"_a)
      .def("has_unfinished", [](EngineCore& core) { return core.engine().has_unfinished(); })
      .def(
          "generate",
          [](EngineCore& core, const std::vector<std::vector<int32_t>>& prompts, nb::handle params,
             const nb::list& images) {
            const std::vector<SamplingParams> per_prompt = params_per_prompt(params, prompts.size());
            const std::vector<std::vector<PromptImage>> placed = images_per_prompt(images, prompts.size());
            std::optional<std::vector<std::vector<GenerationResult>>> results;
            {
              nb::gil_scoped_release release;
              // Ctrl-C reaches Python only through PyErr_CheckSignals while the GIL is away.
              results = core.generate(
                  prompts, per_prompt,
                  [] {
                    nb::gil_scoped_acquire acquire;
                    return PyErr_CheckSignals() != 0;
                  },
                  placed);
            }
            if (!results) throw nb::python_error();  // the KeyboardInterrupt the check raised
            return *results;
          },
          "prompts"_a, "params"_a, "images"_a = nb::list())
      .def_prop_ro("max_model_len", [](EngineCore& core) { return core.engine().stats().max_model_len; })
      .def_prop_ro("vocab_size", [](const EngineCore& core) { return core.model().info().vocab_size; })
      .def_prop_ro("architecture", [](const EngineCore& core) { return core.model().info().architecture; });
}

}  // namespace lumen::python
