// The tuning database as the runtime's second store of compiled modules: `tilejit tune` puts
// each winner's cubin in the database, so that a runtime on another machine with the same GPU
// and toolchain (after `tilejit cache import`) launches the winners without compiling them.
#pragma once

#include "tuner/tune_database.h"

#include <tilejit/tilejit.h>

#include <memory>
#include <string>

namespace tilejit {

/// A BinarySource over `db`'s binaries table. A lookup that fails (a locked or unreadable
/// database) counts as a miss: the runtime compiles instead, and `log` (if set) says why.
BinarySource make_db_binary_source(std::shared_ptr<TuneDatabase> db,
                                   std::function<void(const std::string&)> log = {});

} // namespace tilejit
