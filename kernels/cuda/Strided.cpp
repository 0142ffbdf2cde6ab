//===- Strided.cpp - Strided iteration spaces (host side) -----------------===//

#include "kernels/cuda/Strided.h"

#include <algorithm>

namespace rp::kernels::cuda {

base::StatusOr<Shape> broadcastShapes(const char *op, const std::vector<Shape> &shapes) {
  size_t rank = 0;
  for (const Shape &s : shapes)
    rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape &s : shapes)
    for (size_t d = 0; d < s.size(); ++d) {
      int64_t &o = out[rank - s.size() + d];
      if (s[d] == o || s[d] == 1)
        continue;
      if (o != 1) {
        std::string list;
        for (const Shape &t : shapes)
          list += (list.empty() ? "" : " and ") + formatShape(t);
        return base::invalidArgument(std::string(op) + ": shapes " + list + " do not broadcast");
      }
      o = s[d];
    }
  return out;
}

int64_t numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

template <int N>
base::StatusOr<StridedIter<N>> makeIter(const char *op, const Shape &shape,
                                           const std::array<Shape, N> &strides,
                                           const std::array<int64_t, N> &base) {
  StridedIter<N> it;
  it.numel = numElements(shape);
  for (int t = 0; t < N; ++t)
    it.base[t] = base[static_cast<size_t>(t)];
  // Dimensions kept (size > 1), outermost first, then merged right to left: dimension d
  // folds into d + 1 when, for every tensor, stride[d] == stride[d + 1] * size[d + 1].
  std::vector<int64_t> sizes;
  std::vector<std::array<int64_t, N>> st;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1)
      continue;
    std::array<int64_t, N> s{};
    for (int t = 0; t < N; ++t)
      s[static_cast<size_t>(t)] = strides[static_cast<size_t>(t)][d];
    if (!sizes.empty()) {
      bool merge = true;
      for (int t = 0; t < N; ++t)
        merge = merge && st.back()[static_cast<size_t>(t)] == s[static_cast<size_t>(t)] * shape[d];
      if (merge) {
        sizes.back() *= shape[d];
        st.back() = s;
        continue;
      }
    }
    sizes.push_back(shape[d]);
    st.push_back(s);
  }
  if (it.numel == 0) {
    sizes.clear();
    st.clear();
  }
  if (sizes.size() > static_cast<size_t>(kMaxRank))
    return base::invalidArgument(std::string(op) + ": rank " + std::to_string(sizes.size()) +
                                    " (after merging contiguous dimensions) exceeds the GPU "
                                    "kernels' limit of " +
                                    std::to_string(kMaxRank));
  it.rank = static_cast<int>(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) {
    it.sizes[d] = sizes[d];
    for (int t = 0; t < N; ++t)
      it.strides[t][d] = st[d][static_cast<size_t>(t)];
  }
  return it;
}

template base::StatusOr<StridedIter<1>> makeIter<1>(const char *, const Shape &,
                                                       const std::array<Shape, 1> &,
                                                       const std::array<int64_t, 1> &);
template base::StatusOr<StridedIter<2>> makeIter<2>(const char *, const Shape &,
                                                       const std::array<Shape, 2> &,
                                                       const std::array<int64_t, 2> &);
template base::StatusOr<StridedIter<3>> makeIter<3>(const char *, const Shape &,
                                                       const std::array<Shape, 3> &,
                                                       const std::array<int64_t, 3> &);
template base::StatusOr<StridedIter<4>> makeIter<4>(const char *, const Shape &,
                                                       const std::array<Shape, 4> &,
                                                       const std::array<int64_t, 4> &);

} // namespace rp::kernels::cuda
