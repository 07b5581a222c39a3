// Printing the column streams that plan_column_streams chose (cuda_column_streams.h): the
// window buffers and their turn every TB steps, and the staged reads and writes.
#include "compiler/cuda/cuda_emitter.h"

#include "compiler/ir_printer.h"
#include "support/text.h"

#include <algorithm>

namespace tilejit::cuda {

namespace {

using Kind = ColumnStream::Kind;

std::string window_column(const StagedLoop& sl, const ColumnStream& cs, const std::string& it) {
  const std::string pos = str("(", it, " & ", sl.tb - 1, ")");
  return cs.dir > 0 ? pos : str("(", sl.tb - 1, " - ", pos, ")");
}

const char* kind_word(Kind k) {
  return k == Kind::Load ? "read" : k == Kind::Store ? "written" : "added";
}

} // namespace

const Emitter::StreamNames* Emitter::stream_of(const void* access_owner) const {
  auto it = active_streams_.find(access_owner);
  return it == active_streams_.end() ? nullptr : &it->second;
}

std::string Emitter::open_staged_loop(const StagedLoop& sl) {
  std::vector<std::string> what;
  for (const ColumnStream& cs : sl.streams)
    what.push_back(str(k_.params[cs.access->param].name, " (", kind_word(cs.kind), ")"));
  line(str("// Column streams: ", join(what, ", "), " move ", sl.tb,
           " steps at a time through shared memory, as coalesced row segments, instead of one"));
  line("// strided element per thread per step (compiler/cuda/cuda_column_streams.h).");
  const std::string it = fresh("tj_it");
  const std::string wp = fresh("tj_wp");
  line(str("int ", it, " = 0;"));
  line(str("int ", wp, " = 0;"));
  for (const ColumnStream& cs : sl.streams) {
    StreamNames sn;
    sn.loop = &sl;
    sn.cs = &cs;
    sn.it = it;
    sn.wp = wp;
    sn.buf = fresh("tj_cs");
    const std::string T = storage_type(k_.params[cs.access->param].dtype);
    line(
        str(T, "* const ", sn.buf, " = reinterpret_cast<", T, "*>(tj_cs_smem + ", cs.offset, ");"));
    const ir::Expr& row = *cs.access->indices[0].index;
    prepare(row);
    sn.row = sn.buf + "_row";
    line(str("const long long ", sn.row, " = ", scalar(row), ";"));
    sn.col = sn.buf + "_col";
    line(str("long long ", sn.col, " = 0;"));
    if (cs.kind != Kind::Load) {
      sn.bits = sn.buf + "_bits";
      sn.pcol = sn.buf + "_pcol";
      sn.pbits = sn.buf + "_pbits";
      line(str("unsigned ", sn.bits, " = 0u, ", sn.pbits, " = 0u;"));
      line(str("long long ", sn.pcol, " = 0;"));
    }
    const void* key = cs.kind == Kind::Store ? static_cast<const void*>(cs.stmt)
                                             : static_cast<const void*>(cs.expr);
    active_streams_[key] = sn;
  }
  return it;
}

namespace {

std::string stream_args(const Emitter& em, const ColumnStream& cs, int tb, int threads) {
  return str(storage_type(em.k_.params[cs.access->param].dtype), ", ", tb, ", ", cs.rows, ", ",
             threads);
}

} // namespace

std::vector<const Emitter::StreamNames*> Emitter::streams_of(const StagedLoop& sl) const {
  std::vector<const StreamNames*> names;
  for (const auto& [key, sn] : active_streams_)
    if (sn.loop == &sl) names.push_back(&sn);
  // In the plan's order (the streams live in sl.streams), not the map's pointer order: the same
  // kernel must print the same text every time.
  std::sort(names.begin(), names.end(),
            [](const StreamNames* a, const StreamNames* b) { return a->cs < b->cs; });
  return names;
}

void Emitter::emit_window_turn(const StagedLoop& sl) {
  const int tb = sl.tb;
  const std::vector<const StreamNames*> names = streams_of(sl);
  const std::string& it = names.front()->it;
  const std::string& wp = names.front()->wp;
  const std::string j = fresh("tj_j");
  materialized_.clear();
  scalar_temps_.clear();
  line(str("const int ", j, " = ", it, " & ", tb - 1, "; // this step's place in its window"));
  open(str("if (", j, " == 0)"));
  line("tj::cp_async_wait<0>(); // the chunks of this window, copied during the last one");
  sync_threads("...are visible; the last window's writes are all in its buffer");
  bool loads = false;
  for (const StreamNames* sn : names) {
    const ColumnStream& cs = *sn->cs;
    if (cs.kind != Kind::Load)
      line(str(sn->pcol, " = ", sn->col, ", ", sn->pbits, " = ", sn->bits, ", ", sn->bits,
               " = 0u;"));
    // This step's column starts (dir > 0) or ends (dir < 0) the new window.
    const ir::Expr& col = *cs.access->indices[1].index;
    prepare(col);
    line(str(sn->col, " = static_cast<long long>(", scalar(col), ")",
             cs.dir > 0 ? "" : str(" - ", tb - 1), ";"));
    loads |= cs.kind == Kind::Load;
  }
  line(str(wp, " = (", it, " / ", tb, ") & 1;"));
  if (loads) {
    // The loop's first window: nothing copied it ahead.
    open(str("if (", it, " == 0)"));
    for (const StreamNames* sn : names)
      if (sn->cs->kind == Kind::Load)
        line(str("tj::cs_fill<", stream_args(*this, *sn->cs, tb, k_.threads), ">(", sn->buf, " + ",
                 wp, " * ", sn->cs->rows * tb, ", ", param_name(sn->cs->access->param), ", ",
                 sn->row, ", ", sn->col, ");"));
    line("tj::cp_async_commit();");
    line("tj::cp_async_wait<0>();");
    sync_threads();
    close();
  }
  close();
  for (auto& [key, sn] : active_streams_)
    if (sn.loop == &sl) sn.j = j;
}

void Emitter::emit_window_chunks(const StagedLoop& sl) {
  const int tb = sl.tb;
  const std::vector<const StreamNames*> names = streams_of(sl);
  const std::string& wp = names.front()->wp;
  const std::string& j = names.front()->j;
  bool loads = false;
  // One chunk of the next window in, one chunk of the last window's writes out: independent of
  // the step's own work, so ptxas can fill the recurrence's stalls with them.
  line("// this step's share of the column streams' copies");
  for (const StreamNames* sn : names) {
    loads |= sn->cs->kind == Kind::Load;
    const ColumnStream& cs = *sn->cs;
    const std::string other = str(sn->buf, " + (", wp, " ^ 1) * ", cs.rows * tb);
    const std::string X = param_name(cs.access->param);
    if (cs.kind == Kind::Load)
      line(str("tj::cs_fill_chunk<", stream_args(*this, cs, tb, k_.threads), ">(", other, ", ", X,
               ", ", sn->row, ", ", sn->col, " + ", cs.dir * tb, ", ", j, ");"));
    else
      line(str("tj::cs_flush_chunk<", cs.kind == Kind::Atomic ? "true" : "false", ", ",
               stream_args(*this, cs, tb, k_.threads), ">(", other, ", ", X, ", ", sn->row, ", ",
               sn->pcol, ", ", sn->pbits, ", ", j, ");"));
  }
  if (loads) line("tj::cp_async_commit();");
}

void Emitter::close_staged_loop(const StagedLoop& sl) {
  const int tb = sl.tb;
  line("tj::cp_async_wait<0>(); // the chunks copied ahead past the loop's end");
  sync_threads("the last window's writes are all in its buffer");
  std::string it, wp;
  for (auto i = active_streams_.begin(); i != active_streams_.end();) {
    const StreamNames& sn = i->second;
    if (sn.loop != &sl) {
      ++i;
      continue;
    }
    it = sn.it, wp = sn.wp;
    const ColumnStream& cs = *sn.cs;
    if (cs.kind != Kind::Load) {
      const std::string args = str(cs.kind == Kind::Atomic ? "true" : "false", ", ",
                                   stream_args(*this, cs, tb, k_.threads));
      const std::string X = param_name(cs.access->param);
      // The steps of the last window wrote out the previous window's first chunks.
      line(str("tj::cs_flush_from<", args, ">(", sn.buf, " + (", wp, " ^ 1) * ", cs.rows * tb, ", ",
               X, ", ", sn.row, ", ", sn.pcol, ", ", sn.pbits, ", ((", it, " - 1) & ", tb - 1,
               ") + 1);"));
      line(str("tj::cs_flush_from<", args, ">(", sn.buf, " + ", wp, " * ", cs.rows * tb, ", ", X,
               ", ", sn.row, ", ", sn.col, ", ", sn.bits, ", 0);"));
    }
    i = active_streams_.erase(i);
  }
  sync_threads("the buffers are free for the next staged loop");
}

void Emitter::emit_stream_load(const ir::Expr& e, const StreamNames& sn, const std::string& dst) {
  const ColumnStream& cs = *sn.cs;
  const ir::Param& p = k_.params[cs.access->param];
  const std::string T = storage_type(p.dtype);
  const ir::Layout* l = e.layout;
  const std::string L = layout_name(l);
  const std::string X = param_name(cs.access->param);
  std::string other =
      e.c ? str("tj::cvt<", T, ">(", scalar(*e.c), ")") : str("tj::cvt<", T, ">(0)");
  const std::string c = fresh("tj_c"), kk = fresh("tj_k"), b = fresh("tj_b");
  line(str("// staged: this step's column of ", p.name, " from the window buffer"));
  line(str("const long long ", c, " = ", scalar(*cs.access->indices[1].index), ";"));
  line(str("const int ", kk, " = ", window_column(*sn.loop, cs, sn.it), ";"));
  line(str("const ", T, "* const ", b, " = ", sn.buf, " + ", sn.wp, " * ", cs.rows * sn.loop->tb,
           ";"));
  open(str("TJ_UNROLL for (int tj_e = 0; tj_e < ", L, "::N; ++tj_e)"));
  line(str("const int tj_r = ", coord(e, l, "tj_e", 0), ";"));
  std::string ok = str(L, "::valid(tj_e) && tj::cs_inside(", X, ", ", sn.row, " + tj_r, ", c, ")");
  if (e.b) ok += str(" && (", scalar(*e.b), ")");
  line(str(dst, "[tj_e] = (", ok, ") ? ", b, "[tj::cs_index<", sn.loop->tb, ">(tj_r, ", kk,
           ")] : ", other, ";"));
  close();
}

void Emitter::emit_stream_write(const ir::Expr& value, const ir::Expr* mask, const ir::Layout* l,
                                const StreamNames& sn) {
  const ColumnStream& cs = *sn.cs;
  const ir::Param& p = k_.params[cs.access->param];
  const std::string T = storage_type(p.dtype);
  const std::string L = layout_name(l);
  const std::string kk = fresh("tj_k");
  line(str("// staged: this step's column of ", p.name, " into the window buffer (",
           cs.kind == Kind::Atomic ? "added" : "written", " a window at a time)"));
  line(str("const int ", kk, " = ", window_column(*sn.loop, cs, sn.it), ";"));
  open(str("if (", mask ? scalar(*mask) : std::string("true"), ")"));
  open(str("TJ_UNROLL for (int tj_e = 0; tj_e < ", L, "::N; ++tj_e)"));
  line(str("const int tj_r = ", coord(value, l, "tj_e", 0), ";"));
  line(str("if (", L, "::valid(tj_e) && tj::Owner<", L, ">::is(tj_e)) ", sn.buf, "[", sn.wp, " * ",
           cs.rows * sn.loop->tb, " + tj::cs_index<", sn.loop->tb, ">(tj_r, ", kk, ")] = tj::cvt<",
           T, ">(", elem(value, value.type.is_scalar() ? nullptr : l, "tj_e"), ");"));
  close();
  line(str(sn.bits, " |= 1u << ", kk, ";"));
  close();
}

} // namespace tilejit::cuda
