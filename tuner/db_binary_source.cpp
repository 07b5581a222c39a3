#include "tuner/db_binary_source.h"

#include "support/error.h"

namespace tilejit {

BinarySource make_db_binary_source(std::shared_ptr<TuneDatabase> db,
                                   std::function<void(const std::string&)> log) {
  return [db = std::move(db),
          log = std::move(log)](const std::string& key) -> std::optional<std::string> {
    try {
      return db->get_binary(key);
    } catch (const std::exception& e) {
      if (log) log(str("tuning database binary lookup failed, compiling instead: ", e.what()));
      return std::nullopt;
    }
  };
}

} // namespace tilejit
