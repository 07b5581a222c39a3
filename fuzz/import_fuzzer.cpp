// libFuzzer target for `tilejit cache import`: bytes as an export file merged into a fresh
// tuning database, with the CLI's checks against the shipped kernels. A tilejit::Error naming the
// problem is the expected answer to bad input; an uncaught exception (a JSON type error), a crash,
// a sanitizer report or a leak is a finding.
#include "support/error.h"
#include "tuner/import_checks.h"
#include "tuner/tune_database.h"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("tilejit-import-fuzz-" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  const fs::path file = dir / "export.json", db = dir / "tuning.db";
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(db.string() + suffix, ec);
  try {
    tilejit::TuneDatabase database(db.string());
    (void)database.import_from(file.string(),
                               tilejit::ImportOptions{tilejit::embedded_kernel_checks()});
    (void)database.list();
  } catch (const tilejit::Error&) {
    // a clear error: what bad input should get
  }
  return 0;
}
