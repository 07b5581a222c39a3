// SearchSpace: one pass over the cartesian product of the tunables' choices, evaluating the
// kernel's `where` constraints on the host (the same rule specialise applies), so that no
// configuration that cannot compile is ever handed to the compiler.
#include "tuner/search_space.h"

#include "compiler/host_eval.h"
#include "dsl/ast_printer.h"
#include "support/error.h"
#include "support/text.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <tuple>

namespace tilejit {

namespace {

std::string choices_text(const std::vector<int64_t>& values) {
  std::vector<std::string> parts;
  for (int64_t v : values) parts.push_back(std::to_string(v));
  if (parts.size() > 12) return str(values.front(), "..", values.back());
  return join(parts, "|");
}

std::optional<int64_t> parse_int(const std::string& text) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE) return std::nullopt;
  return v;
}

std::string rule_location(const dsl::SourceLoc& loc) {
  return str(loc.path(), ":", loc.line);
}

} // namespace

SearchSpace::SearchSpace(const dsl::Kernel& kernel, const Bindings& fixed, int64_t smem_limit,
                         int warp)
    : kernel_name_(kernel.name) {
  // complete_bindings validates every given value and rejects unknown names, with the same
  // messages a launch would give.
  Bindings complete = complete_bindings(kernel, fixed);
  for (const auto& g : kernel.generics) generics_[g.name] = complete.at(g.name);
  for (const auto& t : kernel.tunables) {
    TunableAxis axis;
    axis.name = t.name;
    if (fixed.count(t.name)) {
      // A pinned tunable is an axis of one value.
      axis.values = {*parse_int(complete.at(t.name))};
    } else {
      axis.values = t.choice.ints;
      int64_t def = t.choice.has_default ? t.choice.default_int : t.choice.ints.front();
      auto it = std::find(axis.values.begin(), axis.values.end(), def);
      if (it == axis.values.end())
        throw Error(str("kernel '", kernel.name, "': default ", t.name, "=", def,
                        " is not one of its choices ", choices_text(axis.values)));
      axis.default_position = static_cast<size_t>(it - axis.values.begin());
    }
    TJ_ICHECK(!axis.values.empty(), "tunable ", t.name, " has no choices");
    axes_.push_back(std::move(axis));
  }
  // Strides with the last tunable varying fastest; refuse products too large to enumerate.
  strides_.assign(axes_.size(), 1);
  uint64_t product = 1;
  for (size_t a = axes_.size(); a-- > 0;) {
    strides_[a] = product;
    uint64_t n = axes_[a].values.size();
    if (product > max_points / n) {
      std::vector<std::string> dims;
      for (const auto& ax : axes_) dims.push_back(str(ax.name, ":", ax.values.size()));
      throw Error(str("kernel '", kernel.name, "': the tuning space (", join(dims, " x "),
                      ") has more than ", max_points,
                      " points; narrow the tune ranges or pin some tunables"));
    }
    product *= n;
  }
  enumerate(kernel, smem_limit, warp);
  choose_default();
}

void SearchSpace::enumerate(const dsl::Kernel& kernel, int64_t smem_limit, int warp) {
  HostEnv env;
  env["SMEM"] = HostValue::of_int(smem_limit);
  for (const auto& g : kernel.generics)
    if (!g.choice.is_dtype) env[g.name] = HostValue::of_int(*parse_int(generics_.at(g.name)));
  std::vector<HostValue*> slots;
  for (const auto& axis : axes_) {
    env[axis.name] = HostValue::of_int(axis.values.front());
    slots.push_back(&env[axis.name]); // map nodes are stable: update in place per point
  }
  for (const auto& w : kernel.where)
    rules_.push_back(str(rule_location(w->loc), ": ", dsl::expr_to_string(*w)));
  // `threads` must be a multiple of the target's warp in warp..1024 (specialise refuses
  // others: 32 on NVIDIA GPUs, a wavefront of 64 on gfx90a); it often depends on a tunable
  // (WARPS * 32), so it prunes like a constraint.
  const dsl::Expr* threads = kernel.threads.get();
  if (threads)
    rules_.push_back(str(rule_location(threads->loc), ": threads ", dsl::expr_to_string(*threads),
                         " must be a multiple of ", warp, " in ", warp, "..1024",
                         warp != 32 ? " (the target's wavefront)" : ""));
  TJ_ICHECK(rules_.size() < UINT16_MAX, "too many constraints for 16-bit verdicts");

  uint64_t product = 1;
  for (const auto& axis : axes_) product *= axis.values.size();
  verdicts_.assign(product, 0);
  std::vector<size_t> pos(axes_.size(), 0);
  for (uint64_t point = 0; point < product; ++point) {
    uint16_t verdict = 0;
    for (size_t k = 0; k < kernel.where.size() && verdict == 0; ++k) {
      std::string missing;
      std::optional<HostValue> v;
      try {
        v = host_eval(*kernel.where[k], env, &missing);
      } catch (const Error&) {
        v = HostValue::of_bool(false); // division by zero for this point: it cannot compile
      }
      if (!v)
        throw Error(str(rules_[k], ": 'where' uses '", missing,
                        "', which has no compile-time value (only generics, tunables and SMEM)"));
      if (!v->b) verdict = static_cast<uint16_t>(k + 1);
    }
    if (verdict == 0 && threads) {
      std::optional<HostValue> v;
      try {
        v = host_eval(*threads, env);
      } catch (const Error&) {
        v = HostValue::of_int(0);
      }
      // A name the host cannot evaluate here is left for the compiler to report.
      if (v && (v->i <= 0 || v->i > 1024 || v->i % warp != 0))
        verdict = static_cast<uint16_t>(rules_.size());
    }
    verdicts_[point] = verdict;
    if (verdict == 0) valid_.push_back(point);
    // Odometer step: the last axis varies fastest.
    for (size_t a = axes_.size(); a-- > 0;) {
      if (++pos[a] < axes_[a].values.size()) {
        *slots[a] = HostValue::of_int(axes_[a].values[pos[a]]);
        break;
      }
      pos[a] = 0;
      *slots[a] = HostValue::of_int(axes_[a].values[0]);
    }
  }
  if (valid_.empty()) {
    std::vector<std::string> reasons;
    for (const auto& r : prune_reasons()) reasons.push_back(str(r.constraint, " (", r.count, ")"));
    throw Error(str("kernel '", kernel_name_, "': all ", product,
                    " configurations break a constraint for ",
                    join(
                        [&] {
                          std::vector<std::string> g;
                          for (const auto& [n, v] : generics_) g.push_back(n + "=" + v);
                          return g;
                        }(),
                        ", "),
                    " and SMEM=", smem_limit, ": ", join(reasons, "; ")));
  }
}

