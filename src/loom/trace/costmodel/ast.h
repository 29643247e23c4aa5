// Loop-nest AST of a loom kernel instance: the predictor's input (CDMPP's "compact AST" source).
//
// BuildAst(spec, device) mirrors the loops that kernels.cc runs for the same KernelSpec: loops
// with extents (ceil-divided tiles), annotations (unroll factor, vectorize width = ISA lanes on a
// contiguous innermost loop, parallel = threads on the split loop), and leaf statements (one per
// store) with op counts per execution and the buffers they access (innermost stride, whole-kernel
// footprint, per-tile footprint). Leaves are what features.h turns into the leaf sequence; the
// pre-order index of a leaf in the whole tree (loops and leaves) is its position for the
// positional encoding.
//
// Thread-safety: value types; BuildAst is a pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/trace/costmodel/kernel_spec.h"

namespace loom::trace::costmodel {

enum class LoopAnnot { kNone, kUnroll, kVectorize, kParallel };

// Floating-point operations of one execution of a leaf, by type (an FMA is one `fma`).
struct OpCounts {
  double add = 0, mul = 0, fma = 0, div = 0, transcendental = 0, cmp = 0;
  double Flops() const { return add + mul + 2 * fma + div + transcendental + cmp; }
};

// One buffer read or write of a leaf execution (4-byte floats).
struct BufferAccess {
  std::string buffer;
  bool write = false;
  int64_t stride = 1;           // elements between consecutive innermost iterations; 0 = invariant
  int64_t footprint_bytes = 0;  // unique bytes of this buffer touched by the whole kernel
  int64_t tile_bytes = 0;       // bytes touched by one outermost-tile iteration (reuse window)
};

struct LeafStmt {
  std::string name;  // "C[i,j] += A[i,k]*B[k,j]"
  OpCounts ops;
  std::vector<BufferAccess> accesses;
};

struct AstNode {
  bool is_leaf = false;
  // Loop fields (is_leaf == false). A loop of extent 1 named "seq" groups sibling nests.
  std::string var;
  int64_t extent = 1;
  LoopAnnot annot = LoopAnnot::kNone;
  int annot_factor = 1;  // unroll factor, vector lanes or threads
  std::vector<AstNode> children;
  // Leaf fields (is_leaf == true).
  LeafStmt leaf;

  static AstNode Loop(std::string var, int64_t extent, LoopAnnot annot = LoopAnnot::kNone,
                      int factor = 1);
  static AstNode Leaf(LeafStmt leaf);
  AstNode& Add(AstNode child);  // appends, returns the appended child
};

// A leaf in its context: pre-order index in the whole tree and enclosing loops (outer first).
struct LeafContext {
  const LeafStmt* leaf = nullptr;
  int preorder_index = 0;
  std::vector<const AstNode*> loops;
};

struct Ast {
  AstNode root;  // a "seq" loop of extent 1
  // Leaves in pre-order with their contexts; pointers stay valid while the Ast is unchanged.
  std::vector<LeafContext> Leaves() const;
  // Number of nodes (loops + leaves) in the pre-order serialisation, root included.
  int NumNodes() const;
  std::string ToString() const;  // indented dump for debugging and docs
};

Ast BuildAst(const KernelSpec& spec, const Device& device);

}  // namespace loom::trace::costmodel
