#include "support/error.h"

namespace tilejit {

void throw_internal(const char* file, int line, const char* cond, const std::string& message) {
  throw InternalError(str("internal error at ", file, ":", line, ": invariant `", cond, "` broken",
                          message.empty() ? "" : ": ", message));
}

} // namespace tilejit
