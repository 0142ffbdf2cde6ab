//===- GroupLayers.cpp - split the forward function into layers -----------===//
//
// rp-group-layers (see Passes.td). The steps:
//  1. Scopes: block index of each param (from its name) and op (from its NameLoc); ops
//     computed only from constants carry none (exporters name folded values after a block).
//  2. Parts: every op gets the latest layer among its scope and operands (prefix 0, blocks
//     1..B, tail B+1); values no block reaches are param-free (rematerialised), derived from
//     a prefix param (first used before the blocks), a tail param (first used after them) or
//     a param used inside the blocks without a scope (rematerialised).
//  3. Boundary tightening: a parameter-free op whose results only one later layer uses moves
//     there when that lowers the number of values crossing layer boundaries.
//  4. Outlining: one function per layer, in order, listed in `graph.layers`.
//
//===----------------------------------------------------------------------===//

#include "passes/Graph/Passes.h"

#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Regex.h"

#include <optional>

namespace mlir::rp {

#define GEN_PASS_DEF_GROUPLAYERS
#include "passes/Graph/Passes.h.inc"

namespace {

/// The block index in a scoped name: `model.layers.3.mlp`, `/model/layers.3/...`,
/// `transformer.h.3.attn`, `blocks.3`.
std::optional<int64_t> blockIndexIn(StringRef name) {
  static const llvm::Regex scope("(^|[._/])(layers|layer|h|blocks|block)[._/]([0-9]+)([._/]|$)");
  SmallVector<StringRef, 5> groups;
  if (!scope.match(name, &groups))
    return std::nullopt;
  int64_t index;
  if (groups[3].getAsInteger(10, index))
    return std::nullopt;
  return index;
}

std::optional<int64_t> blockIndexOfLoc(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return blockIndexIn(name.getName().getValue());
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location l : fused.getLocations())
      if (auto i = blockIndexOfLoc(l))
        return i;
  return std::nullopt;
}

/// Where a value lives before outlining.
enum class Kind { Part, Free, PrefixParam, TailParam, SideParam };

struct Placement {
  Kind kind = Kind::Free;
  int part = -1; // for Kind::Part: 0 prefix, 1..B blocks, B+1 tail
};

class Grouper {
public:
  Grouper(ModuleOp module, func::FuncOp forward) : module(module), forward(forward) {}

  LogicalResult run();

private:
  LogicalResult assignScopes();
  LogicalResult detectBlocksStructurally(llvm::DenseMap<StringRef, int64_t> &paramRaw,
                                         llvm::SmallSetVector<int64_t, 16> &raw);
  void assignParts();
  void tightenBoundaries();
  LogicalResult outline();

  bool rematerialised(Value v) const {
    Kind k = place(v).kind;
    return k == Kind::Free || k == Kind::SideParam;
  }
  Placement place(Value v) const {
    auto it = placement.find(v);
    return it == placement.end() ? Placement{} : it->second;
  }
  /// Numeric part of `v`, or -1 when it is rematerialised or a model input.
  int partOf(Value v) const {
    Placement p = place(v);
    return p.kind == Kind::Part ? p.part : -1;
  }

  void findConstantDerived();

