//===- GroupLayers.cpp - split the forward function into layers -----------===//
//
// rp-group-layers (see Passes.td). Grouper::run numbers the ops of the forward function,
// marks those computed only from constants, then runs four phases, a section each below:
//  1. Scopes (assignScopes): block index of each param (from its name) and op (from its
//     NameLoc); ops computed only from constants carry none (exporters name folded values
//     after a block). Without scoped names, detectBlocksStructurally finds the blocks.
//  2. Parts (assignParts): every op gets the latest layer among its scope and operands
//     (prefix 0, blocks 1..B, tail B+1); values no block reaches are param-free
//     (rematerialised), derived from a prefix param (first used before the blocks), a tail
//     param (first used after them) or a param used inside the blocks without a scope
//     (rematerialised).
//  3. Boundary tightening (tightenBoundaries): a parameter-free op whose results only one
//     later layer uses moves there when that lowers the number of values crossing layer
//     boundaries.
//  4. Outlining (outline): one function per layer, in order, listed in `graph.layers`.
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

/// Whether `to` is computed from `from` (reachable through operands).
bool reaches(Value from, Value to) {
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
}

/// Whether some op between `from` and `to` (computing `to` from `from`) reads a param.
bool readsParamBetween(Value from, Value to) {
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
}

/// Where a value lives before outlining.
enum class Kind { Part, Free, PrefixParam, TailParam, SideParam };

struct Placement {
  Kind kind = Kind::Free;
  int part = -1; // for Kind::Part: 0 prefix, 1..B blocks, B+1 tail
};

/// The residual stream of a graph without scoped names: the chain of `graph.add`s whose one
/// operand is the previous stream value and whose other operand is computed from it through
/// at least one param, and the value the chain starts from.
struct ResidualStream {
  SmallVector<graph::AddOp> adds;
  Value start;
};

/// What a layer function takes and returns: the values of earlier layers it uses (boundary),
/// the model inputs it reads, and the values later layers use (the tail: the results of the
/// forward function).
struct LayerInterface {
  llvm::SetVector<Value> boundary, inputs;
  SmallVector<Value> outputs;
};

class Grouper {
public:
  Grouper(ModuleOp module, func::FuncOp forward) : module(module), forward(forward) {}

  LogicalResult run();

private:
  // The ops of the forward function in order, and those computed only from constants.
  void indexForwardOps();
  void findConstantDerived();

  // Scopes: the block of each param and op.
  LogicalResult assignScopes();
  void scopesFromNames(llvm::DenseMap<StringRef, int64_t> &paramRaw,
                       llvm::DenseMap<Operation *, int64_t> &opRaw,
                       llvm::SmallSetVector<int64_t, 16> &raw);
  void numberBlocks(const llvm::DenseMap<StringRef, int64_t> &paramRaw,
                    const llvm::DenseMap<Operation *, int64_t> &opRaw,
                    const llvm::SmallSetVector<int64_t, 16> &raw);
  LogicalResult detectBlocksStructurally(llvm::DenseMap<StringRef, int64_t> &paramRaw,
                                         llvm::SmallSetVector<int64_t, 16> &raw);
  ResidualStream findResidualStream() const;
  SmallVector<SmallVector<StringRef>> segmentParams(const ResidualStream &stream);
  bool paramUsedBeyond(StringRef param, int64_t limit,
                       const llvm::SmallPtrSetImpl<Operation *> &streamOps) const;
  SmallVector<std::string> shapeSignature(ArrayRef<StringRef> names);
  LogicalResult assignRepeatingBlocks(ArrayRef<SmallVector<StringRef>> segments,
                                      llvm::DenseMap<StringRef, int64_t> &paramRaw,
                                      llvm::SmallSetVector<int64_t, 16> &raw);

  // Parts: the layer of every value.
  void assignParts();
  std::pair<int64_t, int64_t> blockSpan();
  Placement placeLoad(graph::LoadParamOp load, int64_t firstCore, int64_t lastCore);
  Placement placeByOperands(Operation *op) const;
  void placePrefixParamValues();
  llvm::SmallDenseSet<int, 4> partsUsingPrefixValue(Operation *op) const;
  void readSideParamsWhereUsed();

