//===- HostTensor.h - An owning dense tensor in host memory -----*- C++ -*-===//
//
// The tensor the CPU kernels, the reference interpreter (rp-ref) and the CPU
// backend exchange: one dtype, a static shape, and a contiguous row-major
// buffer that it owns, aligned to 64 bytes (a cache line; also enough for
// AVX-512 loads). I1 elements are stored as one byte holding 0 or 1.
//
//   HostTensor x(DType::F32, {2, 8, 64}); // zero-initialised
//   float *p = x.data<float>();
//   RP_RETURN_IF_ERROR(x.reshape({16, 64}));
//
//===----------------------------------------------------------------------===//
#ifndef RP_BASE_HOSTTENSOR_H
#define RP_BASE_HOSTTENSOR_H

#include "base/DType.h"
#include "base/Status.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace rp {
inline namespace base {

/// "[2, 8, 64]"; "[]" for a 0-D shape.
std::string formatShape(const std::vector<int64_t> &shape);

/// Product of the dimensions (1 for a 0-D shape), or an InvalidArgument error
/// naming the shape when a dimension is negative or the product overflows int64.
StatusOr<int64_t> checkedNumElements(const std::vector<int64_t> &shape);

/// Row-major element strides of a contiguous tensor of `shape`.
std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &shape);

/// Element strides that read a contiguous tensor of shape `from` as if it had been broadcast
/// to `to` (numpy rules, trailing dimensions aligned; `from` must broadcast to `to`, which the
/// caller checks): one entry per dimension of `to`, 0 where `from` has no such dimension or a
/// stretched 1.
std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &from,
                                      const std::vector<int64_t> &to);

/// An owning, contiguous, row-major host tensor. Movable, not copyable (use
/// clone()). A moved-from or default-constructed tensor is an empty f32 tensor
/// of shape [0] that owns no memory.
class HostTensor {
public:
  /// Alignment of every buffer, in bytes.
  static constexpr size_t kAlignment = 64;

  /// An empty f32 tensor of shape [0].
  HostTensor();
  /// A zero-initialised tensor. The shape must be valid (every dimension >= 0,
  /// element count and byte size representable): an invalid shape is a
  /// programmer error and aborts with a message; use create() for untrusted
  /// shapes. Throws std::bad_alloc when memory runs out (as std::vector).
  HostTensor(DType dtype, std::vector<int64_t> shape);

  /// Like the constructor, but reports a bad shape as InvalidArgument and an
  /// allocation failure as ResourceExhausted.
  static StatusOr<HostTensor> create(DType dtype, std::vector<int64_t> shape);

  /// A non-owning tensor over `data` (numElements * dtypeSize bytes that the caller keeps alive
  /// and that need no particular alignment beyond the element size): the CPU backend runs the
  /// kernels on views into its device arena. Writing through the view writes `data`; clone()
  /// gives an owning copy; destroying a view frees nothing. The shape must be valid (a
  /// programmer error aborts, as in the constructor).
  static HostTensor view(DType dtype, std::vector<int64_t> shape, void *data);

  /// True when the tensor owns its buffer (false for view()).
  bool ownsData() const { return data_.get_deleter().owned; }

  HostTensor(HostTensor &&other) noexcept;
  HostTensor &operator=(HostTensor &&other) noexcept;
  HostTensor(const HostTensor &) = delete;
  HostTensor &operator=(const HostTensor &) = delete;
  ~HostTensor() = default;

  DType dtype() const { return dtype_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  /// Dimension `i` (0 <= i < rank()).
  int64_t dim(int64_t i) const { return shape_[static_cast<size_t>(i)]; }
  int64_t numElements() const { return numElements_; }
  /// numElements() * dtypeSize(dtype()).
  size_t byteSize() const { return static_cast<size_t>(numElements_) * dtypeSize(dtype_); }

  /// The buffer (64-byte aligned); null when byteSize() is 0.
  void *raw() { return data_.get(); }
  const void *raw() const { return data_.get(); }

  /// The buffer as elements of T. sizeof(T) must equal dtypeSize(dtype())
  /// (I1: uint8_t, F16/BF16: uint16_t); a mismatch is a programmer error and
  /// aborts in every build type.
  template <typename T>
  T *data() {
    checkElementSize(sizeof(T));
    return static_cast<T *>(raw());
  }
  template <typename T>
  const T *data() const {
    checkElementSize(sizeof(T));
    return static_cast<const T *>(raw());
  }

  /// A deep copy (same dtype, shape and bytes).
  HostTensor clone() const;

  /// Gives the tensor a new shape with the same element count, keeping the
  /// bytes (row-major order is unchanged). Errors: InvalidArgument naming both
  /// shapes when the element counts differ or the new shape is invalid; the
  /// tensor is unchanged then.
  Status reshape(std::vector<int64_t> newShape);

  /// "f32[2, 8, 64]".
  std::string typeString() const;

private:
  struct FreeDeleter {
    FreeDeleter() noexcept : owned(true) {}
    explicit FreeDeleter(bool owns) noexcept : owned(owns) {}
    bool owned;
    void operator()(void *p) const {
      if (owned)
        std::free(p);
    }
  };

  HostTensor(DType dtype, std::vector<int64_t> shape, int64_t numElements,
             std::unique_ptr<unsigned char, FreeDeleter> data);
  void checkElementSize(size_t size) const;

  DType dtype_ = DType::F32;
  std::vector<int64_t> shape_{0};
  int64_t numElements_ = 0;
  std::unique_ptr<unsigned char, FreeDeleter> data_;
};

/// `tensor` with `newShape` (same element count), keeping its buffer.
/// Errors: as HostTensor::reshape.
StatusOr<HostTensor> reshaped(HostTensor tensor, std::vector<int64_t> newShape);

} // namespace base
} // namespace rp

#endif // RP_BASE_HOSTTENSOR_H