  ModuleOp module;
  func::FuncOp forward;
  SmallVector<Operation *> ops;
  /// Ops computed only from constants (no param, no model input): folded values.
  llvm::DenseSet<Operation *> constantDerived;
  llvm::DenseMap<Operation *, int64_t> index;
  llvm::DenseMap<StringRef, int> paramBlock; // param name -> 1..B
  llvm::DenseMap<Operation *, int> opScope;  // op -> 1..B
  llvm::DenseMap<Value, Placement> placement;
  /// Loads of params first used before the blocks (the embedding), re-read by every layer
  /// that uses them.
  llvm::DenseSet<Value> prefixLoads;
  int numBlocks = 0;
};

/// Structural fallback for graphs without scoped names. The residual stream is the chain of
/// `graph.add`s whose one operand is the previous stream value and whose other operand is
/// computed from it through at least one param; the ops between two stream values form a
/// segment. Segments whose params have the same shapes repeat with a period p (a block is p
/// segments: attention and MLP give p = 2); each param of a segment is assigned to its block.
LogicalResult Grouper::detectBlocksStructurally(llvm::DenseMap<StringRef, int64_t> &paramRaw,
                                                llvm::SmallSetVector<int64_t, 16> &raw) {
  // Whether `to` is computed from `from` (reachable through operands).
  auto reaches = [&](Value from, Value to) {
    llvm::SmallPtrSet<Operation *, 32> seen;
    SmallVector<Value> work{to};
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (v == from)
        return true;
      Operation *def = v.getDefiningOp();
      if (!def || !seen.insert(def).second)
        continue;
      for (Value o : def->getOperands())
        work.push_back(o);
    }
    return false;
  };
  auto readsParam = [&](Value from, Value to) {
    // Some op between `from` and `to` reads a param.
    llvm::SmallPtrSet<Operation *, 32> seen;
    SmallVector<Value> work{to};
    while (!work.empty()) {
      Value v = work.pop_back_val();
      Operation *def = v.getDefiningOp();
      if (v == from || !def || !seen.insert(def).second)
        continue;
      if (isa<graph::LoadParamOp>(def))
        return true;
      for (Value o : def->getOperands())
        work.push_back(o);
    }
    return false;
  };
  // The residual chain.
  SmallVector<graph::AddOp> stream;
  Value current, start;
  for (Operation *op : ops) {
    auto add = dyn_cast<graph::AddOp>(op);
    if (!add || add.getLhs().getType() != add.getRhs().getType())
      continue;
    for (auto [skip, branch] : {std::pair(add.getLhs(), add.getRhs()),
                                std::pair(add.getRhs(), add.getLhs())}) {
      if (current && skip != current)
        continue;
      if (reaches(skip, branch) && readsParam(skip, branch)) {
        if (!current)
          start = skip;
        stream.push_back(add);
        current = add.getResult();
        break;
      }
    }
  }
  if (stream.size() < 2)
    return failure();
  llvm::SmallPtrSet<Operation *, 32> streamOps;
  for (graph::AddOp add : stream)
    streamOps.insert(add);
  // Whether a value computed from `param` (not through the residual stream) is used by an op
  // after position `limit`.
  auto usedBeyond = [&](StringRef param, int64_t limit) {
    llvm::SmallPtrSet<Operation *, 32> seen;
    SmallVector<Operation *> work;
    for (Operation *op : ops)
      if (auto load = dyn_cast<graph::LoadParamOp>(op); load && load.getParam() == param)
        work.push_back(op);
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      if (!seen.insert(op).second)
        continue;
      for (Operation *user : op->getUsers()) {
        if (isa<func::ReturnOp>(user) || index.lookup(user) > limit)
          return true;
        if (!streamOps.contains(user))
          work.push_back(user);
      }
    }
    return false;
  };
  // Segment k: the params first read by an op between stream[k-1] and stream[k]; params read
  // before the stream starts (the embedding) belong to the prefix.
  int64_t startIndex = start.getDefiningOp() ? index[start.getDefiningOp()] : -1;
  SmallVector<SmallVector<StringRef>> segments(stream.size());
  for (auto p : module.getOps<graph::ParamOp>()) {
    int64_t first = -1;
    for (Operation *op : ops)
      if (auto load = dyn_cast<graph::LoadParamOp>(op); load && load.getParam() == p.getSymName())
        for (Operation *user : load->getUsers())
          if (first < 0 || index[user] < first)
            first = index[user];
    if (first < 0)
      continue;
    for (auto [k, add] : llvm::enumerate(stream)) {
      int64_t lo = k ? index[stream[k - 1]] : startIndex;
      if (first > lo && first < index[add]) {
        if (usedBeyond(p.getSymName(), index[add]))
          break; // shared by several segments (a rotary table): not a block param
        segments[k].push_back(p.getSymName());
        break;
      }
    }
  }
  auto signature = [&](ArrayRef<StringRef> names) {
    SmallVector<std::string> shapes;
    for (StringRef n : names) {
      auto p = module.lookupSymbol<graph::ParamOp>(n);
      std::string s;
      llvm::raw_string_ostream os(s);
      os << p.getType();
      shapes.push_back(os.str());
    }
    llvm::sort(shapes);
    return shapes;
  };
  size_t n = segments.size();
  for (size_t period = 1; period <= n / 2; ++period) {
    if (n % period != 0)
      continue;
    bool repeats = true;
    for (size_t k = 0; k + period < n && repeats; ++k)
      repeats = signature(segments[k]) == signature(segments[k + period]);
    if (!repeats)
      continue;
    for (size_t k = 0; k < n; ++k)
      for (StringRef name : segments[k]) {
        paramRaw[name] = static_cast<int64_t>(k / period);
        raw.insert(static_cast<int64_t>(k / period));
      }
    return success();
  }
  return failure();
}

