// The build's version string, from the header cmake/version_header_script.cmake generates at
// every build.
#include "support/version.h"

#include "tilejit_build_version.h"

namespace tilejit {

const char* tilejit_version() {
  return TILEJIT_BUILD_VERSION;
}

std::string commit_of_version(const std::string& version) {
  const size_t g = version.find("+g");
  return g == std::string::npos ? std::string() : version.substr(g + 2);
}

} // namespace tilejit