void SearchSpace::choose_default() {
  std::vector<size_t> pos;
  for (const auto& axis : axes_) pos.push_back(axis.default_position);
  uint64_t point = point_of_positions(pos);
  if (auto i = index_of_point(point)) {
    default_index_ = *i;
    return;
  }
  // The valid point that changes the fewest tunables, then moves them the fewest steps along
  // their choice lists, then keeps the earlier tunables (declared first: the larger choices,
  // block sizes before pipeline depths): a stand-in that keeps what the author chose where it
  // can (the nearest in product order would move the fastest axes to their ends).
  size_t best = 0;
  std::tuple<size_t, size_t, std::vector<size_t>> best_cost = {SIZE_MAX, SIZE_MAX, {}};
  for (size_t i = 0; i < valid_.size(); ++i) {
    const std::vector<size_t> q = positions_of_point(valid_[i]);
    std::tuple<size_t, size_t, std::vector<size_t>> cost = {0, 0, {}};
    for (size_t a = 0; a < pos.size(); ++a) {
      const size_t d = q[a] > pos[a] ? q[a] - pos[a] : pos[a] - q[a];
      std::get<0>(cost) += d != 0;
      std::get<1>(cost) += d;
      std::get<2>(cost).push_back(d);
    }
    if (cost < best_cost) best = i, best_cost = std::move(cost);
  }
  default_index_ = best;
  TuneConfig declared;
  for (size_t a = 0; a < axes_.size(); ++a) declared[axes_[a].name] = axes_[a].values[pos[a]];
  default_note_ = str("the declared default ", config_to_string(declared), " breaks constraint '",
                      rules_[verdicts_[point] - 1], "'; using the valid config nearest to it, ",
                      describe(best), " instead");
}

std::vector<PruneReason> SearchSpace::prune_reasons() const {
  std::vector<size_t> counts(rules_.size(), 0);
  for (uint16_t v : verdicts_)
    if (v) ++counts[v - 1];
  std::vector<PruneReason> out;
  for (size_t k = 0; k < rules_.size(); ++k)
    if (counts[k]) out.push_back({rules_[k], counts[k]});
  return out;
}

std::vector<PrunedConfig> SearchSpace::pruned_configs(size_t limit) const {
  std::vector<PrunedConfig> out;
  for (uint64_t point = 0; point < verdicts_.size() && out.size() < limit; ++point) {
    if (!verdicts_[point]) continue;
    TuneConfig config;
    std::vector<size_t> pos = positions_of_point(point);
    for (size_t a = 0; a < axes_.size(); ++a) config[axes_[a].name] = axes_[a].values[pos[a]];
    out.push_back({std::move(config), rules_[verdicts_[point] - 1]});
  }
  return out;
}

Bindings SearchSpace::config(size_t i) const {
  Bindings out = generics_;
  for (const auto& [name, value] : tune_config(i)) out[name] = std::to_string(value);
  return out;
}

TuneConfig SearchSpace::tune_config(size_t i) const {
  TJ_ICHECK(i < valid_.size(), "config index ", i, " out of a space of ", valid_.size());
  std::vector<size_t> pos = positions_of_point(valid_[i]);
  TuneConfig out;
  for (size_t a = 0; a < axes_.size(); ++a) out[axes_[a].name] = axes_[a].values[pos[a]];
  return out;
}

