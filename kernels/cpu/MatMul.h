//===- MatMul.h - Matrix product (graph.matmul) on the CPU ------*- C++ -*-===//
//
// numpy.matmul / ONNX MatMul: for ranks >= 2 the last two dimensions are
// multiplied ([..., M, K] x [..., K, N] -> [..., M, N]) and the leading batch
// dimensions broadcast (numpy rules); a 1-D `a` is read as [1, K] and a 1-D
// `b` as [K, 1], and that unit dimension is removed from the result.
//
// f32: the kernels' own GEMM (kernels/cpu/Sgemm.h; AVX-512 or AVX2 + FMA micro-kernels):
// every output element is one chain of FMAs in increasing k from 0, so its bits depend on its
// row of a and column of b only -- not on tiles, threads or the CPU's vector width. Each GEMM
// (per batch; when `b` has no batch dimensions the batch of `a` folds into M) is cut into one
// band of rows per OpenMP thread (multiples of 24 rows), the results are the same for any
// split. On a CPU without FMA, f32 takes the f64 path below (other last bits).
// f64: OpenBLAS cblas_dgemm (row-major, alpha 1, beta 0), each GEMM cut into fixed output tiles
// of 64 rows x 1024 columns, one single-threaded OpenBLAS call per tile, spread over OpenMP
// threads. OpenBLAS's own threading partitions the product by thread count, and its results
// change in the last bits with it (seen with OpenBLAS 0.3.21 on Zen); a fixed tiling makes
// results independent of both thread counts (the project's determinism rule, checked by
// CpuDeterminismTest). The kernel therefore sets OpenBLAS to one thread, process-wide.
// Accumulation is OpenBLAS's: in the element type, in its blocked order for the CPU kernel it
// selects (results can differ in the last bits across CPUs or OpenBLAS builds). K = 0 gives
// zeros.
// transposeA / transposeB (graph.matmul's flags): `a` holds [..., K, M] and is
// read transposed (likewise `b`, [..., N, K]); the GEMMs take the operand transposed, no copy
// is made; a batch of a flagged `a` does not fold into M. A flagged operand has rank >= 2.
// i64 / i32: plain loops accumulating in int64 (wrapping), stored with a
// two's-complement wrap to i32.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CPU_MATMUL_H
#define RP_KERNELS_CPU_MATMUL_H

#include "base/HostTensor.h"
#include "base/Status.h"

namespace rp::kernels::cpu {

/// out = a @ b. `a` and `b` have the same dtype (f32, f64, i64 or i32) and
/// rank >= 1; out has their dtype and the matmul shape above.
/// Errors: InvalidArgument for another dtype, a contraction mismatch, batch
/// dimensions that do not broadcast, a wrong out dtype or shape, or an f64 (or, without
/// FMA, f32) matrix dimension beyond OpenBLAS's 32-bit int.
base::Status matmul(const base::HostTensor &a, const base::HostTensor &b,
                       base::HostTensor &out);

/// out = op(a) @ op(b), op the swap of the last two dimensions where the flag is set (see the
/// file comment). Errors: as matmul, and InvalidArgument for a flagged operand of rank < 2.
base::Status matmul(const base::HostTensor &a, const base::HostTensor &b,
                       bool transposeA, bool transposeB, base::HostTensor &out);

} // namespace rp::kernels::cpu

#endif // RP_KERNELS_CPU_MATMUL_H
