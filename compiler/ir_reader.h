// The IR reader: parses the text compiler/ir_printer.h prints back into a Kernel, so that a
// pass-level test can start from the IR before the pass (`tilejit inspect --from-ir FILE.ir`)
// instead of from .tile source. print -> read -> print gives the same text.
//
// Grammar (one statement per line; indentation is not significant; a line that holds only a
// `//` comment is skipped, except `// after PASS` before `kernel`, which says which pass made
// the IR):
//   file      ::= ['// after' pass] 'kernel' name (name '=' value)* header param* stmt*
//   header    ::= 'threads' N ', shared memory' N 'bytes' (',' item)*
//   param     ::= 'param' ['scratch'] ['zeroed'] name ':' dtype ['[' dim (',' dim)* ']']
//   ['aligned16'] stmt      ::= var_decl [slot] [role] '=' expr [loc]     (first value of a
//   variable)
//               | name [slot] [role] '=' expr [loc]  | 'store' access '<-' expr ['mask=' expr]
//               [loc] | 'for' name 'in [' expr ',' expr ') step' expr ['pipelined(stages=' N ')']
//                 ['unroll' N] '{' [loc] stmt* '}'
//               | 'if' expr '{' [loc] stmt* ('} else {' stmt*)? '}'  | 'return' [loc]
//               | 'barrier' ['wait_async'] ['//' note] | 'async_commit' | 'async_wait' N ['//'
//               note] | expr [loc]
//   var_decl  ::= ['frag' | 'shared'] type name ['declared'] ['#' layout] ['@smem[' N ']']
//                 ['row_stride=' N] ['x' N 'stages'] ['read_slot=' name]
//   expr      ::= as print_expr prints it; '(' expr ':' type ['#' layout | '#none'] ['typed'] ')'
//                 gives a type and layout other than the implied ones
//   loc       ::= '// line' N
#pragma once

#include "compiler/ir.h"

#include <memory>
#include <string>

namespace tilejit::ir {

/// Parses printed IR. `path` names the text in diagnostics: malformed input throws
/// dsl::CompileError with `path:line:col: error: ...`, the line and a caret.
std::unique_ptr<Kernel> read_kernel(const std::string& path, const std::string& text);

} // namespace tilejit::ir