  // Boundary tightening.
  void tightenBoundaries();
  bool moveForwardIfTighter(Operation *op);
  bool staysWithItsParams(Operation *op, int part) const;
  llvm::SmallDenseSet<int, 4> userParts(Value v) const;
  int soleUserPart(Operation *op) const;
  int crossingDelta(Operation *op, int here, int target) const;

  // Outlining.
  LogicalResult outline();
  std::string layerName(int part) const;
  LogicalResult checkLayerNamesFree();
  SmallVector<Operation *> layerOps(int part, func::ReturnOp ret);
  LayerInterface layerInterface(int part, ArrayRef<Operation *> ordered,
                                func::ReturnOp ret) const;
  func::FuncOp buildLayerFunction(OpBuilder &b, int part, ArrayRef<Operation *> ordered,
                                  const LayerInterface &io,
                                  llvm::DenseMap<Value, std::string> &outputName);

  /// The position of the first op that uses a result of `op`, or -1 when none does.
  int64_t firstUse(Operation *op);
  /// The position of the first op that uses a load of `param`, or -1 when none does.
  int64_t firstUseOfParam(StringRef param);

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
  int tail() const { return numBlocks + 1; }

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

int64_t Grouper::firstUse(Operation *op) {
  int64_t first = -1;
  for (Operation *user : op->getUsers())
    if (first < 0 || index[user] < first)
      first = index[user];
  return first;
}

int64_t Grouper::firstUseOfParam(StringRef param) {
  int64_t first = -1;
  for (Operation *op : ops)
    if (auto load = dyn_cast<graph::LoadParamOp>(op); load && load.getParam() == param)
      if (int64_t f = firstUse(load); f >= 0 && (first < 0 || f < first))
        first = f;
  return first;
}

//===----------------------------------------------------------------------===//
// The ops of the forward function
//===----------------------------------------------------------------------===//

void Grouper::indexForwardOps() {
  for (Operation &op : forward.getBody().front().without_terminator()) {
    index[&op] = static_cast<int64_t>(ops.size());
    ops.push_back(&op);
  }
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

//===----------------------------------------------------------------------===//
// Scopes
//===----------------------------------------------------------------------===//

LogicalResult Grouper::assignScopes() {
  llvm::SmallSetVector<int64_t, 16> raw;
  llvm::DenseMap<StringRef, int64_t> paramRaw;
  llvm::DenseMap<Operation *, int64_t> opRaw;
  scopesFromNames(paramRaw, opRaw, raw);
  if (raw.empty() && failed(detectBlocksStructurally(paramRaw, raw)))
    return forward.emitError("rp-group-layers: found no transformer blocks: no param name or "
                             "node name of @")
           << forward.getSymName()
           << " has a layer index (layers.N, h.N, blocks.N), and no repeating residual "
              "blocks were found";
  numberBlocks(paramRaw, opRaw, raw);
  return success();
}

/// The block indices the names give: of each param (its symbol) and of each op that is not
/// constant-derived (its NameLoc); `raw` collects the indices seen.
void Grouper::scopesFromNames(llvm::DenseMap<StringRef, int64_t> &paramRaw,
                              llvm::DenseMap<Operation *, int64_t> &opRaw,
                              llvm::SmallSetVector<int64_t, 16> &raw) {
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
}

/// Renumbers the raw block indices densely, in order, as parts 1..B.
void Grouper::numberBlocks(const llvm::DenseMap<StringRef, int64_t> &paramRaw,
                           const llvm::DenseMap<Operation *, int64_t> &opRaw,
                           const llvm::SmallSetVector<int64_t, 16> &raw) {
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
}

/// Structural fallback for graphs without scoped names. The ops between two values of the
/// residual stream form a segment. Segments whose params have the same shapes repeat with a
/// period p (a block is p segments: attention and MLP give p = 2); each param of a segment is
/// assigned to its block.
LogicalResult Grouper::detectBlocksStructurally(llvm::DenseMap<StringRef, int64_t> &paramRaw,
                                                llvm::SmallSetVector<int64_t, 16> &raw) {
  ResidualStream stream = findResidualStream();
  if (stream.adds.size() < 2)
    return failure();
  return assignRepeatingBlocks(segmentParams(stream), paramRaw, raw);
}

ResidualStream Grouper::findResidualStream() const {
  ResidualStream stream;
  Value current;
  for (Operation *op : ops) {
    auto add = dyn_cast<graph::AddOp>(op);
    if (!add || add.getLhs().getType() != add.getRhs().getType())
      continue;
    for (auto [skip, branch] : {std::pair(add.getLhs(), add.getRhs()),
                                std::pair(add.getRhs(), add.getLhs())}) {
      if (current && skip != current)
        continue;
      if (reaches(skip, branch) && readsParamBetween(skip, branch)) {
        if (!current)
          stream.start = skip;
        stream.adds.push_back(add);
        current = add.getResult();
        break;
      }
    }
  }
  return stream;
}

/// Segment k: the params first read by an op between stream value k-1 and k; params read
/// before the stream starts (the embedding) belong to the prefix, params whose values are used
/// past their segment (a rotary table shared by several segments) to no block.
SmallVector<SmallVector<StringRef>> Grouper::segmentParams(const ResidualStream &stream) {
  llvm::SmallPtrSet<Operation *, 32> streamOps;
  for (graph::AddOp add : stream.adds)
    streamOps.insert(add);
  int64_t startIndex = stream.start.getDefiningOp() ? index[stream.start.getDefiningOp()] : -1;
  SmallVector<SmallVector<StringRef>> segments(stream.adds.size());
  for (auto p : module.getOps<graph::ParamOp>()) {
    int64_t first = firstUseOfParam(p.getSymName());
    if (first < 0)
      continue;
    for (auto [k, add] : llvm::enumerate(stream.adds)) {
      int64_t lo = k ? index[stream.adds[k - 1]] : startIndex;
      if (first > lo && first < index[add]) {
        if (paramUsedBeyond(p.getSymName(), index[add], streamOps))
          break; // shared by several segments (a rotary table): not a block param
        segments[k].push_back(p.getSymName());
        break;
      }
    }
  }
  return segments;
}

/// Whether a value computed from `param` (not through the residual stream) is used by an op
/// after position `limit`.
bool Grouper::paramUsedBeyond(StringRef param, int64_t limit,
                              const llvm::SmallPtrSetImpl<Operation *> &streamOps) const {
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
}

/// The sorted types of the params `names`.
SmallVector<std::string> Grouper::shapeSignature(ArrayRef<StringRef> names) {
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
}

/// The shortest period with which the segments' param shapes repeat; block k / period gets the
/// params of segment k. Fails when no period repeats.
LogicalResult Grouper::assignRepeatingBlocks(ArrayRef<SmallVector<StringRef>> segments,
                                             llvm::DenseMap<StringRef, int64_t> &paramRaw,
                                             llvm::SmallSetVector<int64_t, 16> &raw) {
  size_t n = segments.size();
  for (size_t period = 1; period <= n / 2; ++period) {
    if (n % period != 0)
      continue;
    bool repeats = true;
    for (size_t k = 0; k + period < n && repeats; ++k)
      repeats = shapeSignature(segments[k]) == shapeSignature(segments[k + period]);
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

//===----------------------------------------------------------------------===//
// Parts
//===----------------------------------------------------------------------===//

void Grouper::assignParts() {
  auto [firstCore, lastCore] = blockSpan();
  for (Operation *op : ops) {
    if (auto load = dyn_cast<graph::LoadParamOp>(op)) {
      placement[load.getResult()] = placeLoad(load, firstCore, lastCore);
      continue;
    }
    // Constants are free wherever their name puts them: each layer that uses one gets its own
    // copy (exporters share one folded rotary table between all blocks, scoped to the first).
    if (isa<graph::ConstantOp>(op)) {
      for (Value r : op->getResults())
        placement[r] = Placement();
      continue;
    }
    Placement result = placeByOperands(op);
    for (Value r : op->getResults())
      placement[r] = result;
  }
  placePrefixParamValues();
  readSideParamsWhereUsed();
}

/// The positions of the first and the last core op: those scoped or reading a block param
/// directly; they bound the blocks' span (-1, -1 when there is none).
std::pair<int64_t, int64_t> Grouper::blockSpan() {
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
  return {firstCore, lastCore};
}

/// A load of a block param is in its block; a load of another param is a prefix param when
/// first used before the blocks' span, a tail param when first used after it, and a side
/// param (rematerialised) otherwise.
Placement Grouper::placeLoad(graph::LoadParamOp load, int64_t firstCore, int64_t lastCore) {
  if (auto b = paramBlock.find(load.getParam()); b != paramBlock.end())
    return {Kind::Part, b->second};
  Placement p;
  int64_t first = firstUse(load);
  p.kind = first >= 0 && first < firstCore   ? Kind::PrefixParam
           : first > lastCore                ? Kind::TailParam
                                             : Kind::SideParam;
  if (p.kind == Kind::PrefixParam)
    prefixLoads.insert(load.getResult());
  return p;
}

/// The latest part among an op's scope and operands; the tail when it reads a tail param;
/// otherwise what its param operands make it (a prefix or side param value), or free.
Placement Grouper::placeByOperands(Operation *op) const {
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
  if (tailParam || part == tail())
    result = {Kind::Part, tail()};
  else if (part >= 0)
    result = {Kind::Part, part};
  else if (prefixParam)
    result.kind = Kind::PrefixParam;
  else if (sideParam)
    result.kind = Kind::SideParam;
  return result;
}

/// Values of prefix params: the prefix when only the first block uses them (the embedding),
/// rematerialised otherwise.
void Grouper::placePrefixParamValues() {
  for (Operation *op : llvm::reverse(ops)) {
    if (op->getNumResults() == 0 || place(op->getResult(0)).kind != Kind::PrefixParam)
      continue;
    llvm::SmallDenseSet<int, 4> users = partsUsingPrefixValue(op);
    // Only the first block's input stays in the prefix (the embedding); a param-derived value
    // used elsewhere (a tied LM head's transposed embedding, rotary tables) is recomputed
    // where it is used instead of crossing boundaries.
    bool firstBlockOnly = users.empty() || (users.size() == 1 && users.contains(1));
    Placement p = firstBlockOnly ? Placement{Kind::Part, 0} : Placement{Kind::SideParam, -1};
    for (Value r : op->getResults())
      placement[r] = p;
  }
}

/// The parts after the prefix that use the results of `op`, through the values not placed in
/// a part yet; the tail for a result of the forward function.
llvm::SmallDenseSet<int, 4> Grouper::partsUsingPrefixValue(Operation *op) const {
  llvm::SmallDenseSet<int, 4> users;
  llvm::DenseSet<Operation *> visited;
  std::function<void(Value)> collect = [&](Value v) {
    for (Operation *user : v.getUsers()) {
      if (!visited.insert(user).second)
        continue;
      if (isa<func::ReturnOp>(user)) {
        users.insert(tail());
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
  return users;
}

/// Loads of prefix/tail params are read where they are used.
void Grouper::readSideParamsWhereUsed() {
  for (Operation *op : ops)
    if (auto load = dyn_cast<graph::LoadParamOp>(op))
      if (!paramBlock.count(load.getParam()))
        placement[load.getResult()] = Placement{Kind::SideParam, -1};
}

//===----------------------------------------------------------------------===//
// Boundary tightening
//===----------------------------------------------------------------------===//

/// Counts the (value, consuming part) pairs that cross a boundary; moving a parameter-free op
/// to the only later part that uses it is kept when it lowers their number.
void Grouper::tightenBoundaries() {
  for (int round = 0; round < 8; ++round) {
    bool changed = false;
    for (Operation *op : llvm::reverse(ops))
      changed |= moveForwardIfTighter(op);
    if (!changed)
      break;
  }
}

/// Moves `op` into the one later part that uses its results when that crosses no more
/// boundaries; returns whether it moved.
bool Grouper::moveForwardIfTighter(Operation *op) {
  if (op->getNumResults() == 0 || isa<graph::LoadParamOp>(op))
    return false;
  Placement here = place(op->getResult(0));
  if (here.kind != Kind::Part || staysWithItsParams(op, here.part))
    return false;
  int target = soleUserPart(op);
  if (target <= here.part)
    return false;
  // Moves only go forward, so equal-cost moves terminate.
  if (crossingDelta(op, here.part, target) > 0)
    return false;
  for (Value r : op->getResults())
    placement[r] = Placement{Kind::Part, target};
  return true;
}

/// Ops that read params stay with them, except a prefix param's read after the prefix
/// (re-read where it is used: a tied LM head reads the embedding).
bool Grouper::staysWithItsParams(Operation *op, int part) const {
  return llvm::any_of(op->getOperands(), [&](Value v) {
    return v.getDefiningOp<graph::LoadParamOp>() && (part == 0 || !prefixLoads.contains(v));
  });
}

/// The parts whose ops use `v` (the tail for the forward function's return).
llvm::SmallDenseSet<int, 4> Grouper::userParts(Value v) const {
  llvm::SmallDenseSet<int, 4> parts;
  for (Operation *user : v.getUsers()) {
    if (isa<func::ReturnOp>(user))
      parts.insert(tail());
    else if (user->getNumResults() && place(user->getResult(0)).kind == Kind::Part)
      parts.insert(place(user->getResult(0)).part);
  }
  return parts;
}

/// The one part that uses the results of `op`, or -1 when none or several do.
int Grouper::soleUserPart(Operation *op) const {
  int target = -1;
  bool single = true;
  for (Value r : op->getResults())
    for (int p : userParts(r)) {
      if (target < 0)
        target = p;
      else if (target != p)
        single = false;
    }
  return single ? target : -1;
}

/// The change in the number of crossing (value, part) pairs when `op` moves from part `here`
/// to part `target`.
int Grouper::crossingDelta(Operation *op, int here, int target) const {
  int delta = -static_cast<int>(op->getNumResults());
  for (Value v : op->getOperands()) {
    int vp = partOf(v);
    if (vp < 0)
      continue;
    // Before: (v, here) crosses unless v is in `here`; after: (v, target) crosses.
    bool otherUseHere = llvm::any_of(v.getUsers(), [&](Operation *u) {
      return u != op && u->getNumResults() && partOf(u->getResult(0)) == here;
    });
    bool alreadyInTarget = userParts(v).contains(target);
    if (vp != here && !otherUseHere)
      --delta;
    if (vp != target && !alreadyInTarget)
      ++delta;
  }
  return delta;
}

//===----------------------------------------------------------------------===//
// Outlining
//===----------------------------------------------------------------------===//

LogicalResult Grouper::outline() {
  if (failed(checkLayerNamesFree()))
    return failure();
  auto ret = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
  OpBuilder b(forward.getContext());
  b.setInsertionPointAfter(forward);
  SmallVector<Attribute> layers;
  llvm::DenseMap<Value, std::string> outputName; // value -> "<layer>#<result index>"
  for (int part = 0; part <= tail(); ++part) {
    SmallVector<Operation *> ordered = layerOps(part, ret);
    LayerInterface io = layerInterface(part, ordered, ret);
    func::FuncOp fn = buildLayerFunction(b, part, ordered, io, outputName);
    b.setInsertionPointAfter(fn);
    layers.push_back(FlatSymbolRefAttr::get(fn.getSymNameAttr()));
  }
  module->setAttr("graph.layers", b.getArrayAttr(layers));
  return success();
}

std::string Grouper::layerName(int part) const {
  if (part == 0)
    return "prefix";
  if (part == tail())
    return "tail";
  return "block_" + std::to_string(part - 1);
}

LogicalResult Grouper::checkLayerNamesFree() {
  for (int part = 0; part <= tail(); ++part)
    if (module.lookupSymbol(layerName(part)))
      return forward.emitError("rp-group-layers: a symbol named '")
             << layerName(part) << "' already exists";
  return success();
}

/// The ops of layer `part` and the rematerialised producers they need, in the forward
/// function's order.
SmallVector<Operation *> Grouper::layerOps(int part, func::ReturnOp ret) {
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
  if (part == tail())
    for (Value v : ret.getOperands())
      if (Operation *def = v.getDefiningOp(); def && rematerialised(v))
        need(def);
  SmallVector<Operation *> ordered(body.begin(), body.end());
  llvm::sort(ordered, [&](Operation *a, Operation *c) { return index[a] < index[c]; });
  return ordered;
}

/// Inputs: values of earlier parts, then model inputs, each once; outputs: values later parts
/// use (or the function's results, for the tail).
LayerInterface Grouper::layerInterface(int part, ArrayRef<Operation *> ordered,
                                       func::ReturnOp ret) const {
  LayerInterface io;
  auto take = [&](Value v) {
    if (isa<BlockArgument>(v))
      io.inputs.insert(v);
    else if (int p = partOf(v); p >= 0 && p != part)
      io.boundary.insert(v);
  };
  for (Operation *op : ordered)
    for (Value v : op->getOperands())
      take(v);
  if (part == tail()) {
    for (Value v : ret.getOperands())
      take(v);
    io.outputs.assign(ret.getOperands().begin(), ret.getOperands().end());
    return io;
  }
  for (Operation *op : ordered)
    for (Value r : op->getResults())
      if (partOf(r) == part && llvm::any_of(r.getUsers(), [&](Operation *u) {
            return isa<func::ReturnOp>(u) ||
                   (u->getNumResults() && partOf(u->getResult(0)) > part);
          }))
        io.outputs.push_back(r);
  return io;
}

/// Builds the function of layer `part` at `b`'s insertion point: its arguments (boundary ones
/// named by `graph.boundary`, model inputs keeping their `graph.name`), a copy of `ordered`,
/// and the return of `io.outputs`, which it records in `outputName`.
func::FuncOp Grouper::buildLayerFunction(OpBuilder &b, int part, ArrayRef<Operation *> ordered,
                                         const LayerInterface &io,
                                         llvm::DenseMap<Value, std::string> &outputName) {
  SmallVector<Type> argTypes, resultTypes;
  for (Value v : io.boundary)
    argTypes.push_back(v.getType());
  for (Value v : io.inputs)
    argTypes.push_back(v.getType());
  for (Value v : io.outputs)
    resultTypes.push_back(v.getType());
  auto fn = func::FuncOp::create(b, forward.getLoc(), layerName(part),
                                 b.getFunctionType(argTypes, resultTypes));
  Block *entry = fn.addEntryBlock();
  IRMapping map;
  unsigned arg = 0;
  for (Value v : io.boundary) {
    fn.setArgAttr(arg, "graph.boundary", b.getStringAttr(outputName.lookup(v)));
    map.map(v, entry->getArgument(arg++));
  }
  for (Value v : io.inputs) {
    auto ba = cast<BlockArgument>(v);
    if (auto name = forward.getArgAttr(ba.getArgNumber(), "graph.name"))
      fn.setArgAttr(arg, "graph.name", name);
    map.map(v, entry->getArgument(arg++));
  }
  OpBuilder inner = OpBuilder::atBlockEnd(entry);
  for (Operation *op : ordered)
    inner.clone(*op, map);
  SmallVector<Value> results;
  for (auto [i, v] : llvm::enumerate(io.outputs)) {
    results.push_back(map.lookupOrDefault(v));
    outputName[v] = layerName(part) + "#" + std::to_string(i);
  }
  func::ReturnOp::create(inner, forward.getLoc(), results);
  if (part == tail())
    for (unsigned i = 0; i < io.outputs.size(); ++i)
      if (auto name = forward.getResultAttr(i, "graph.name"))
        fn.setResultAttr(i, "graph.name", name);
  return fn;
}

LogicalResult Grouper::run() {
  if (!forward.getBody().hasOneBlock())
    return forward.emitError("rp-group-layers: expected a function with one block");
  indexForwardOps();
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
