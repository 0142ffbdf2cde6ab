//===- TiedWeights.h - Hugging Face names of tied embeddings ----*- C++ -*-===//
//
// A model with tied word embeddings (GPT-2, Llama 3.2, Qwen3 up to 4B, Gemma) reads one
// weight as its input embedding and as its LM head. Exporters name the shared initializer
// differently: TorchScript keeps the first name of the parameter (`model.embed_tokens.weight`),
// the dynamo exporter the last module that used it (`lm_head.weight`). Hugging Face
// checkpoints store the tensor under the input embedding's name and omit the LM head's, so
// the importer names the param after the embedding module: the module path of the Gather that
// reads the weight as its table, from the node's scope (the dynamo exporter's `namespace`
// metadata, "…/model.embed_tokens: torch.nn.modules.sparse.Embedding/…"; the TorchScript
// node name, "/model/embed_tokens/Gather"), plus ".weight". The param keeps the exported
// name as its `initializer`.
//
//===----------------------------------------------------------------------===//
#ifndef RP_FRONTENDS_ONNX_TIEDWEIGHTS_H
#define RP_FRONTENDS_ONNX_TIEDWEIGHTS_H

#include "llvm/ADT/StringMap.h"

#include <string>

namespace onnx {
class GraphProto;
class NodeProto;
} // namespace onnx

namespace mlir::rp::onnx {

/// Initializer name -> Hugging Face state-dict name, for each initializer that is the table
/// (input 0) of a Gather and is read by another node too, whose Gather has a module scope
/// naming another param than the initializer, and whose new name no other initializer has.
llvm::StringMap<std::string> tiedEmbeddingNames(const ::onnx::GraphProto &graph);

/// The module path of `node`'s innermost scope that is an embedding module ("model.embed_tokens"),
/// or of its scope when the exporter gives no module types; "" when the node has no scope.
std::string embeddingModulePath(const ::onnx::NodeProto &node);

} // namespace mlir::rp::onnx

#endif // RP_FRONTENDS_ONNX_TIEDWEIGHTS_H
