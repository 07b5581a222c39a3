// ModuleCache: keys, the memory and disk layers, corrupt entries, unwritable directories,
// and concurrent use.
#include "runtime/module_cache.h"

#include "support/error.h"
#include "support/text.h"

#include <atomic>
#include <filesystem>
#include <gtest/gtest.h>
#include <thread>
#include <unistd.h>

namespace tilejit {
namespace {

namespace fs = std::filesystem;

/// A fresh directory per test, removed afterwards.
class ModuleCacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           (std::string("tilejit-module-cache-") + info->name() + "-" + std::to_string(getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(dir_, ec);
  }
  std::string dir() const { return dir_.string(); }
  /// A cache on dir() whose log lines are collected in logs_.
  ModuleCache make_cache() {
    return ModuleCache(dir(), [this](std::string line) {
      std::lock_guard<std::mutex> lock(log_mutex_);
      logs_.push_back(std::move(line));
    });
  }
  std::string all_logs() {
    std::lock_guard<std::mutex> lock(log_mutex_);
    return join(logs_, "\n");
  }

  fs::path dir_;
  std::mutex log_mutex_;
  std::vector<std::string> logs_;
};

// A module with every byte value, NULs included: cubins are binary.
std::string binary_module(int seed, size_t size = 3000) {
  std::string m(size, '\0');
  for (size_t i = 0; i < size; ++i) m[i] = static_cast<char>((i * 31 + size_t(seed) * 7) & 0xff);
  return m;
}

const std::vector<std::pair<std::string, std::string>> kHeaders = {{"prelude.h", "#define A 1"}};
const std::vector<std::string> kOptions = {"-DBLOCK=128", "--use_fast_math"};

std::string base_key() {
  return ModuleCache::make_key("__global__ void k() {}", kHeaders, kOptions, "sm_90a", "13.0");
}

TEST(ModuleCacheKeyTest, IsStableHex) {
  std::string key = base_key();
  EXPECT_EQ(key.size(), 64u);
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(key, base_key());
}

TEST(ModuleCacheKeyTest, ChangesWithEveryInput) {
  const std::string src = "__global__ void k() {}";
  std::vector<std::string> keys = {
      base_key(),
      ModuleCache::make_key(src + " ", kHeaders, kOptions, "sm_90a", "13.0"),
      ModuleCache::make_key(src, {{"prelude.h", "#define A 2"}}, kOptions, "sm_90a", "13.0"),
      ModuleCache::make_key(src, {{"prelude2.h", "#define A 1"}}, kOptions, "sm_90a", "13.0"),
      ModuleCache::make_key(src, {}, kOptions, "sm_90a", "13.0"),
      ModuleCache::make_key(src, kHeaders, {"-DBLOCK=64", "--use_fast_math"}, "sm_90a", "13.0"),
      ModuleCache::make_key(src, kHeaders, {"--use_fast_math", "-DBLOCK=128"}, "sm_90a", "13.0"),
      ModuleCache::make_key(src, kHeaders, {"-DBLOCK=128"}, "sm_90a", "13.0"),
      ModuleCache::make_key(src, kHeaders, kOptions, "sm_90", "13.0"),
      ModuleCache::make_key(src, kHeaders, kOptions, "sm_90a", "12.8"),
      // Moving text between fields must change the key (fields are length-prefixed).
      ModuleCache::make_key(src, kHeaders, {"-DBLOCK=128--use_fast_math"}, "sm_90a", "13.0"),
      ModuleCache::make_key(src, kHeaders, kOptions, "sm_90a13.0", ""),
  };
  for (size_t i = 0; i < keys.size(); ++i)
    for (size_t j = i + 1; j < keys.size(); ++j) EXPECT_NE(keys[i], keys[j]) << i << " vs " << j;
}

TEST_F(ModuleCacheTest, MissThenMemoryHit) {
  ModuleCache cache = make_cache();
  ASSERT_TRUE(cache.disk_enabled()) << all_logs();
  std::string key = base_key();
  EXPECT_FALSE(cache.get(key).has_value());
  cache.put(key, binary_module(1));
  EXPECT_EQ(cache.get(key), binary_module(1));
  ModuleCache::Stats s = cache.stats();
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.hits_memory, 1);
  EXPECT_EQ(s.hits_disk, 0);
  EXPECT_TRUE(fs::exists(cache.entry_path(key)));
}

TEST_F(ModuleCacheTest, SharedDirectoryActsAcrossInstances) {
  // Two instances on one directory stand in for two processes.
  std::string key = base_key();
  {
    ModuleCache writer = make_cache();
    writer.put(key, binary_module(2));
  }
  ModuleCache reader = make_cache();
  EXPECT_EQ(reader.get(key), binary_module(2));
  EXPECT_EQ(reader.get(key), binary_module(2));
  ModuleCache::Stats s = reader.stats();
  EXPECT_EQ(s.hits_disk, 1);
  EXPECT_EQ(s.hits_memory, 1) << "a disk hit is promoted to memory";
  EXPECT_EQ(s.misses, 0);
  EXPECT_TRUE(all_logs().empty()) << all_logs();
}

TEST_F(ModuleCacheTest, TruncatedEntryIsAMissAndIsReplaced) {
  std::string key = base_key();
  make_cache().put(key, binary_module(3));
  std::string path = make_cache().entry_path(key);
  std::string full = read_file(path);
  write_file_atomic(path, full.substr(0, full.size() - 100));

  ModuleCache cache = make_cache();
  EXPECT_FALSE(cache.get(key).has_value());
  EXPECT_EQ(cache.stats().misses, 1);
  EXPECT_NE(all_logs().find("truncated"), std::string::npos) << all_logs();
  EXPECT_NE(all_logs().find(path), std::string::npos) << all_logs();

  cache.put(key, binary_module(3));
  EXPECT_EQ(make_cache().get(key), binary_module(3)) << "the next put rewrote the entry";
}

TEST_F(ModuleCacheTest, CorruptEntriesAreMisses) {
  std::string key = base_key();
  std::string path;
  {
    ModuleCache cache = make_cache();
    cache.put(key, binary_module(4));
    path = cache.entry_path(key);
  }
  std::string good = read_file(path);
  std::string flipped = good;
  flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 1);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {flipped, "checksum"},
      {"", "no header"},
      {"garbage without a newline", "no header"},
      {"some other file\n" + binary_module(4), "not a tilejit module"},
      {good.substr(0, good.find('\n')), "no header"},
  };
  for (const auto& [contents, why] : cases) {
    write_file_atomic(path, contents);
    logs_.clear();
    ModuleCache cache = make_cache();
    EXPECT_FALSE(cache.get(key).has_value()) << why;
    EXPECT_NE(all_logs().find(why), std::string::npos) << all_logs();
  }
}

