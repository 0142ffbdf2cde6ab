//===- Kernels.h - All CPU reference kernels ---------------------*- C++ -*-===//
//
// One include for the users of every kernel family (the reference
// interpreter, the CPU backend). Each header documents its ops: shapes,
// dtypes, numerics, errors and sources.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CPU_KERNELS_H
#define RP_KERNELS_CPU_KERNELS_H

#include "kernels/cpu/AttentionGrad.h"
#include "kernels/cpu/Cast.h"
#include "kernels/cpu/CrossEntropy.h"
#include "kernels/cpu/CumSum.h"
#include "kernels/cpu/Elementwise.h"
#include "kernels/cpu/Fused.h"
#include "kernels/cpu/Gather.h"
#include "kernels/cpu/Generators.h"
#include "kernels/cpu/LinearCrossEntropy.h"
#include "kernels/cpu/MatMul.h"
#include "kernels/cpu/Norm.h"
#include "kernels/cpu/Reduce.h"
#include "kernels/cpu/Scatter.h"
#include "kernels/cpu/Shape.h"
#include "kernels/cpu/Softmax.h"
#include "kernels/cpu/TopK.h"
#include "kernels/cpu/ExpertRouting.h"
#include "kernels/cpu/GroupedMatMul.h"
#include "kernels/cpu/Quantize.h"

namespace rp::kernels::cpu {

/// The OpenMP threads the kernels called from this thread split their work among: the
/// OpenMP default (OMP_NUM_THREADS, else one per core) until setKernelThreads changes it.
/// Results never depend on it (docs/DECISIONS.md, "Numerics").
int kernelThreads();

/// Sets kernelThreads() for the calling thread only (OpenMP's nthreads-var is per thread):
/// the CPU backend gives each of its N workers cores / N threads, so that N workers that each
/// open a parallel region do not oversubscribe the cores. threads < 1 counts as 1.
void setKernelThreads(int threads);

} // namespace rp::kernels::cpu

#endif // RP_KERNELS_CPU_KERNELS_H
