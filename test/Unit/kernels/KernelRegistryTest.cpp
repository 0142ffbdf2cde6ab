//===- KernelRegistryTest.cpp - The table of stable kernel ids ------------===//

#include "kernels/Registry.h"

#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace rp::kernels {
namespace {

TEST(KernelRegistryTest, IdsAreUniqueAndWellFormed) {
  std::set<std::string_view> ids;
  for (const KernelInfo &k : allKernels()) {
    EXPECT_TRUE(ids.insert(k.id).second) << "duplicate id " << k.id;
    ASSERT_FALSE(k.id.empty());
    for (char c : k.id)
      EXPECT_TRUE(std::islower(static_cast<unsigned char>(c)) || c == '_') << k.id;
    EXPECT_GE(k.minOperands, 0) << k.id;
    EXPECT_TRUE(k.maxOperands == kVariadic || k.maxOperands >= k.minOperands) << k.id;
    EXPECT_TRUE(k.numResults == kVariadic || k.numResults >= 1) << k.id;
    std::set<std::string_view> attrs;
    for (const AttrSpec &a : k.attrs)
      EXPECT_TRUE(attrs.insert(a.name).second) << k.id << ": duplicate attribute " << a.name;
    EXPECT_EQ(findKernel(k.id), &k);
  }
  // Every graph op but param, load_param and constant, plus copy.
  EXPECT_EQ(allKernels().size(), 69u);
}

TEST(KernelRegistryTest, Entries) {
  const KernelInfo *add = findKernel("add");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->minOperands, 2);
  EXPECT_EQ(add->maxOperands, 2);
  EXPECT_EQ(add->numResults, 1);
  EXPECT_TRUE(add->attrs.empty());

  const KernelInfo *ln = findKernel("layer_norm");
  ASSERT_NE(ln, nullptr);
  EXPECT_TRUE(ln->acceptsOperands(2));
  EXPECT_TRUE(ln->acceptsOperands(3));
  EXPECT_FALSE(ln->acceptsOperands(4));
  ASSERT_NE(ln->findAttr("epsilon"), nullptr);
  EXPECT_EQ(ln->findAttr("epsilon")->kind, AttrKind::Float);
  EXPECT_TRUE(ln->findAttr("axis")->required);

  // Attention sinks: an optional operand, and attention_vjp's optional dsinks result.
  const KernelInfo *att = findKernel("attention"), *attVjp = findKernel("attention_vjp");
  ASSERT_NE(att, nullptr);
  ASSERT_NE(attVjp, nullptr);
  EXPECT_TRUE(att->acceptsOperands(3));
  EXPECT_TRUE(att->acceptsOperands(4));
  EXPECT_FALSE(att->acceptsOperands(5));
  EXPECT_TRUE(att->acceptsResults(1));
  EXPECT_FALSE(att->acceptsResults(2));
  EXPECT_TRUE(attVjp->acceptsOperands(6));
  EXPECT_FALSE(attVjp->acceptsOperands(7));
  EXPECT_FALSE(attVjp->acceptsResults(2));
  EXPECT_TRUE(attVjp->acceptsResults(3));
  EXPECT_TRUE(attVjp->acceptsResults(4));
  EXPECT_FALSE(attVjp->acceptsResults(5));
  // A sliding window: an optional int attribute of both.
  for (const KernelInfo *k : {att, attVjp}) {
    ASSERT_NE(k->findAttr("window"), nullptr) << k->id;
    EXPECT_EQ(k->findAttr("window")->kind, AttrKind::Int);
    EXPECT_FALSE(k->findAttr("window")->required);
  }

  const KernelInfo *concat = findKernel("concat");
  ASSERT_NE(concat, nullptr);
  EXPECT_TRUE(concat->acceptsOperands(1));
  EXPECT_TRUE(concat->acceptsOperands(17));
  EXPECT_FALSE(concat->acceptsOperands(0));

  const KernelInfo *split = findKernel("split");
  ASSERT_NE(split, nullptr);
  EXPECT_EQ(split->numResults, kVariadic);
  EXPECT_TRUE(split->acceptsResults(3));
  EXPECT_FALSE(split->acceptsResults(0));
  EXPECT_EQ(split->findAttr("sizes")->kind, AttrKind::Ints);

  const KernelInfo *topK = findKernel("top_k");
  ASSERT_NE(topK, nullptr);
  EXPECT_EQ(topK->dtypes, DTypeRule::FloatToIndex);
  EXPECT_TRUE(topK->findAttr("k")->required);
  EXPECT_TRUE(topK->findAttr("axis")->required);
  EXPECT_FALSE(topK->findAttr("smallest")->required);
  EXPECT_EQ(topK->findAttr("smallest")->kind, AttrKind::Bool);

  const KernelInfo *attention = findKernel("attention");
  ASSERT_NE(attention, nullptr);
  EXPECT_EQ(attention->minOperands, 3);
  EXPECT_TRUE(attention->findAttr("scale")->required);
  EXPECT_EQ(attention->findAttr("causal")->kind, AttrKind::Bool);
  EXPECT_FALSE(attention->findAttr("causal")->required);