TEST_F(ModuleCacheTest, EntryUnderTheWrongKeyIsRejected) {
  std::string key_a = base_key();
  std::string key_b = ModuleCache::make_key("other", {}, {}, "sm_80", "13.0");
  ModuleCache cache = make_cache();
  cache.put(key_a, binary_module(5));
  fs::copy_file(cache.entry_path(key_a), cache.entry_path(key_b));
  ModuleCache fresh = make_cache();
  EXPECT_FALSE(fresh.get(key_b).has_value());
  EXPECT_NE(all_logs().find("holds key"), std::string::npos) << all_logs();
}

TEST_F(ModuleCacheTest, UnwritableDirectoryFallsBackToMemory) {
  // A directory under a regular file cannot be created, even by root.
  fs::create_directories(dir_);
  write_file_atomic((dir_ / "blocker").string(), "x");
  std::vector<std::string> logs;
  ModuleCache cache((dir_ / "blocker" / "modules").string(),
                    [&](std::string line) { logs.push_back(line); });
  EXPECT_FALSE(cache.disk_enabled());
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_NE(logs[0].find("blocker"), std::string::npos) << logs[0];
  EXPECT_NE(logs[0].find("memory only"), std::string::npos) << logs[0];
  std::string key = base_key();
  EXPECT_NO_THROW(cache.put(key, binary_module(6)));
  EXPECT_EQ(cache.get(key), binary_module(6));
}

TEST_F(ModuleCacheTest, ReadOnlyDirectoryFallsBackToMemory) {
  if (geteuid() == 0) GTEST_SKIP() << "root writes through permission bits";
  fs::create_directories(dir_);
  fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec);
  std::vector<std::string> logs;
  ModuleCache cache(dir(), [&](std::string line) { logs.push_back(line); });
  EXPECT_FALSE(cache.disk_enabled());
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_NO_THROW(cache.put(base_key(), binary_module(7)));
}

TEST_F(ModuleCacheTest, DirectoryThatBreaksLaterDisablesDiskOnce) {
  ModuleCache cache = make_cache();
  ASSERT_TRUE(cache.disk_enabled());
  fs::remove_all(dir_);
  write_file_atomic(dir(), "now a file"); // the directory is gone, a file sits in its place
  EXPECT_NO_THROW(cache.put(base_key(), binary_module(8)));
  EXPECT_NO_THROW(cache.put(ModuleCache::make_key("x", {}, {}, "sm_80", "1"), binary_module(9)));
  EXPECT_FALSE(cache.disk_enabled());
  EXPECT_EQ(logs_.size(), 1u) << all_logs();
  EXPECT_EQ(cache.get(base_key()), binary_module(8)) << "memory still serves";
  fs::remove(dir_);
}