/// Marks the ops whose operands all come from constant-derived ops (graph.constant, a
/// graph.range, or ops of those): such a value is the same in every layer, so its name is no
/// evidence of where it belongs. The TorchScript exporter scopes the rotary tables it folds to
/// the first block (`/model/layers.0/...`), and the canonicalizer hoists them above the
/// embedding; counted as block 0 work, they would pull the embedding lookup out of the prefix.
void Grouper::findConstantDerived() {
  for (Operation *op : ops)
    if (!isa<graph::LoadParamOp>(op) && llvm::all_of(op->getOperands(), [&](Value v) {
          Operation *def = v.getDefiningOp();
          return def && constantDerived.contains(def);
        }))
      constantDerived.insert(op);
}

LogicalResult Grouper::assignScopes() {
  llvm::SmallSetVector<int64_t, 16> raw;
  llvm::DenseMap<StringRef, int64_t> paramRaw;
  llvm::DenseMap<Operation *, int64_t> opRaw;
  for (auto p : module.getOps<graph::ParamOp>())
    if (auto i = blockIndexIn(p.getSymName())) {
      paramRaw[p.getSymName()] = *i;
      raw.insert(*i);
    }
  for (Operation *op : ops)
    if (auto i = blockIndexOfLoc(op->getLoc()); i && !constantDerived.contains(op)) {
      opRaw[op] = *i;
      raw.insert(*i);
    }
  if (raw.empty() && failed(detectBlocksStructurally(paramRaw, raw)))
    return forward.emitError("rp-group-layers: found no transformer blocks: no param name or "
                             "node name of @")
           << forward.getSymName()
           << " has a layer index (layers.N, h.N, blocks.N), and no repeating residual "
              "blocks were found";
  SmallVector<int64_t> sorted(raw.begin(), raw.end());
  llvm::sort(sorted);
  llvm::DenseMap<int64_t, int> dense;
  for (auto [i, r] : llvm::enumerate(sorted))
    dense[r] = static_cast<int>(i) + 1;
  numBlocks = static_cast<int>(sorted.size());
  for (auto &kv : paramRaw)
    paramBlock[kv.first] = dense[kv.second];
  for (auto &kv : opRaw)
    opScope[kv.first] = dense[kv.second];
  return success();
}

