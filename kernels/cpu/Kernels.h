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

#endif // RP_KERNELS_CPU_KERNELS_H
