//===- Quantization.cpp - Formats and byte layouts of quantized weights ---===//

#include "kernels/Quantization.h"

namespace rp::kernels {

namespace {
int64_t align16(int64_t bytes) { return (bytes + 15) / 16 * 16; }

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}
} // namespace

const char *quantFormatName(QuantFormat format) {
  switch (format) {
  case QuantFormat::NF4:
    return "nf4";
  case QuantFormat::NF4Fp32Absmax:
    return "nf4-fp32-absmax";
  case QuantFormat::Int8:
    return "int8";
  case QuantFormat::Fp8:
    return "fp8";
  }
  return "<invalid quant format>";
}

std::optional<QuantFormat> parseQuantFormat(std::string_view name) {
  if (name == "nf4_fp32_absmax") // the graph dialect's and the plan's keyword
    return QuantFormat::NF4Fp32Absmax;
  for (QuantFormat f :
       {QuantFormat::NF4, QuantFormat::NF4Fp32Absmax, QuantFormat::Int8, QuantFormat::Fp8})
    if (name == quantFormatName(f))
      return f;
  return std::nullopt;
}

base::StatusOr<QuantLayout> quantLayout(QuantFormat format, const std::vector<int64_t> &shape,
                                        int64_t axis, const std::string &what) {
  const std::string prefix = what + " " + shapeText(shape) + " cannot be held as " +
                             quantFormatName(format) + ": ";
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (rank < 2)
    return base::invalidArgument(prefix + "a quantized weight has rank 2 or more");
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d <= 0)
      return base::invalidArgument(prefix + "it has an empty dimension");
    n *= d;
  }
  QuantLayout l;
  l.format = format;
  l.elements = n;
  if (format == QuantFormat::NF4 || format == QuantFormat::NF4Fp32Absmax) {
    if (shape.back() % kNf4Block != 0)
      return base::invalidArgument(prefix + "its last dimension " + std::to_string(shape.back()) +
                                   " is not a multiple of the nf4 block size " +
                                   std::to_string(kNf4Block));
    l.absmaxCount = n / kNf4Block;
    l.absmax = align16(n / 2);
    if (format == QuantFormat::NF4Fp32Absmax) {
      l.bytes = l.absmax + 4 * l.absmaxCount;
      return l;
    }
    l.absmax2Count = (l.absmaxCount + kNf4AbsmaxBlock - 1) / kNf4AbsmaxBlock;
    l.absmax2 = align16(l.absmax + l.absmaxCount);
    l.offset = l.absmax2 + 4 * l.absmax2Count;
    l.bytes = l.offset + 4;
    return l;
  }
  if (axis != rank - 1 && axis != rank - 2)
    return base::invalidArgument(prefix + "its input axis " + std::to_string(axis) +
                                 " is not one of the last two dimensions");
  l.absmaxCount = n / shape[static_cast<size_t>(axis)];
  l.absmax = align16(n);
  l.bytes = l.absmax + 4 * l.absmaxCount;
  return l;
}

} // namespace rp::kernels