void Grouper::assignParts() {
  const int tail = numBlocks + 1;
  // Core ops: those scoped or reading a block param directly; they bound the blocks' span.
  int64_t firstCore = -1, lastCore = -1;
  auto isBlockLoad = [&](Value v) {
    auto load = v.getDefiningOp<graph::LoadParamOp>();
    return load && paramBlock.count(load.getParam());
  };
  for (Operation *op : ops)
    if (opScope.count(op) || llvm::any_of(op->getOperands(), isBlockLoad)) {
      if (firstCore < 0)
        firstCore = index[op];
      lastCore = index[op];
    }

  for (Operation *op : ops) {
    if (auto load = dyn_cast<graph::LoadParamOp>(op)) {
      Placement p;
      if (auto b = paramBlock.find(load.getParam()); b != paramBlock.end()) {
        p = {Kind::Part, b->second};
      } else {
        int64_t first = -1;
        for (Operation *user : load->getUsers())
          if (first < 0 || index[user] < first)
            first = index[user];
        p.kind = first >= 0 && first < firstCore   ? Kind::PrefixParam
                 : first > lastCore                ? Kind::TailParam
                                                   : Kind::SideParam;
        if (p.kind == Kind::PrefixParam)
          prefixLoads.insert(load.getResult());
      }
      placement[load.getResult()] = p;
      continue;
    }
    // Constants are free wherever their name puts them: each layer that uses one gets its own
    // copy (exporters share one folded rotary table between all blocks, scoped to the first).
    if (isa<graph::ConstantOp>(op)) {
      for (Value r : op->getResults())
        placement[r] = Placement();
      continue;
    }
    int part = -1;
    bool prefixParam = false, tailParam = false, sideParam = false;
    if (auto s = opScope.find(op); s != opScope.end())
      part = s->second;
    for (Value v : op->getOperands()) {
      Placement p = place(v);
      switch (p.kind) {
      case Kind::Part:
        part = std::max(part, p.part);
        break;
      case Kind::PrefixParam:
        prefixParam = true;
        break;
      case Kind::TailParam:
        tailParam = true;
        break;
      case Kind::SideParam:
        sideParam = true;
        break;
      case Kind::Free:
        break;
      }
    }
    Placement result;
    if (tailParam || part == tail)
      result = {Kind::Part, tail};
    else if (part >= 0)
      result = {Kind::Part, part};
    else if (prefixParam)
      result.kind = Kind::PrefixParam;
    else if (sideParam)
      result.kind = Kind::SideParam;
    for (Value r : op->getResults())
      placement[r] = result;
  }

  // Values of prefix params: the prefix when only the first block uses them (the embedding),
  // rematerialised otherwise.
  for (Operation *op : llvm::reverse(ops)) {
    if (op->getNumResults() == 0 || place(op->getResult(0)).kind != Kind::PrefixParam)
      continue;
    llvm::SmallDenseSet<int, 4> users;
    llvm::DenseSet<Operation *> visited;
    std::function<void(Value)> collect = [&](Value v) {
      for (Operation *user : v.getUsers()) {
        if (!visited.insert(user).second)
          continue;
        if (isa<func::ReturnOp>(user)) {
          users.insert(tail);
          continue;
        }
        for (Value r : user->getResults()) {
          Placement p = place(r);
          if (p.kind != Kind::Part)
            collect(r);
          else if (p.part > 0) // users already in the prefix do not count
            users.insert(p.part);
        }
      }
    };
    for (Value r : op->getResults())
      collect(r);
    // Only the first block's input stays in the prefix (the embedding); a param-derived value
    // used elsewhere (a tied LM head's transposed embedding, rotary tables) is recomputed
    // where it is used instead of crossing boundaries.
    bool firstBlockOnly = users.empty() || (users.size() == 1 && users.contains(1));
    Placement p = firstBlockOnly ? Placement{Kind::Part, 0} : Placement{Kind::SideParam, -1};
    for (Value r : op->getResults())
      placement[r] = p;
  }
  // Loads of prefix/tail params are read where they are used.
  for (Operation *op : ops)
    if (auto load = dyn_cast<graph::LoadParamOp>(op))
      if (!paramBlock.count(load.getParam()))
        placement[load.getResult()] = Placement{Kind::SideParam, -1};
}

