// Loading a vendor library at run time (libnvrtc, libamdhip64/libhiprtc): the first of several
// names dlopen finds, kept for the life of the process, and its entry points bound by name.
// tilejit builds and starts on machines without the library; it says what is missing only
// when asked to use it.
#pragma once

#include <string>
#include <vector>

namespace tilejit {

/// dlopen of the first of `names` that loads (RTLD_NOW | RTLD_LOCAL; never closed: programs may
/// be compiled from any thread at any time). Null when none loads; `path` is the one loaded.
void* open_first_library(const std::vector<std::string>& names, std::string& path);

/// The address of `name` in `lib`, or null.
void* library_symbol(void* lib, const char* name);

/// Binds `slot` to `name`; the first name not found goes to `missing` (then left null).
template <typename Fn>
void bind_symbol(void* lib, Fn& slot, const char* name, std::string& missing) {
  if (void* sym = library_symbol(lib, name))
    slot = reinterpret_cast<Fn>(sym);
  else if (missing.empty())
    missing = name;
}

} // namespace tilejit
