// Small string helpers used across stages (joining, splitting, number formatting).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tilejit {

std::string join(const std::vector<std::string>& parts, std::string_view sep);
std::vector<std::string> split(std::string_view text, char sep);
std::string_view trim(std::string_view text);
bool starts_with(std::string_view text, std::string_view prefix);
bool ends_with(std::string_view text, std::string_view suffix);
/// Shortest round-tripping form of a double ("0.5", "1e-05", "3").
std::string format_double(double value);
/// Reads a whole file; throws tilejit::Error naming the path when it cannot (missing, a
/// directory, unreadable).
std::string read_file(const std::string& path);
/// Writes atomically (temporary file + rename) so readers never see half a file; the temporary
/// file is removed on failure and when SIGINT/SIGTERM/SIGHUP interrupts the write.
void write_file_atomic(const std::string& path, std::string_view contents);
/// An on/off switch from the environment: unset, empty or "1" is on, "0" off; anything else
/// throws tilejit::Error naming the variable, its value and `meaning` (what the switch does).
bool env_switch(const char* name, std::string_view meaning);

} // namespace tilejit