void Grouper::tightenBoundaries() {
  // The (value, consuming part) pairs that cross a boundary; moving a parameter-free op to the
  // only later part that uses it is kept when it lowers their number.
  auto userParts = [&](Value v) {
    llvm::SmallDenseSet<int, 4> parts;
    for (Operation *user : v.getUsers()) {
      if (isa<func::ReturnOp>(user))
        parts.insert(numBlocks + 1);
      else if (user->getNumResults() && place(user->getResult(0)).kind == Kind::Part)
        parts.insert(place(user->getResult(0)).part);
    }
    return parts;
  };
  for (int round = 0; round < 8; ++round) {
    bool changed = false;
    for (Operation *op : llvm::reverse(ops)) {
      if (op->getNumResults() == 0 || isa<graph::LoadParamOp>(op))
        continue;
      Placement here = place(op->getResult(0));
      if (here.kind != Kind::Part)
        continue;
      if (llvm::any_of(op->getOperands(), [&](Value v) {
            return v.getDefiningOp<graph::LoadParamOp>() &&
                   (here.part == 0 || !prefixLoads.contains(v));
          }))
        continue; // ops that read params stay with them, except a prefix param's read after
                  // the prefix (re-read where it is used: a tied LM head reads the embedding)
      int target = -1;
      bool single = true;
      for (Value r : op->getResults())
        for (int p : userParts(r)) {
          if (target < 0)
            target = p;
          else if (target != p)
            single = false;
        }
      if (!single || target <= here.part)
        continue;
      int delta = -static_cast<int>(op->getNumResults());
      for (Value v : op->getOperands()) {
        int vp = partOf(v);
        if (vp < 0)
          continue;
        // Before: (v, here) crosses unless v is in `here`; after: (v, target) crosses.
        bool otherUseHere = llvm::any_of(v.getUsers(), [&](Operation *u) {
          return u != op && u->getNumResults() && partOf(u->getResult(0)) == here.part;
        });
        bool alreadyInTarget = userParts(v).contains(target);
        if (vp != here.part && !otherUseHere)
          --delta;
        if (vp != target && !alreadyInTarget)
          ++delta;
      }
      if (delta <= 0) { // moves only go forward, so equal-cost moves terminate
        for (Value r : op->getResults())
          placement[r] = Placement{Kind::Part, target};
        changed = true;
      }
    }
    if (!changed)
      break;
  }
}