std::optional<uint64_t> SearchSpace::point_of(const TuneConfig& config, std::string* why) const {
  std::vector<size_t> pos;
  for (const auto& axis : axes_) {
    auto it = config.find(axis.name);
    if (it == config.end()) {
      if (why) *why = str("tunable ", axis.name, " has no value");
      return std::nullopt;
    }
    auto v = std::find(axis.values.begin(), axis.values.end(), it->second);
    if (v == axis.values.end()) {
      if (why) *why = str(axis.name, "=", it->second, " is not one of ", choices_text(axis.values));
      return std::nullopt;
    }
    pos.push_back(static_cast<size_t>(v - axis.values.begin()));
  }
  if (config.size() != axes_.size()) {
    for (const auto& entry : config) {
      const std::string& name = entry.first; // not a structured binding: lambdas capture it
      bool known = std::any_of(axes_.begin(), axes_.end(),
                               [&](const TunableAxis& a) { return a.name == name; });
      if (!known) {
        if (why) *why = str("kernel '", kernel_name_, "' has no tunable ", name);
        return std::nullopt;
      }
    }
  }
  return point_of_positions(pos);
}

std::optional<size_t> SearchSpace::index_of(const TuneConfig& config) const {
  auto point = point_of(config, nullptr);
  if (!point) return std::nullopt;
  return index_of_point(*point);
}

std::optional<size_t> SearchSpace::index_of(const Bindings& config) const {
  TuneConfig tunables;
  for (const auto& [name, value] : config) {
    auto g = generics_.find(name);
    if (g != generics_.end()) {
      if (g->second != value) return std::nullopt;
      continue;
    }
    auto v = parse_int(value);
    if (!v) return std::nullopt;
    tunables[name] = *v;
  }
  return index_of(tunables);
}

std::string SearchSpace::why_not(const TuneConfig& config) const {
  std::string why;
  auto point = point_of(config, &why);
  if (!point) return why;
  if (uint16_t v = verdicts_[*point]) return str("breaks constraint '", rules_[v - 1], "'");
  return "";
}

std::vector<size_t> SearchSpace::neighbours(size_t i) const {
  TJ_ICHECK(i < valid_.size(), "config index ", i, " out of a space of ", valid_.size());
  std::vector<size_t> pos = positions_of_point(valid_[i]);
  std::vector<size_t> out;
  for (size_t a = 0; a < axes_.size(); ++a) {
    for (int step : {-1, 1}) {
      if ((step < 0 && pos[a] == 0) || (step > 0 && pos[a] + 1 == axes_[a].values.size())) continue;
      std::vector<size_t> moved = pos;
      moved[a] = pos[a] + step;
      if (auto j = index_of_point(point_of_positions(moved))) out.push_back(*j);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<size_t> SearchSpace::positions_of_point(uint64_t point) const {
  std::vector<size_t> pos(axes_.size());
  for (size_t a = 0; a < axes_.size(); ++a) {
    pos[a] = static_cast<size_t>(point / strides_[a]);
    point %= strides_[a];
  }
  return pos;
}

uint64_t SearchSpace::point_of_positions(const std::vector<size_t>& positions) const {
  uint64_t point = 0;
  for (size_t a = 0; a < axes_.size(); ++a) point += positions[a] * strides_[a];
  return point;
}

std::optional<size_t> SearchSpace::index_of_point(uint64_t point) const {
  auto it = std::lower_bound(valid_.begin(), valid_.end(), point);
  if (it == valid_.end() || *it != point) return std::nullopt;
  return static_cast<size_t>(it - valid_.begin());
}

bool bindings_hold(const dsl::Kernel& kernel, const Bindings& complete, int64_t smem_limit,
                   int warp) {
  HostEnv env;
  env["SMEM"] = HostValue::of_int(smem_limit);
  try {
    for (const auto& g : kernel.generics)
      if (!g.choice.is_dtype) env[g.name] = HostValue::of_int(std::stoll(complete.at(g.name)));
    for (const auto& t : kernel.tunables)
      env[t.name] = HostValue::of_int(std::stoll(complete.at(t.name)));
    for (const auto& w : kernel.where) {
      auto v = host_eval(*w, env, nullptr);
      if (!v || !v->b) return false;
    }
    if (kernel.threads)
      if (auto v = host_eval(*kernel.threads, env, nullptr))
        if (v->i <= 0 || v->i > 1024 || v->i % warp != 0) return false;
  } catch (const std::exception&) {
    return false; // a value that is not an integer, a division by zero
  }
  return true;
}

Bindings complete_valid_bindings(const dsl::Kernel& kernel, const Bindings& given,
                                 int64_t smem_limit, std::string* note, int warp) {
  Bindings complete = complete_bindings(kernel, given);
  // The common case first, without enumerating the space: every constraint holds.
  if (bindings_hold(kernel, complete, smem_limit, warp)) return complete;
  try {
    SearchSpace space(kernel, given, smem_limit, warp);
    if (space.default_note().empty()) return complete;
    if (note) *note = space.default_note();
    return space.config(space.default_index());
  } catch (const Error&) {
    return complete; // nothing valid with the given values: specialise names the constraint
  }
}

} // namespace tilejit
