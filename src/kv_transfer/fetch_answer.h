#pragma once
// The prefill side's answer to one fetch, apart from the socket: decode the request, ask the
// source, encode what it says. Whatever goes wrong (a malformed request, a source that throws,
// an answer that cannot be sent) becomes an Error answer, so a peer can never take the server's
// thread down.
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "kv_transfer/kv_fetch.h"
#include "kv_transfer/wire_format.h"
#include "lumen/prompt_kv.h"

namespace lumen::kv_transfer {

// Looks up what the prefill engine holds for a fetch: nullopt when it holds nothing for it. May
// throw lumen::Error, which the asker receives as the error's message.
using KvSource = std::function<std::optional<PromptKv>(const KvFetch&)>;

// The frames of the answer to `request` (the fetch's frames, without any routing envelope).
// Never throws: even running out of memory answers with an Error (or, when not even that can be
// allocated, with no frames, which the server does not send: the asker then times out).
std::vector<Frame> answer_fetch(std::span<const FrameView> request, const KvSource& source) noexcept;

}  // namespace lumen::kv_transfer