LogicalResult Grouper::outline() {
  const int tail = numBlocks + 1;
  auto nameOf = [&](int part) -> std::string {
    if (part == 0)
      return "prefix";
    if (part == tail)
      return "tail";
    return "block_" + std::to_string(part - 1);
  };
  for (int part = 0; part <= tail; ++part)
    if (module.lookupSymbol(nameOf(part)))
      return forward.emitError("rp-group-layers: a symbol named '")
             << nameOf(part) << "' already exists";

  auto ret = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
  OpBuilder b(forward.getContext());
  b.setInsertionPointAfter(forward);
  SmallVector<Attribute> layers;
  llvm::DenseMap<Value, std::string> outputName; // value -> "<layer>#<result index>"
  for (int part = 0; part <= tail; ++part) {
    // The ops of this part, and the rematerialised producers they need.
    llvm::SetVector<Operation *> body;
    std::function<void(Operation *)> need = [&](Operation *op) {
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp())
          if (rematerialised(v) && !body.contains(def))
            need(def);
      body.insert(op);
    };
    for (Operation *op : ops)
      if (op->getNumResults() && partOf(op->getResult(0)) == part)
        need(op);
    if (part == tail)
      for (Value v : ret.getOperands())
        if (Operation *def = v.getDefiningOp(); def && rematerialised(v))
          need(def);
    SmallVector<Operation *> ordered(body.begin(), body.end());
    llvm::sort(ordered, [&](Operation *a, Operation *c) { return index[a] < index[c]; });

    // Inputs: values of earlier parts, then model inputs, each once.
    llvm::SetVector<Value> boundary, inputs;
    for (Operation *op : ordered)
      for (Value v : op->getOperands()) {
        if (isa<BlockArgument>(v))
          inputs.insert(v);
        else if (int p = partOf(v); p >= 0 && p != part)
          boundary.insert(v);
      }
    if (part == tail)
      for (Value v : ret.getOperands()) {
        if (isa<BlockArgument>(v))
          inputs.insert(v);
        else if (int p = partOf(v); p >= 0 && p != part)
          boundary.insert(v);
      }
    // Outputs: values later parts use (or the function's results, for the tail).
    SmallVector<Value> outputs;
    if (part == tail) {
      outputs.assign(ret.getOperands().begin(), ret.getOperands().end());
    } else {
      for (Operation *op : ordered)
        for (Value r : op->getResults())
          if (partOf(r) == part &&
              llvm::any_of(r.getUsers(), [&](Operation *u) {
                return isa<func::ReturnOp>(u) ||
                       (u->getNumResults() && partOf(u->getResult(0)) > part);
              }))
            outputs.push_back(r);
    }
    SmallVector<Type> argTypes, resultTypes;
    for (Value v : boundary)
      argTypes.push_back(v.getType());
    for (Value v : inputs)
      argTypes.push_back(v.getType());
    for (Value v : outputs)
      resultTypes.push_back(v.getType());
    auto fn = func::FuncOp::create(b, forward.getLoc(), nameOf(part),
                                   b.getFunctionType(argTypes, resultTypes));
    b.setInsertionPointAfter(fn);
    Block *entry = fn.addEntryBlock();
    IRMapping map;
    unsigned arg = 0;
    for (Value v : boundary) {
      fn.setArgAttr(arg, "graph.boundary", b.getStringAttr(outputName.lookup(v)));
      map.map(v, entry->getArgument(arg++));
    }
    for (Value v : inputs) {
      auto ba = cast<BlockArgument>(v);
      if (auto name = forward.getArgAttr(ba.getArgNumber(), "graph.name"))
        fn.setArgAttr(arg, "graph.name", name);
      map.map(v, entry->getArgument(arg++));
    }
    OpBuilder inner = OpBuilder::atBlockEnd(entry);
    for (Operation *op : ordered)
      inner.clone(*op, map);
    SmallVector<Value> results;
    for (auto [i, v] : llvm::enumerate(outputs)) {
      results.push_back(map.lookupOrDefault(v));
      outputName[v] = nameOf(part) + "#" + std::to_string(i);
    }
    func::ReturnOp::create(inner, forward.getLoc(), results);
    if (part == tail)
      for (unsigned i = 0; i < outputs.size(); ++i)
        if (auto name = forward.getResultAttr(i, "graph.name"))
          fn.setResultAttr(i, "graph.name", name);
    layers.push_back(FlatSymbolRefAttr::get(fn.getSymNameAttr()));
  }
  module->setAttr("graph.layers", b.getArrayAttr(layers));
  return success();
}

LogicalResult Grouper::run() {
  if (!forward.getBody().hasOneBlock())
    return forward.emitError("rp-group-layers: expected a function with one block");
  for (Operation &op : forward.getBody().front().without_terminator()) {
    index[&op] = static_cast<int64_t>(ops.size());
    ops.push_back(&op);
  }
  findConstantDerived();
  if (failed(assignScopes()))
    return failure();
  assignParts();
  tightenBoundaries();
  return outline();
}

struct GroupLayersPass : public impl::GroupLayersBase<GroupLayersPass> {
  using GroupLayersBase::GroupLayersBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>(function);
    if (!forward) {
      module.emitError("rp-group-layers: no function named '") << function << "'";
      return signalPassFailure();
    }
    if (failed(Grouper(module, forward).run()))
      signalPassFailure();
  }
};

} // namespace
} // namespace mlir::rp
