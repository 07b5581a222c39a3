// Memory + disk cache of compiled modules (see module_cache.h).
#include "runtime/module_cache.h"

#include "support/error.h"
#include "support/sha256.h"
#include "support/text.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <unistd.h>

namespace tilejit {

namespace {

// Entry file: one header line, then the module bytes.
//   tilejit-module v1 <key> <module size> <sha256 of module>\n<module>
// The size and checksum catch truncated and corrupted files; the key catches a file renamed
// or copied into the wrong place.
constexpr std::string_view kMagic = "tilejit-module";
constexpr std::string_view kFormat = "v1";

void check_key(const std::string& key) {
  bool ok = !key.empty() && key.size() <= 128;
  for (char c : key)
    ok = ok && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                c == '-' || c == '_');
  if (!ok)
    throw Error(str("module cache key '", key,
                    "' is not a file-safe name (1-128 letters, digits, '-' or '_')"));
}

/// Appends `text` length-prefixed, so field boundaries are part of what is hashed.
void add_field(std::string& out, std::string_view text) {
  out += std::to_string(text.size());
  out += ':';
  out += text;
  out += '\n';
}

/// Why `dir` cannot hold cache entries, or empty when a file can be created in it.
std::string unwritable_reason(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return str("cannot create '", dir, "': ", ec.message());
  // Try a real file rather than access(2): that is what put() will do, and access() says yes to
  // root even where a read-only mount would refuse.
  std::string probe = str(dir, "/.write-test.", ::getpid());
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return str("cannot write in '", dir, "': ", std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
  return "";
}

} // namespace

ModuleCache::ModuleCache(std::optional<std::string> disk_dir, std::function<void(std::string)> log,
                         size_t memory_limit_bytes)
    : log_(std::move(log)), memory_limit_(memory_limit_bytes) {
  dir_ = disk_dir ? *disk_dir : default_dir();
  if (dir_.empty()) {
    if (!disk_dir) note("module cache: no cache directory (HOME is not set); memory only");
    return;
  }
  if (std::string why = unwritable_reason(dir_); !why.empty()) {
    note(str("module cache: ", why, "; disk cache disabled, memory only"));
    return;
  }
  disk_on_ = true;
}

std::string ModuleCache::default_dir() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  if (std::string d = env("TILEJIT_CACHE_DIR"); !d.empty()) return d;
  if (std::string d = env("XDG_CACHE_HOME"); !d.empty()) return d + "/tilejit/modules";
  if (std::string d = env("HOME"); !d.empty()) return d + "/.cache/tilejit/modules";
  return "";
}

std::string ModuleCache::make_key(std::string_view source,
                                  const std::vector<std::pair<std::string, std::string>>& headers,
                                  const std::vector<std::string>& options, std::string_view arch,
                                  std::string_view compiler_version) {
  std::string text = "tilejit module key v1\n";
  add_field(text, source);
  add_field(text, std::to_string(headers.size()));
  for (const auto& [name, contents] : headers) {
    add_field(text, name);
    add_field(text, contents);
  }
  add_field(text, std::to_string(options.size()));
  for (const std::string& o : options) add_field(text, o);
  add_field(text, arch);
  add_field(text, compiler_version);
  return sha256_hex(text);
}

std::string ModuleCache::entry_path(const std::string& key) const {
  return str(dir_, "/", key, ".cubin");
}

std::optional<std::string> ModuleCache::get(const std::string& key) {
  check_key(key);
  bool try_disk = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = entries_.find(key); it != entries_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.lru_pos);
      ++stats_.hits_memory;
      return it->second.module;
    }
    try_disk = disk_on_;
  }
  // Disk I/O happens outside the lock so other threads keep hitting memory meanwhile.
  std::optional<std::string> module = try_disk ? read_disk(key) : std::nullopt;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!module) {
    ++stats_.misses;
    return std::nullopt;
  }
  ++stats_.hits_disk;
  remember(key, *module);
  return module;
}

std::optional<std::string> ModuleCache::read_disk(const std::string& key) {
  std::string path = entry_path(key);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  std::string file;
  try {
    file = read_file(path);
  } catch (const Error& e) {
    note(str("module cache: ", e.what(), "; treated as a miss"));
    return std::nullopt;
  }
  auto corrupt = [&](const std::string& why) -> std::optional<std::string> {
    note(str("module cache: ignoring corrupt entry '", path, "' (", why, "); it will be replaced"));
    return std::nullopt;
  };
  size_t eol = file.find('\n');
  if (eol == std::string::npos || eol > 512) return corrupt("no header line");
  std::vector<std::string> fields = split(std::string_view(file).substr(0, eol), ' ');
  if (fields.size() != 5 || fields[0] != kMagic || fields[1] != kFormat)
    return corrupt("not a tilejit module entry");
  if (fields[2] != key) return corrupt(str("holds key ", fields[2]));
  std::string_view body = std::string_view(file).substr(eol + 1);
  if (fields[3] != std::to_string(body.size()))
    return corrupt(str("truncated: ", body.size(), " of ", fields[3], " bytes"));
  if (fields[4] != sha256_hex(body)) return corrupt("checksum mismatch");
  return std::string(body);
}

void ModuleCache::put(const std::string& key, std::string_view module) {
  check_key(key);
  bool write_disk = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    remember(key, std::string(module));
    write_disk = disk_on_;
  }
  if (!write_disk) return;
  std::string contents =
      str(kMagic, " ", kFormat, " ", key, " ", module.size(), " ", sha256_hex(module), "\n");
  contents += module;
  try {
    write_file_atomic(entry_path(key), contents); // safe when threads store one key at once
  } catch (const std::exception& e) { // tilejit::Error or std::filesystem::filesystem_error
    disable_disk(e.what());
  }
}

void ModuleCache::remember(const std::string& key, std::string module) {
  if (auto it = entries_.find(key); it != entries_.end()) {
    memory_bytes_ -= it->second.module.size();
    lru_.erase(it->second.lru_pos);
    entries_.erase(it);
  }
  memory_bytes_ += module.size();
  lru_.push_front(key);
  entries_.emplace(key, Entry{std::move(module), lru_.begin()});
  // Keep at least the newest entry even when it alone exceeds the limit.
  while (memory_bytes_ > memory_limit_ && entries_.size() > 1) {
    auto victim = entries_.find(lru_.back());
    memory_bytes_ -= victim->second.module.size();
    entries_.erase(victim);
    lru_.pop_back();
  }
}

void ModuleCache::disable_disk(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!disk_on_) return; // say it once
    disk_on_ = false;
  }
  note(str("module cache: ", why, "; disk cache disabled, memory only"));
}

void ModuleCache::note(const std::string& message) const {
  if (log_) log_(message);
}

ModuleCache::Stats ModuleCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

bool ModuleCache::disk_enabled() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return disk_on_;
}

} // namespace tilejit
