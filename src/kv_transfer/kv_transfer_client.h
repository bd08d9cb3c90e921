#pragma once
// The decode side of disaggregated prefill/decode: fetches from a prefill instance
// (kv_transfer/kv_transfer_server.h) the K/V it computed for a request.
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include "kv_transfer/kv_fetch.h"
#include "kv_transfer/transfer_key.h"
#include "lumen/prompt_kv.h"

namespace lumen::kv_transfer {

// One fetch from the server at `endpoint` ("tcp://10.0.0.5:5600"), blocking up to `timeout` in all.
// Returns nullopt when the server holds nothing for it. Otherwise the answer is checked against the
// fetch before it is returned: the same format and cache_salt, tokens that begin the fetch's
// prompt, at most `max_pages` pages of exactly `page_bytes` bytes each (this cache's
// PromptKvExchange::kv_page_bytes()). Throws lumen::Error, one line naming the endpoint and the request, on
// a timeout (no server, or one too slow), an Error answer (with the server's message), a malformed
// answer, or an answer past those bounds. (A frame larger than both a page and the largest tokens
// frame never arrives: zmq drops the connection unread, and the fetch times out.)
//
// Thread-safe: each call has a socket of its own, closed without lingering on return, so a dead
// server never holds the caller past the timeout. Many calls may run at once.
//
// With `key` (the deployment's, transfer_key.h) the connection is CURVE: the fetch reaches only a
// server holding the same key, and one without it never answers (the fetch times out).
std::optional<PromptKv> fetch_prompt_kv(const std::string& endpoint, const KvFetch& fetch, size_t page_bytes,
                                        size_t max_pages, std::chrono::milliseconds timeout,
                                        const TransferKey* key = nullptr);

}  // namespace lumen::kv_transfer
