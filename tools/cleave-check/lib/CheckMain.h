//===- CheckMain.h - cleave-check's command line ----------------*- C++ -*-===//
//
// cleave-check MODEL --micro-batch=B --accumulate=N [training options]
// compiles MODEL twice (B with N, and N*B with 1) through the compiler
// driver, with cleave-compile's own training options, and compares the two
// runs (Checker.h). docs/user/cleave-check.md is the reference.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TOOLS_CHECKMAIN_H
#define CLEAVE_TOOLS_CHECKMAIN_H

namespace cleave::checker {

/// cleave-check's main(). Returns 0 when the runs agree, 1 on a mismatch, 3
/// when they differ and the model has split-observable ops, and 2 when the
/// check could not run (a bad command line, a model that does not load or
/// compile, a runtime error).
int checkMain(int argc, char **argv);

} // namespace cleave::checker

#endif // CLEAVE_TOOLS_CHECKMAIN_H
