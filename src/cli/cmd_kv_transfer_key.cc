// `lumen kv-transfer-key FILE`: a fresh deployment key for the KV-transfer port of disaggregated
// prefill and decode (kv_transfer/transfer_key.h), for every instance's --kv-transfer-key.
#include <fmt/format.h>

#include <memory>
#include <string>

#include "cli/commands.h"
#include "kv_transfer/transfer_key.h"

namespace lumen::cli {

void add_kv_transfer_key_command(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "kv-transfer-key", "Write a new KV-transfer deployment key (a CURVE secret key) for --kv-transfer-key");
  cmd->add_option("FILE", *path, "Where to write it (mode 0600; an existing file is never replaced)")->required();
  cmd->callback([path] {
    kv_transfer::write_new_transfer_key(*path);
    fmt::print(stderr, "lumen: wrote a KV-transfer key to {}; give every prefill and decode instance a copy\n", *path);
  });
}

}  // namespace lumen::cli
