#pragma once
// Reading one member out of a wheel (a zip archive) with libzip, streamed in blocks so a wheel
// of hundreds of MB is never held in memory.
#include <cstdint>
#include <functional>
#include <string>

namespace lumen::cli {

// Calls `sink` with the member's bytes in order. Throws lumen::Error when the archive is not a
// zip, has no such member, the member is larger than max_bytes, or its data is corrupt (libzip
// checks each member's CRC-32). Returns the member's size.
uint64_t stream_zip_member(const std::string& archive_path, const std::string& member, uint64_t max_bytes,
                           const std::function<void(const char*, size_t)>& sink);

}  // namespace lumen::cli
