//===- HostTensor.cpp - An owning dense tensor in host memory -------------===//

#include "base/HostTensor.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <new>
#include <utility>

namespace rp {
inline namespace base {

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &from,
                                      const std::vector<int64_t> &to) {
  const std::vector<int64_t> own = contiguousStrides(from);
  std::vector<int64_t> strides(to.size(), 0);
  const size_t offset = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    strides[offset + i] = from[i] == 1 ? 0 : own[i];
  return strides;
}

StatusOr<int64_t> checkedNumElements(const std::vector<int64_t> &shape) {
  for (int64_t d : shape)
    if (d < 0)
      return invalidArgument("invalid tensor shape " + formatShape(shape) +
                             ": dimensions must be >= 0");
  if (std::find(shape.begin(), shape.end(), 0) != shape.end())
    return int64_t(0);
  int64_t n = 1;
  for (int64_t d : shape) {
    if (n > std::numeric_limits<int64_t>::max() / d)
      return invalidArgument("invalid tensor shape " + formatShape(shape) +
                             ": the element count overflows int64");
    n *= d;
  }
  return n;
}

namespace {

/// Bytes to allocate for `n` elements of `dtype`: rounded up to the alignment
/// (std::aligned_alloc requires a multiple of it). Errors on overflow.
StatusOr<size_t> allocationSize(DType dtype, int64_t n, const std::vector<int64_t> &shape) {
  const size_t esize = dtypeSize(dtype);
  if (esize == 0)
    return invalidArgument("invalid dtype enumerator " + std::to_string(static_cast<int>(dtype)));
  constexpr size_t kMax = std::numeric_limits<size_t>::max() / 2;
  if (static_cast<uint64_t>(n) > kMax / esize)
    return invalidArgument("invalid tensor shape " + formatShape(shape) + ": " + std::to_string(n) +
                           " elements of " + dtypeName(dtype) + " overflow the address space");
  const size_t bytes = static_cast<size_t>(n) * esize;
  return (bytes + HostTensor::kAlignment - 1) / HostTensor::kAlignment * HostTensor::kAlignment;
}

} // namespace

HostTensor::HostTensor() = default;

HostTensor::HostTensor(DType dtype, std::vector<int64_t> shape, int64_t numElements,
                       std::unique_ptr<unsigned char, FreeDeleter> data)
    : dtype_(dtype), shape_(std::move(shape)), numElements_(numElements), data_(std::move(data)) {}

StatusOr<HostTensor> HostTensor::create(DType dtype, std::vector<int64_t> shape) {
  RP_ASSIGN_OR_RETURN(int64_t n, checkedNumElements(shape));
  RP_ASSIGN_OR_RETURN(size_t bytes, allocationSize(dtype, n, shape));
  std::unique_ptr<unsigned char, FreeDeleter> data;
  if (bytes > 0) {
    data.reset(static_cast<unsigned char *>(std::aligned_alloc(kAlignment, bytes)));
    if (!data)
      return resourceExhausted("cannot allocate " + std::to_string(bytes) +
                               " bytes for a host tensor " + dtypeName(dtype) + formatShape(shape));
    std::memset(data.get(), 0, bytes);
  }
  return HostTensor(dtype, std::move(shape), n, std::move(data));
}

HostTensor::HostTensor(DType dtype, std::vector<int64_t> shape) {
  StatusOr<HostTensor> t = create(dtype, std::move(shape));
  if (!t.ok()) {
    if (t.status().code() == StatusCode::ResourceExhausted)
      throw std::bad_alloc();
    detail::fatalStatus("HostTensor(dtype, shape)", t.status());
  }
  *this = std::move(t).value();
}

HostTensor HostTensor::view(DType dtype, std::vector<int64_t> shape, void *data) {
  StatusOr<int64_t> n = checkedNumElements(shape);
  if (!n.ok())
    detail::fatalStatus("HostTensor::view", n.status());
  std::unique_ptr<unsigned char, FreeDeleter> borrowed(static_cast<unsigned char *>(data),
                                                       FreeDeleter{/*owned=*/false});
  return HostTensor(dtype, std::move(shape), n.value(), std::move(borrowed));
}

HostTensor::HostTensor(HostTensor &&other) noexcept
    : dtype_(other.dtype_), shape_(std::move(other.shape_)), numElements_(other.numElements_),
      data_(std::move(other.data_)) {
  other.dtype_ = DType::F32;
  other.shape_ = {0};
  other.numElements_ = 0;
}

HostTensor &HostTensor::operator=(HostTensor &&other) noexcept {
  if (this != &other) {
    dtype_ = other.dtype_;
    shape_ = std::move(other.shape_);
    numElements_ = other.numElements_;
    data_ = std::move(other.data_);
    other.dtype_ = DType::F32;
    other.shape_ = {0};
    other.numElements_ = 0;
  }
  return *this;
}

void HostTensor::checkElementSize(size_t size) const {
  if (size != dtypeSize(dtype_))
    detail::fatalStatus("HostTensor::data<T>()",
                        invalidArgument("element type of size " + std::to_string(size) +
                                        " bytes requested from a " + typeString() + " tensor (" +
                                        std::to_string(dtypeSize(dtype_)) + "-byte elements)"));
}

HostTensor HostTensor::clone() const {
  HostTensor copy(dtype_, shape_);
  if (byteSize() > 0)
    std::memcpy(copy.raw(), raw(), byteSize());
  return copy;
}

Status HostTensor::reshape(std::vector<int64_t> newShape) {
  RP_ASSIGN_OR_RETURN(int64_t n, checkedNumElements(newShape));
  if (n != numElements_)
    return invalidArgument("reshape: cannot reshape " + typeString() + " (" +
                           std::to_string(numElements_) + " elements) to " + formatShape(newShape) +
                           " (" + std::to_string(n) + " elements)");
  shape_ = std::move(newShape);
  return okStatus();
}

std::string HostTensor::typeString() const { return dtypeName(dtype_) + formatShape(shape_); }

StatusOr<HostTensor> reshaped(HostTensor tensor, std::vector<int64_t> newShape) {
  RP_RETURN_IF_ERROR(tensor.reshape(std::move(newShape)));
  return tensor;
}

} // namespace base
} // namespace rp
