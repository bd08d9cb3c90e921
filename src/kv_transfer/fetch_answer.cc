#include "kv_transfer/fetch_answer.h"

#include <exception>
#include <new>
#include <string>
#include <string_view>
#include <utility>

#include "util/error.h"

namespace lumen::kv_transfer {
namespace {

std::vector<Frame> answer_or_throw(std::span<const FrameView> request, const KvSource& source) {
  const KvFetch fetch = decode_fetch(request);
  std::optional<PromptKv> kv = source(fetch);
  if (!kv) return encode_not_found();
  // Pages in another format would be refused by the importer anyway, but only after they crossed
  // the network; saying so here names the misconfiguration (two different models or caches).
  if (kv->format != fetch.format) {
    fail("KV format mismatch: this prefill instance's K/V is format {:#018x}, the fetch asks for {:#018x}", kv->format,
         fetch.format);
  }
  return encode_found(std::move(*kv));
}

// Encoding an error allocates a little too; when even that fails there is nothing to send.
std::vector<Frame> error_answer(std::string_view message) noexcept {
  try {
    return encode_error(message);
  } catch (...) {
    return {};
  }
}

}  // namespace

std::vector<Frame> answer_fetch(std::span<const FrameView> request, const KvSource& source) noexcept {
  try {
    return answer_or_throw(request, source);
  } catch (const Error& e) {
    return error_answer(e.what());
  } catch (const std::bad_alloc&) {
    return error_answer("the prefill instance ran out of memory answering the fetch");
  } catch (const std::exception& e) {
    return error_answer(std::string("internal error in the prefill instance: ") + e.what());
  } catch (...) {
    return error_answer("internal error in the prefill instance");
  }
}

}  // namespace lumen::kv_transfer
