#pragma once
// `lumen serve --role`: disaggregated prefill and decode (server/kv_handoff.h) and the proxy in
// front of them (proxy/). The flags of every role, and what they mean for the engine and the
// routes.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "cli/engine_options.h"
#include "kv_transfer/transfer_key.h"
#include "lumen/engine_config.h"
#include "server/kv_handoff.h"
#include "util/error.h"

namespace lumen::cli {

struct ServeRoleFlags {
  std::string role = "both";
  std::string kv_transfer_address;       // prefill
  std::string kv_transfer_buffer = "1G";  // prefill
  std::vector<std::string> kv_sources;   // decode
  double kv_fetch_timeout_s = 10.0;      // decode
  std::string kv_transfer_key;           // prefill and decode: the key file
  bool kv_import_shared = false;         // decode
  std::vector<std::string> prefill_urls, decode_urls;  // proxy
  double upstream_timeout_s = 600.0;                   // proxy

  bool is_proxy() const { return role == "proxy"; }

  void add_to(CLI::App* cmd) {
    cmd->add_option("--role", role,
                    "both (an ordinary server), prefill (computes prompts and keeps their K/V for decode "
                    "instances), decode (continues requests whose K/V a prefill instance computed), or proxy "
                    "(sends each request to a prefill instance, then to a decode instance; no model)")
        ->capture_default_str()->check(CLI::IsMember({"both", "prefill", "decode", "proxy"}));
    cmd->add_option("--kv-transfer-address", kv_transfer_address,
                    "Prefill: where decode instances fetch K/V from, and where this instance listens for them, "
                    "e.g. tcp://10.0.0.5:5600 (beyond loopback only with --kv-transfer-key)");
    cmd->add_option("--kv-transfer-key", kv_transfer_key,
                    "Prefill and decode: the deployment's KV-transfer key file (`lumen kv-transfer-key FILE` makes "
                    "one); the port then admits only peers holding it (ZeroMQ CURVE)");
    cmd->add_flag("--kv-import-shared", kv_import_shared,
                  "Decode: let other requests of the same tenant adopt imported K/V from the prefix cache (off: "
                  "each import serves only the request that fetched it)");
    cmd->add_option("--kv-transfer-buffer", kv_transfer_buffer,
                    "Prefill: memory for computed prompts' K/V waiting to be fetched; the oldest go first")
        ->capture_default_str();
    cmd->add_option("--kv-source", kv_sources,
                    "Decode: a prefill instance's --kv-transfer-address it may fetch K/V from (repeat for several)");
    cmd->add_option("--kv-fetch-timeout", kv_fetch_timeout_s,
                    "Decode: seconds a fetch may take before the prompt is computed here instead")
        ->capture_default_str()->check(CLI::Range(0.01, 600.0));
    cmd->add_option("--prefill", prefill_urls, "Proxy: a prefill instance, http://HOST:PORT (repeat for several)");
    cmd->add_option("--decode", decode_urls, "Proxy: a decode instance, http://HOST:PORT (repeat for several)");
    cmd->add_option("--upstream-timeout", upstream_timeout_s,
                    "Proxy: seconds a prefill instance may take for a prompt, and a decode instance may stay silent")
        ->capture_default_str()->check(CLI::Range(0.1, 86400.0));
  }

  // The routes' side; checks that each role has what it needs and no other role's flags.
  server::KvHandoffOptions handoff() const {
    server::KvHandoffOptions h;
    const bool prefill = role == "prefill", decode = role == "decode";
    if (!prefill && !kv_transfer_address.empty()) fail("--kv-transfer-address is for --role prefill");
    if (!decode && !kv_sources.empty()) fail("--kv-source is for --role decode");
    if (!prefill_urls.empty() || !decode_urls.empty()) fail("--prefill and --decode are for --role proxy");
    if (!prefill && !decode && !kv_transfer_key.empty()) fail("--kv-transfer-key is for --role prefill and decode");
    if (!decode && kv_import_shared) fail("--kv-import-shared is for --role decode");
    if (!kv_transfer_key.empty()) h.key = kv_transfer::load_transfer_key(kv_transfer_key);
    if (prefill) {
      if (kv_transfer_address.empty()) fail("--role prefill needs --kv-transfer-address (e.g. tcp://127.0.0.1:5600)");
      if (!h.key && !kv_transfer::is_local_endpoint(kv_transfer_address)) {
        fail(
            "--kv-transfer-address {} is reachable from the network: give the deployment's --kv-transfer-key "
            "(`lumen kv-transfer-key FILE` makes one), or listen on 127.0.0.1",
            kv_transfer_address);
      }
      h.role = server::ServeRole::Prefill;
      h.advertised_endpoint = kv_transfer_address;
    } else if (decode) {
      if (kv_sources.empty()) fail("--role decode needs --kv-source, the prefill instances' --kv-transfer-address");
      h.role = server::ServeRole::Decode;
      h.sources = kv_sources;
      h.share_imported = kv_import_shared;
    }
    h.fetch_timeout_s = kv_fetch_timeout_s;
    return h;
  }

  // A prefill instance keeps what it computed for decode instances to fetch.
  void apply_to(EngineConfig& config) const {
    if (role == "prefill") config.prompt_kv_store_bytes = EngineFlags::parse_bytes(kv_transfer_buffer, "--kv-transfer-buffer");
  }
};

}  // namespace lumen::cli
