#include "support/shared_library.h"

#include <dlfcn.h>

namespace tilejit {

void* open_first_library(const std::vector<std::string>& names, std::string& path) {
  for (const std::string& name : names)
    if (void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      path = name;
      return lib;
    }
  return nullptr;
}

void* library_symbol(void* lib, const char* name) {
  return dlsym(lib, name);
}

} // namespace tilejit
