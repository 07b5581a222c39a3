#!/usr/bin/env python3
"""Runs the `// RUN:` lines of one FileCheck test file (python3 stdlib only).

Usage: run_filecheck.py --tilejit PATH [--filecheck PATH] TEST.tile

A test file holds `// RUN: <command>` lines (a trailing `\\` continues a RUN line on the next
one) and `// CHECK...:` lines for LLVM's FileCheck. Substitutions in RUN lines:
  %tilejit    the tilejit binary          %FileCheck  FileCheck (LLVM 14 by default)
  %s          the file being run          %S          the directory of the original file
  %t          a scratch path for this run (a file name; its directory exists)
Each RUN line runs through `bash -o pipefail -c`, in the source tree's root directory, and
must exit 0.

Cases: a line `// -----` splits the file into cases. Each case is written to its own file
(named like the original, padded with blank lines so that line numbers, and so `#line`
directives and `// line N` comments in the output, match the original file) and runs as %s
on its own: its own RUN lines, or, if it has none, those of the first case. FileCheck then
sees only the case's CHECK lines.
"""

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile

RUN_RE = re.compile(r"//\s*RUN:\s?(.*)$")
SPLIT_RE = re.compile(r"^\s*//\s*-----\s*$")


def read_run_lines(lines):
    """The commands of the RUN lines in `lines`, continuations joined."""
    commands, pending = [], None
    for line in lines:
        m = RUN_RE.search(line)
        if not m:
            if pending is not None:
                raise SystemExit("RUN line ends with '\\' but the next line is not a RUN line")
            continue
        text = m.group(1).rstrip()
        if pending is not None:
            text = pending + " " + text.lstrip()
            pending = None
        if text.endswith("\\"):
            pending = text[:-1].rstrip()
            continue
        commands.append(text)
    if pending is not None:
        commands.append(pending)
    return commands


def split_cases(lines):
    """[(first_line_index, case_lines)] for each `// -----`-separated case."""
    cases, start = [], 0
    for i, line in enumerate(lines):
        if SPLIT_RE.match(line):
            cases.append((start, lines[start:i]))
            start = i + 1
    cases.append((start, lines[start:]))
    return cases


def substitute(command, subs):
    # Longest names first, so %S is not read as %s followed by S and %t not inside %tilejit.
    for key in sorted(subs, key=len, reverse=True):
        command = command.replace(key, subs[key])
    return command


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tilejit", required=True)
    parser.add_argument("--filecheck", default="/usr/lib/llvm-14/bin/FileCheck")
    parser.add_argument("--root", default=None, help="directory to run commands in")
    parser.add_argument("test")
    args = parser.parse_args()

    test = os.path.abspath(args.test)
    with open(test, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if not os.access(args.filecheck, os.X_OK):
        print(f"FileCheck not found at {args.filecheck}", file=sys.stderr)
        return 2
    cases = split_cases(lines)
    default_runs = read_run_lines(cases[0][1])
    if not default_runs:
        print(f"{test}: no RUN lines", file=sys.stderr)
        return 2
    root = args.root or os.getcwd()
    failures = 0
    with tempfile.TemporaryDirectory(prefix="tilejit-filecheck-") as tmp:
        for index, (start, case_lines) in enumerate(cases):
            own_runs = read_run_lines(case_lines)
            has_code = any(l.strip() and not l.strip().startswith("//") for l in case_lines)
            if not own_runs and not has_code:
                continue  # nothing to run (e.g. after a trailing separator)
            runs = own_runs or default_runs
            if len(cases) == 1:
                case_file = test
            else:
                case_dir = os.path.join(tmp, f"case{index}")
                os.makedirs(case_dir)
                case_file = os.path.join(case_dir, os.path.basename(test))
                with open(case_file, "w", encoding="utf-8") as f:
                    f.write("\n" * start + "\n".join(case_lines) + "\n")
            subs = {
                "%tilejit": shlex.quote(args.tilejit),
                "%FileCheck": shlex.quote(args.filecheck),
                "%s": shlex.quote(case_file),
                "%S": shlex.quote(os.path.dirname(test)),
                "%t": shlex.quote(os.path.join(tmp, f"out{index}")),
            }
            for run in runs:
                command = substitute(run, subs)
                where = f"{os.path.basename(test)}:{start + 1} (case {index})"
                result = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=root,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True)
                if result.returncode != 0:
                    failures += 1
                    print(f"FAIL {where}\n  $ {command}\n{result.stdout}", file=sys.stderr, flush=True)
                else:
                    print(f"ok   {where}: {run}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
