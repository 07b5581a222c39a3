#include "compiler/launch_plan.h"

#include "dsl/ast_printer.h"
#include "dsl/builtins.h"
#include "support/text.h"

#include <limits>
#include <set>

namespace tilejit {
namespace {

std::string shape_text(const std::vector<int64_t>& s) {
  std::vector<std::string> p;
  for (int64_t d : s) p.push_back(std::to_string(d));
  return "[" + join(p, ", ") + "]";
}

std::string declared_text(const dsl::Param& p) {
  return p.name + ": " + dsl::type_to_string(p.type);
}

/// Adds every name an expression reads to `names`.
void collect_names(const dsl::Expr& e, std::set<std::string>& names) {
  if (e.kind == dsl::ExprKind::Name) names.insert(e.name);
  if (e.lhs) collect_names(*e.lhs, names);
  if (e.rhs) collect_names(*e.rhs, names);
  for (const auto& a : e.args) collect_names(*a, names);
  for (const auto& kw : e.kwargs) collect_names(*kw.value, names);
  for (const auto& item : e.index)
    for (const dsl::Expr* part : {item.expr.get(), item.start.get(), item.stop.get()})
      if (part) collect_names(*part, names);
}

/// Adds the tensors that store and atomic calls in `e` write to `names`.
void collect_written(const dsl::Expr& e, std::set<std::string>& names) {
  if (e.kind == dsl::ExprKind::Call && !e.args.empty()) {
    const dsl::BuiltinInfo* b = dsl::find_builtin(e.name);
    if (b && (b->kind == dsl::BuiltinKind::Store || b->kind == dsl::BuiltinKind::AtomicAdd)) {
      const dsl::Expr& target = *e.args[0];
      if (target.kind == dsl::ExprKind::Name) names.insert(target.name);
      if (target.kind == dsl::ExprKind::Index && target.lhs &&
          target.lhs->kind == dsl::ExprKind::Name)
        names.insert(target.lhs->name);
    }
  }
  if (e.lhs) collect_written(*e.lhs, names);
  if (e.rhs) collect_written(*e.rhs, names);
  for (const auto& a : e.args) collect_written(*a, names);
  for (const auto& kw : e.kwargs) collect_written(*kw.value, names);
}

void collect_written(const std::vector<dsl::StmtPtr>& body, std::set<std::string>& names) {
  for (const auto& s : body) {
    if (s->value) collect_written(*s->value, names);
    for (const auto& a : s->range_args) collect_written(*a, names);
    collect_written(s->body, names);
    collect_written(s->else_body, names);
  }
}

} // namespace

std::vector<bool> params_written(const dsl::Kernel& k) {
  std::set<std::string> names;
  collect_written(k.body, names);
  std::vector<bool> out(k.params.size(), false);
  for (size_t i = 0; i < k.params.size(); ++i)
    out[i] = k.params[i].type.has_dims && names.count(k.params[i].name) > 0;
  return out;
}

std::vector<bool> scalars_read_by_plan(const dsl::Kernel& k) {
  std::set<std::string> names;
  for (const auto& r : k.require) collect_names(*r, names);
  for (const auto& g : k.grid) collect_names(*g, names);
  if (k.threads) collect_names(*k.threads, names);
  for (const auto& p : k.params)
    for (const auto& d : p.type.dims) collect_names(*d, names);
  std::vector<bool> out(k.params.size(), false);
  for (size_t i = 0; i < k.params.size(); ++i)
    out[i] = !k.params[i].type.has_dims && names.count(k.params[i].name) > 0;
  return out;
}

std::vector<std::string> infer_generics(const dsl::Kernel& k, const std::vector<ArgSpec>& args,
                                        Bindings& bindings) {
  std::vector<std::string> inferred;
  for (size_t i = 0; i < k.params.size() && i < args.size(); ++i) {
    const dsl::Param& p = k.params[i];
    const ArgSpec& a = args[i];
    if (!a.provided || p.is_scratch) continue;
    for (const auto& g : k.generics) {
      if (bindings.count(g.name)) continue;
      if (g.choice.is_dtype && p.type.dtype == g.name && (a.is_tensor || !p.type.has_dims)) {
        bindings[g.name] = dtype_name(a.dtype);
        inferred.push_back(g.name);
      } else if (!g.choice.is_dtype && a.is_tensor) {
        for (size_t d = 0; d < p.type.dims.size() && d < a.shape.size(); ++d)
          if (p.type.dims[d]->kind == dsl::ExprKind::Name && p.type.dims[d]->name == g.name) {
            bindings[g.name] = std::to_string(a.shape[d]);
            inferred.push_back(g.name);
            break;
          }
      }
    }
  }
  return inferred;
}

LaunchPlan plan_launch(const dsl::Kernel& k, const Bindings& bindings,
                       const std::vector<ArgSpec>& args) {
  LaunchPlan plan;
  if (args.size() != k.params.size())
    throw Error(
        str("kernel '", k.name, "' takes ", k.params.size(), " arguments, got ", args.size()));
  // Compile-time names first: generics (ints) and tunables.
  std::map<std::string, DType> dtype_generics;
  for (const auto& g : k.generics) {
    const std::string& v = bindings.at(g.name);
    if (g.choice.is_dtype)
      dtype_generics[g.name] = *parse_dtype(v);
    else
      plan.env[g.name] = HostValue::of_int(std::stoll(v));
  }
  for (const auto& t : k.tunables)
    plan.env[t.name] = HostValue::of_int(std::stoll(bindings.at(t.name)));
  std::map<std::string, std::string> size_source; // size name -> "tensor dim" that fixed it
  for (size_t i = 0; i < k.params.size(); ++i) {
    const dsl::Param& p = k.params[i];
    const ArgSpec& a = args[i];
    if (p.is_scratch) continue;
    DType want =
        parse_dtype(p.type.dtype) ? *parse_dtype(p.type.dtype) : dtype_generics.at(p.type.dtype);
    if (!a.provided) throw Error(str("kernel '", k.name, "': argument '", p.name, "' is missing"));
    if (p.type.has_dims != a.is_tensor)
      throw Error(
          str("kernel '", k.name, "': '", p.name, "' must be ",
              p.type.has_dims ? "a tensor " + declared_text(p) : str("a scalar ", p.type.dtype)));
    if (!a.is_tensor) {
      plan.env[p.name] = a.scalar;
      continue;
    }
    if (a.dtype != want)
      throw Error(str("kernel '", k.name, "': tensor '", p.name, "' must be ", dtype_name(want),
                      " (", declared_text(p), "), got ", dtype_name(a.dtype), shape_text(a.shape)));
    if (a.shape.size() != p.type.dims.size())
      throw Error(str("kernel '", k.name, "': tensor '", p.name, "' must have rank ",
                      p.type.dims.size(), " (", declared_text(p), "), got shape ",
                      shape_text(a.shape)));
    for (size_t d = 0; d < a.shape.size(); ++d) {
      const dsl::Expr& de = *p.type.dims[d];
      int64_t actual = a.shape[d];
      if (actual > std::numeric_limits<int32_t>::max())
        throw Error(str("kernel '", k.name, "': dimension ", d, " of '", p.name, "' is ", actual,
                        "; sizes must fit in 32 bits"));
      if (dsl::broadcast_dim_target(de)) continue; // 1|X: checked once every size is known
      std::string name = de.kind == dsl::ExprKind::Name ? de.name : "";
      auto known = name.empty() ? std::optional<HostValue>() : std::optional<HostValue>();
      if (de.kind == dsl::ExprKind::IntLit) {
        if (actual != de.int_value)
          throw Error(str("kernel '", k.name, "': tensor '", p.name, "' must have shape ",
                          dsl::type_to_string(p.type), " but dimension ", d, " is ", actual,
                          " (expected ", de.int_value, "); got ", shape_text(a.shape)));
        continue;
      }
      auto it = plan.env.find(name);
      if (it != plan.env.end()) {
        if (it->second.i != actual) {
          std::string from =
              size_source.count(name) ? size_source[name] : "the chosen generic value";
          throw Error(str("kernel '", k.name, "': tensor '", p.name, "' (", declared_text(p),
                          ") has ", name, " = ", actual, " in dimension ", d, " but ", name, " = ",
                          it->second.i, " from ", from, "; got shape ", shape_text(a.shape)));
        }
        continue;
      }
      plan.env[name] = HostValue::of_int(actual);
      size_source[name] = str("'", p.name, "' dimension ", d);
      (void)known;
    }
  }
  // Dimensions declared 1|X: size X, or 1 (broadcast to X).
  plan.broadcast_dims.resize(k.params.size());
  for (size_t i = 0; i < k.params.size(); ++i) {
    const dsl::Param& p = k.params[i];
    if (p.is_scratch || !args[i].is_tensor) continue;
    const std::vector<int64_t>& shape = args[i].shape;
    for (size_t d = 0; d < shape.size(); ++d) {
      const dsl::Expr* to = dsl::broadcast_dim_target(*p.type.dims[d]);
      if (!to) continue;
      std::string name = to->kind == dsl::ExprKind::Name ? to->name : "";
      int64_t size = to->int_value;
      if (!name.empty()) {
        auto it = plan.env.find(name);
        if (it == plan.env.end())
          throw Error(str("kernel '", k.name, "': tensor '", p.name, "' (", declared_text(p),
                          "): '", name, "' in dimension ", d,
                          " has no value (no tensor gives it as a whole dimension)"));
        size = it->second.i;
      }
      std::string size_text = name.empty() ? str(size) : str(name, " = ", size);
      if (!name.empty() && size_source.count(name)) size_text += " from " + size_source[name];
      if (shape[d] != 1 && shape[d] != size)
        throw Error(str("kernel '", k.name, "': tensor '", p.name, "' (", declared_text(p),
                        ") has ", shape[d], " in dimension ", d,
                        ", which must be 1 (broadcast) or ", size_text, "; got shape ",
                        shape_text(shape)));
      if (shape[d] == 1 && size != 1)
        plan.broadcast_dims[i].emplace_back(static_cast<int>(d), size);
    }
  }
  for (const auto& r : k.require) {
    std::string missing;
    auto v = host_eval(*r, plan.env, &missing);
    if (!v)
      throw Error(str("kernel '", k.name, "': require '", dsl::expr_to_string(*r), "' uses '",
                      missing, "'"));
    if (!v->b) {
      std::vector<std::string> vals;
      for (const auto& [n, x] : plan.env)
        vals.push_back(
            n + "=" +
            (x.kind == HostValue::Kind::Float ? format_double(x.f) : std::to_string(x.i)));
      throw Error(str(r->loc.path(), ":", r->loc.line, ": kernel '", k.name, "' requires ",
                      dsl::expr_to_string(*r), ", which does not hold (", join(vals, ", "), ")"));
    }
  }
  for (size_t g = 0; g < k.grid.size(); ++g) {
    int64_t v = host_eval_int(*k.grid[g], plan.env, str("grid extent ", g));
    if (v < 0) throw Error(str("kernel '", k.name, "': grid extent ", g, " is negative (", v, ")"));
    if ((g == 0 && v > std::numeric_limits<int32_t>::max()) || (g > 0 && v > 65535))
      throw Error(
          str("kernel '", k.name, "': grid extent ", g, " = ", v, " is over the CUDA limit"));
    plan.grid[g] = v;
  }
  // Clusters: each grid extent a multiple of the cluster's (else the driver refuses the launch
  // with a bare "invalid cluster size").
  for (size_t c = 0; c < k.cluster.size(); ++c) {
    const int64_t extent = host_eval_int(*k.cluster[c], plan.env, "cluster");
    if (extent >= 1 && plan.grid[c] % extent != 0)
      throw Error(str("kernel '", k.name, "': grid extent ", c, " = ", plan.grid[c],
                      " is not a multiple of the cluster's ", extent,
                      " (the 'cluster' clause): round the grid up to it"));
  }
  plan.scratch_shapes.resize(k.params.size());
  for (size_t i = 0; i < k.params.size(); ++i) {
    const dsl::Param& p = k.params[i];
    if (!p.is_scratch) continue;
    for (const auto& d : p.type.dims) {
      int64_t v = host_eval_int(*d, plan.env, str("shape of scratch tensor '", p.name, "'"));
      // 0 is allowed: an empty problem (no sequences) has empty scratch and an empty grid.
      if (v < 0)
        throw Error(
            str("kernel '", k.name, "': scratch tensor '", p.name, "' would have dimension ", v));
      plan.scratch_shapes[i].push_back(v);
    }
  }
  return plan;
}

} // namespace tilejit