TEST_F(ModuleCacheTest, EmptyDirectoryMeansMemoryOnly) {
  ModuleCache cache(std::string(""));
  EXPECT_FALSE(cache.disk_enabled());
  cache.put(base_key(), "m");
  EXPECT_EQ(cache.get(base_key()), "m");
}

TEST_F(ModuleCacheTest, KeysMustBeFileSafe) {
  ModuleCache cache = make_cache();
  EXPECT_THROW(cache.put("../escape", "m"), Error);
  EXPECT_THROW(cache.get("a/b"), Error);
  EXPECT_THROW(cache.get(""), Error);
}

TEST_F(ModuleCacheTest, MemoryLimitEvictsLeastRecentlyUsed) {
  ModuleCache cache(std::string(""), {}, /*memory_limit_bytes=*/2500);
  cache.put("a", std::string(1000, 'a'));
  cache.put("b", std::string(1000, 'b'));
  EXPECT_TRUE(cache.get("a").has_value()); // a is now the most recent
  cache.put("c", std::string(1000, 'c'));  // over the limit: b goes
  EXPECT_TRUE(cache.get("a").has_value());
  EXPECT_FALSE(cache.get("b").has_value());
  EXPECT_TRUE(cache.get("c").has_value());
}

TEST_F(ModuleCacheTest, ConcurrentPutAndGet) {
  // Threads of two instances (two "processes") hammer overlapping keys on one directory.
  ModuleCache a = make_cache();
  ModuleCache b = make_cache();
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&, t] {
      ModuleCache& cache = t % 2 ? a : b;
      for (int i = 0; i < 40; ++i) {
        std::string key = ModuleCache::make_key(std::to_string(i % 10), {}, {}, "sm_80", "13.0");
        if (auto m = cache.get(key))
          EXPECT_EQ(*m, binary_module(i % 10));
        else
          cache.put(key, binary_module(i % 10));
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_TRUE(a.disk_enabled()) << all_logs();
  EXPECT_TRUE(b.disk_enabled()) << all_logs();
  EXPECT_TRUE(all_logs().empty()) << all_logs();
  ModuleCache fresh = make_cache();
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(fresh.get(ModuleCache::make_key(std::to_string(i), {}, {}, "sm_80", "13.0")),
              binary_module(i));
}

TEST_F(ModuleCacheTest, ThreadsWritingOneFileEachRenameAWholeFile) {
  // Eight threads write one path at once, each a megabyte of its own byte, many times. Every
  // read in between and the file at the end hold one writer's complete contents, and no
  // temporary file is left behind.
  const std::string path = (dir_ / "shared.bin").string();
  constexpr size_t kBytes = size_t(1) << 20;
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      const std::string mine(kBytes, static_cast<char>('a' + t));
      for (int round = 0; round < 6; ++round) {
        try {
          write_file_atomic(path, mine);
          std::string seen = read_file(path);
          if (seen.size() != kBytes || seen.find_first_not_of(seen[0]) != std::string::npos)
            ++errors;
        } catch (const std::exception&) {
          ++errors;
        }
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  std::string last = read_file(path);
  ASSERT_EQ(last.size(), kBytes);
  EXPECT_EQ(last.find_first_not_of(last[0]), std::string::npos);
  for (const auto& entry : fs::directory_iterator(dir_))
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << entry.path();
}

TEST(ModuleCacheDirTest, DefaultDirFollowsTheEnvironment) {
  std::string saved_tj = getenv("TILEJIT_CACHE_DIR") ? getenv("TILEJIT_CACHE_DIR") : "";
  std::string saved_xdg = getenv("XDG_CACHE_HOME") ? getenv("XDG_CACHE_HOME") : "";
  std::string saved_home = getenv("HOME") ? getenv("HOME") : "";
  setenv("TILEJIT_CACHE_DIR", "/tmp/tj", 1);
  setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(ModuleCache::default_dir(), "/tmp/tj");
  unsetenv("TILEJIT_CACHE_DIR");
  EXPECT_EQ(ModuleCache::default_dir(), "/tmp/xdg/tilejit/modules");
  unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(ModuleCache::default_dir(), "/home/u/.cache/tilejit/modules");
  unsetenv("HOME");
  EXPECT_EQ(ModuleCache::default_dir(), "");
  auto restore = [](const char* name, const std::string& value) {
    if (value.empty())
      unsetenv(name);
    else
      setenv(name, value.c_str(), 1);
  };
  restore("TILEJIT_CACHE_DIR", saved_tj);
  restore("XDG_CACHE_HOME", saved_xdg);
  restore("HOME", saved_home);
}

} // namespace
} // namespace tilejit
