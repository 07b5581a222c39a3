#include "support/text.h"

#include "support/error.h"
#include "support/temp_files.h"

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

namespace tilejit {

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = text.find(sep, start);
    if (pos == std::string_view::npos) {
      out.emplace_back(text.substr(start));
      return out;
    }
    out.emplace_back(text.substr(start, pos - start));
    start = pos + 1;
  }
}

std::string_view trim(std::string_view text) {
  size_t b = 0, e = text.size();
  while (b < e && (text[b] == ' ' || text[b] == '\t' || text[b] == '\n' || text[b] == '\r')) ++b;
  while (e > b &&
         (text[e - 1] == ' ' || text[e - 1] == '\t' || text[e - 1] == '\n' || text[e - 1] == '\r'))
    --e;
  return text.substr(b, e - b);
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

std::string format_double(double value) {
  // "%g" at the fewest significant digits that read back as the same double. fmt's shortest form
  // ("{}") has that many digits or fewer, so counting them skips the precisions that cannot
  // round-trip; "%g" keeps the printf spelling ("1e+05", not "100000"), which generated code
  // and printed IR hold.
  std::string shortest = fmt::format("{}", value);
  std::string_view mantissa(shortest);
  mantissa = mantissa.substr(0, mantissa.find_first_of("eE"));
  std::string digits;
  for (char c : mantissa)
    if (c >= '0' && c <= '9') digits += c;
  size_t first = digits.find_first_not_of('0');
  size_t last = digits.find_last_not_of('0');
  int precision = first == std::string::npos ? 1 : static_cast<int>(last - first + 1);
  std::string text;
  for (; precision <= 17; ++precision) {
    text = fmt::format("{:.{}g}", value, precision);
    if (std::strtod(text.c_str(), nullptr) == value) break;
  }
  return text;
}

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(str("cannot read '", path, "': it is a directory, not a file"));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(str("cannot read '", path, "': ", std::strerror(errno)));
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_file_atomic(const std::string& path, std::string_view contents) {
  namespace fs = std::filesystem;
  fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path());
  // A temporary name of its own per call (process id and a per-process counter): threads and
  // processes writing one path at once each rename a complete file, and the last one wins.
  static std::atomic<uint64_t> next_temp{0};
  std::string tmp = str(path, ".tmp.", ::getpid(), ".", next_temp.fetch_add(1));
  // Ctrl-C or a kill while the (possibly large) file is written must not leave it behind.
  TempFileGuard guard(tmp);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(str("cannot write '", tmp, "': ", std::strerror(errno)));
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    if (!out) {
      const int err = errno;
      out.close();
      std::error_code ignored;
      fs::remove(tmp, ignored);
      throw Error(str("cannot write '", tmp, "': ", std::strerror(err)));
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw Error(str("cannot rename '", tmp, "' to '", path, "': ", ec.message()));
  }
}

bool env_switch(const char* name, std::string_view meaning) {
  const char* v = std::getenv(name);
  if (!v || !*v || std::string_view(v) == "1") return true;
  if (std::string_view(v) == "0") return false;
  throw Error(std::string(name) + "='" + v + "' is not 0 or 1 (" + std::string(meaning) + ")");
}

} // namespace tilejit