  const KernelInfo *vjp = findKernel("attention_vjp"); // q, k, v, out, dout -> dq, dk, dv
  ASSERT_NE(vjp, nullptr);
  EXPECT_TRUE(vjp->acceptsOperands(5));
  EXPECT_FALSE(vjp->acceptsOperands(3));
  EXPECT_EQ(vjp->numResults, 3);
  EXPECT_TRUE(vjp->findAttr("scale")->required);
  EXPECT_FALSE(vjp->findAttr("causal")->required);

  EXPECT_EQ(findKernel("compare")->findAttr("predicate")->kind, AttrKind::String);
  EXPECT_EQ(findKernel("cross_entropy")->findAttr("reduction")->kind, AttrKind::String);
  EXPECT_EQ(findKernel("cross_entropy")->findAttr("ignore_index")->kind, AttrKind::Int);
  EXPECT_EQ(findKernel("gelu")->findAttr("approximate")->kind, AttrKind::String);
  EXPECT_EQ(findKernel("transpose")->findAttr("permutation")->kind, AttrKind::Ints);
  EXPECT_FALSE(findKernel("reduce_sum")->findAttr("keepdims")->required);
  EXPECT_EQ(findKernel("range")->minOperands, 0);
  EXPECT_EQ(findKernel("range")->findAttr("delta")->kind, AttrKind::IntOrFloat);

  // ONNX Mod's fmod, CumSum's exclusive and reverse: optional bools; the overwriting scatters
  // take data, indices and updates.
  EXPECT_EQ(findKernel("mod")->findAttr("fmod")->kind, AttrKind::Bool);
  EXPECT_FALSE(findKernel("mod")->findAttr("fmod")->required);
  const KernelInfo *cumsum = findKernel("cumsum");
  ASSERT_NE(cumsum, nullptr);
  EXPECT_TRUE(cumsum->findAttr("axis")->required);
  for (const char *flag : {"exclusive", "reverse"}) {
    EXPECT_EQ(cumsum->findAttr(flag)->kind, AttrKind::Bool) << flag;
    EXPECT_FALSE(cumsum->findAttr(flag)->required) << flag;
  }
  for (const char *id : {"scatter", "scatter_elements"}) {
    const KernelInfo *k = findKernel(id);
    ASSERT_NE(k, nullptr) << id;
    EXPECT_TRUE(k->acceptsOperands(3)) << id;
    EXPECT_FALSE(k->acceptsOperands(2)) << id;
    EXPECT_EQ(k->dtypes, DTypeRule::Scatter) << id;
  }
  EXPECT_EQ(findKernel("softplus")->dtypes, DTypeRule::Float);
  EXPECT_EQ(findKernel("floor")->dtypes, DTypeRule::Float);
  EXPECT_EQ(findKernel("cos")->dtypes, DTypeRule::Float);
  EXPECT_EQ(findKernel("sin")->dtypes, DTypeRule::Float);

  const KernelInfo *copy = findKernel("copy");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->minOperands, 1);
  EXPECT_EQ(copy->numResults, 1);
}

// The table follows dialects/Graph/IR/Ops.td: every op defined there (`def Graph_XOp :
// Graph_...<"x"`) but param, load_param and constant has an entry, and every entry but copy
// is such an op.
TEST(KernelRegistryTest, MatchesTheGraphOps) {
  std::ifstream in(std::string(RP_SOURCE_DIR) + "/dialects/Graph/IR/Ops.td");
  ASSERT_TRUE(in) << "cannot read Ops.td under " << RP_SOURCE_DIR;
  std::stringstream text;
  text << in.rdbuf();
  const std::string td = text.str();
  const std::regex def(R"re(\ndef Graph_\w+\s*:\s*Graph_\w+<"(\w+)")re");
  std::set<std::string> ops;
  for (std::sregex_iterator it(td.begin(), td.end(), def), end; it != end; ++it)
    ops.insert((*it)[1].str());
  ASSERT_GE(ops.size(), 40u);
  for (const std::string &op : ops) {
    if (op == "param" || op == "load_param" || op == "constant")
      continue;
    EXPECT_NE(findKernel(op), nullptr) << "graph." << op << " has no kernel registry entry";
  }
  for (const KernelInfo &k : allKernels()) {
    if (k.id == "copy")
      continue;
    EXPECT_TRUE(ops.count(std::string(k.id))) << k.id << " is not a graph op of Ops.td";
  }
}

TEST(KernelRegistryTest, NoKernelForParamsAndConstants) {
  EXPECT_EQ(findKernel("param"), nullptr);
  EXPECT_EQ(findKernel("load_param"), nullptr);
  EXPECT_EQ(findKernel("constant"), nullptr);
  EXPECT_EQ(findKernel("graph.add"), nullptr);
  EXPECT_EQ(findKernel(""), nullptr);
}

} // namespace
} // namespace rp::kernels
