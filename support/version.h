// The version of this build of tilejit: what `tilejit --version` prints and tuning keys record.
#pragma once

#include <string>

namespace tilejit {

/// The project version, with the git commit when built from a git checkout:
/// "0.1.0+g0123456789ab", then "-dirty" when tracked files had uncommitted changes; "0.1.0"
/// alone when not built from a checkout. Fixed when the library is built.
const char* tilejit_version();

/// The git commit in a version string ("0123456789ab", "0123456789ab-dirty"), or "" when the
/// build did not come from a checkout: what `tilejit bench` records unless told otherwise.
std::string commit_of_version(const std::string& version);

} // namespace tilejit
