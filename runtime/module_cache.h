// Compiled-module cache: cubins keyed by a hash of everything that shapes them, kept in memory
// and in a directory shared by every tilejit process of the user, so a kernel compiles once.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tilejit {

/// Thread-safe two-level cache of compiled modules (memory, then disk). The disk layer is
/// best-effort: an unwritable directory or a failed write disables it (and says why through the
/// log callback) but never fails a compilation; a corrupt or truncated entry reads as a miss and
/// is replaced by the next put().
class ModuleCache {
public:
  /// Counters since construction.
  struct Stats {
    int64_t hits_memory = 0;
    int64_t hits_disk = 0;
    int64_t misses = 0;
  };

  /// `disk_dir`: nullopt picks default_dir(); an empty string keeps the cache in memory only.
  /// `log` receives one-line notes about the disk layer (disabled, corrupt entry replaced),
  /// from whichever thread hit the problem.
  /// `memory_limit_bytes` bounds the in-memory layer, least recently used evicted first.
  explicit ModuleCache(std::optional<std::string> disk_dir = std::nullopt,
                       std::function<void(std::string)> log = {},
                       size_t memory_limit_bytes = size_t(512) << 20);

  /// $TILEJIT_CACHE_DIR, else $XDG_CACHE_HOME/tilejit/modules, else ~/.cache/tilejit/modules;
  /// empty when none can be formed (no HOME).
  static std::string default_dir();

  /// Lower-case hex SHA-256 over every input that changes the compiled module. Fields are
  /// length-prefixed, so no two different inputs hash the same text.
  static std::string make_key(std::string_view source,
                              const std::vector<std::pair<std::string, std::string>>& headers,
                              const std::vector<std::string>& options, std::string_view arch,
                              std::string_view compiler_version);

  /// The cached module for `key`: memory first, then disk (promoted to memory on a hit).
  std::optional<std::string> get(const std::string& key);
  /// Stores `module` under `key` in memory and, when the disk layer is on, atomically on disk.
  void put(const std::string& key, std::string_view module);

  Stats stats() const;
  /// Whether entries are read from and written to disk.
  bool disk_enabled() const;
  /// The directory of the disk layer (empty when memory only).
  const std::string& disk_dir() const { return dir_; }
  /// Where `key`'s entry lives on disk: <disk_dir>/<key>.cubin.
  std::string entry_path(const std::string& key) const;

private:
  std::optional<std::string> read_disk(const std::string& key);
  void remember(const std::string& key, std::string module); // caller holds mutex_
  void disable_disk(const std::string& why);
  void note(const std::string& message) const;

  std::string dir_;
  std::function<void(std::string)> log_;
  size_t memory_limit_;

  mutable std::mutex mutex_; // guards everything below
  bool disk_on_ = false;
  Stats stats_;
  size_t memory_bytes_ = 0;
  std::list<std::string> lru_; // most recently used first
  struct Entry {
    std::string module;
    std::list<std::string>::iterator lru_pos;
  };
  std::unordered_map<std::string, Entry> entries_;
};

} // namespace tilejit
