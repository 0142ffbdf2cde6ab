//===- rp-run.cpp - train with a compiled RoundPipe plan ------------------===//
//
// Loads a plan (rpc-compile -o MODEL.rpplan) and trains with it on the CPU or CUDA backend,
// checks it (--check), or simulates it or a layer profile (--backend sim). The flags, modes
// and exit codes: runtime/train/RunCli.h. Runtime world: no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/RunCli.h"

int main(int argc, char **argv) { return rp::runtime::runRpRun(argc, argv); }
