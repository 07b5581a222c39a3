// Configuration checks for imports: the tuner's own SearchSpace decides what a kernel accepts.
#include "tuner/import_checks.h"

#include "compiler/kernel_library.h"
#include "support/error.h"
#include "support/text.h"
#include "tuner/search_space.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

namespace tilejit {

namespace {

// Large enough for any device's shared memory per block, small enough that constraint
// arithmetic on it cannot overflow.
constexpr int64_t kUnboundedSmem = int64_t(1) << 40;

std::string choices_text(const std::vector<int64_t>& values) {
  std::vector<std::string> parts;
  for (int64_t v : values) parts.push_back(std::to_string(v));
  if (parts.size() > 12) return str(values.front(), "..", values.back());
  return join(parts, "|");
}

} // namespace

ConfigCheck kernel_config_check(const dsl::Kernel& kernel, const TuneKey& key) {
  std::shared_ptr<SearchSpace> space;
  std::string bad_generics;
  try {
    space = std::make_shared<SearchSpace>(
        kernel, Bindings(key.generics.begin(), key.generics.end()), kUnboundedSmem);
  } catch (const Error& e) {
    bad_generics = str("the key's generics do not fit the kernel: ", e.what());
  }
  std::string name = kernel.name;
  return [space, bad_generics, name](const TuneConfig& config, bool measured) -> std::string {
    if (!space) return bad_generics;
    TuneConfig complete;
    for (const TunableAxis& axis : space->axes())
      complete[axis.name] = axis.values[axis.default_position];
    for (const auto& entry : config) {
      // Not structured bindings: clang 14 (the fuzz build) cannot capture them in a lambda.
      const std::string& tunable = entry.first;
      const auto& value = entry.second;
      auto axis = std::find_if(space->axes().begin(), space->axes().end(),
                               [&](const TunableAxis& a) { return a.name == tunable; });
      if (axis == space->axes().end()) {
        std::vector<std::string> names;
        for (const TunableAxis& a : space->axes()) names.push_back(a.name);
        return str(tunable, " is not a tunable of '", name,
                   "' (its tunables: ", names.empty() ? std::string("none") : join(names, ", "),
                   ")");
      }
      if (std::find(axis->values.begin(), axis->values.end(), value) == axis->values.end())
        return str(tunable, "=", value, " is not one of its choices ", choices_text(axis->values));
      complete[tunable] = value;
    }
    if (measured && !space->index_of(complete)) return space->why_not(complete);
    return "";
  };
}

KernelConfigChecks embedded_kernel_checks() {
  struct Library {
    std::once_flag loaded;
    std::vector<LoadedModule> modules;
    std::mutex mutex;
    std::map<std::string, ConfigCheck> checks; ///< by kernel, source hash and generics
  };
  auto library = std::make_shared<Library>();
  return [library](const TuneKey& key) -> ConfigCheck {
    // A workload's plan choice: one tunable, PLAN, a plan's index (which plans exist is the
    // workload's business: an index past them is ignored when read back).
    if (key.kernel.rfind(plan_key_prefix, 0) == 0)
      return [](const TuneConfig& config, bool) -> std::string {
        auto it = config.find(plan_tunable);
        if (config.size() != 1 || it == config.end())
          return str("a plan choice holds one tunable, ", plan_tunable, " (got '",
                     config_to_string(config), "')");
        if (it->second < 0 || it->second >= max_plans)
          return str(plan_tunable, "=", it->second, " is not a plan's index (0..", max_plans - 1,
                     ")");
        return "";
      };
    std::call_once(library->loaded, [&] {
      for (const std::string& path : embedded_tile_paths()) {
        try {
          library->modules.push_back(load_embedded_tile(path));
        } catch (const Error&) {
          // A shipped source that does not load is not a kernel anyone can have tuned.
        }
      }
    });
    for (const LoadedModule& m : library->modules) {
      if (m.source_hash != key.source_hash) continue;
      for (const auto& k : m.module->kernels) {
        if (k->name != key.kernel) continue;
        std::string id = str(key.kernel, "|", key.source_hash);
        for (const auto& [g, v] : key.generics) id += str("|", g, "=", v);
        std::lock_guard<std::mutex> lock(library->mutex);
        auto it = library->checks.find(id);
        if (it == library->checks.end())
          it = library->checks.emplace(id, kernel_config_check(*k, key)).first;
        return it->second;
      }
    }
    return {};
  };
}

} // namespace tilejit
