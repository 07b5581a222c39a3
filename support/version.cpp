// The build's version string, from the header cmake/version_header_script.cmake generates at
// every build.
#include "support/version.h"

#include "tilejit_build_version.h"

namespace tilejit {

const char* tilejit_version() {
  return TILEJIT_BUILD_VERSION;
}

} // namespace tilejit
