// rp-freeze-params: an empty pattern, a bad one, or one that matches no param is an error.
// RUN: not rp-opt %s --rp-freeze-params 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: not rp-opt %s --rp-freeze-params="pattern=" 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: not rp-opt %s --rp-freeze-params="pattern=xyz" 2>&1 | FileCheck %s --check-prefix=NOMATCH
// RUN: not rp-opt %s --rp-freeze-params="pattern=^embed$" 2>&1 | FileCheck %s --check-prefix=ANCHOR
// RUN: not rp-opt %s --rp-freeze-params="pattern=embed(" 2>&1 | FileCheck %s --check-prefix=PAREN

// EMPTY: error: rp-freeze-params: 'pattern' is empty; give a regex of the params to freeze (e.g. pattern=embed_tokens)
// NOMATCH: error: rp-freeze-params: pattern 'xyz' matches no param; params: model.embed_tokens.weight, norm.weight
// ANCHOR: error: rp-freeze-params: pattern '^embed$' matches no param; params: model.embed_tokens.weight, norm.weight
// The regex library's own message follows the pattern.
// PAREN: error: rp-freeze-params: bad pattern 'embed(': Mismatched '(' and ')' in regular expression

graph.param @model.embed_tokens.weight trainable : tensor<16x8xf32>
graph.param @norm.weight trainable : tensor<8xf32>
