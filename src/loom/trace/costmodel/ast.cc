#include "loom/trace/costmodel/ast.h"

#include <algorithm>
#include <functional>
#include <sstream>

namespace loom::trace::costmodel {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr int64_t kF = 4;  // bytes per float

BufferAccess Acc(std::string buf, bool write, int64_t stride, int64_t footprint, int64_t tile) {
  return BufferAccess{std::move(buf), write, stride, footprint * kF, tile * kF};
}

// A loop over `extent` contiguous elements, vectorised when the ISA has lanes.
AstNode VecLoop(std::string var, int64_t extent, const Device& d, bool contiguous = true) {
  int lanes = IsaLanes(d.isa);
  if (contiguous && lanes > 1)
    return AstNode::Loop(std::move(var), extent, LoopAnnot::kVectorize, lanes);
  return AstNode::Loop(std::move(var), extent);
}

AstNode OuterLoop(std::string var, int64_t extent, const Device& d) {
  if (d.threads > 1) return AstNode::Loop(std::move(var), extent, LoopAnnot::kParallel, d.threads);
  return AstNode::Loop(std::move(var), extent);
}

// GEMM C[m,n] += A[m,k] * B[k,n] as tiles i0, j0, k0 and an intra-tile nest in `g.order`.
// `parent` receives the i0 loop. Buffer names are prefixed with `prefix` (im2col: W, col, out).
void AddGemmNest(AstNode& parent, const GemmParams& g, int64_t m, int64_t n, int64_t k,
                 const Device& d, const std::string& a_name, const std::string& b_name,
                 const std::string& c_name) {
  const int64_t mt = std::min<int64_t>(g.mt, m), nt = std::min<int64_t>(g.nt, n),
                kt = std::min<int64_t>(g.kt, k);
  AstNode& i0 = parent.Add(OuterLoop("i0", CeilDiv(m, mt), d));
  AstNode& j0 = i0.Add(AstNode::Loop("j0", CeilDiv(n, nt)));
  AstNode& k0 = j0.Add(AstNode::Loop("k0", CeilDiv(k, kt)));
  const int64_t fa = m * k, fb = k * n, fc = m * n;
  const int64_t ta = mt * kt, tb = kt * nt, tc = mt * nt;
  LeafStmt fma{c_name + "[i,j] += " + a_name + "[i,k]*" + b_name + "[k,j]", {}, {}};
  fma.ops.fma = 1;
  const LoopAnnot un = g.unroll > 1 ? LoopAnnot::kUnroll : LoopAnnot::kNone;
  switch (g.order) {
    case LoopOrder::kIKJ: {
      AstNode& i = k0.Add(AstNode::Loop("i", mt));
      AstNode& kk = i.Add(AstNode::Loop("k", kt, un, g.unroll));
      AstNode& j = kk.Add(VecLoop("j", nt, d));
      fma.accesses = {Acc(a_name, false, 0, fa, ta), Acc(b_name, false, 1, fb, tb),
                      Acc(c_name, false, 1, fc, tc), Acc(c_name, true, 1, fc, tc)};
      j.Add(AstNode::Leaf(fma));
      break;
    }
    case LoopOrder::kIJK: {
      AstNode& i = k0.Add(AstNode::Loop("i", mt));
      AstNode& j = i.Add(AstNode::Loop("j", nt));
      AstNode& kk = j.Add(AstNode::Loop("k", kt, un, g.unroll));
      fma.name = "acc += " + a_name + "[i,k]*" + b_name + "[k,j]";
      fma.accesses = {Acc(a_name, false, 1, fa, ta), Acc(b_name, false, n, fb, tb)};
      kk.Add(AstNode::Leaf(fma));
      LeafStmt store{c_name + "[i,j] += acc", {}, {}};
      store.ops.add = g.unroll;  // the partial sums
      store.accesses = {Acc(c_name, false, 0, fc, tc), Acc(c_name, true, 0, fc, tc)};
      j.Add(AstNode::Leaf(store));
      break;
    }
    case LoopOrder::kJKI: {
      AstNode& j = k0.Add(AstNode::Loop("j", nt));
      AstNode& kk = j.Add(AstNode::Loop("k", kt, un, g.unroll));
      AstNode& i = kk.Add(AstNode::Loop("i", mt));
      fma.accesses = {Acc(a_name, false, k, fa, ta), Acc(b_name, false, 0, fb, tb),
                      Acc(c_name, false, n, fc, tc), Acc(c_name, true, n, fc, tc)};
      i.Add(AstNode::Leaf(fma));
      break;
    }
  }
}

void BuildConvDirect(AstNode& root, const ConvParams& c, const Device& d) {
  const int64_t oh = c.OutH(), ow = c.OutW(), hp = c.h + 2 * c.pad, wp = c.w + 2 * c.pad;
  const int64_t tco = std::min<int64_t>(c.tile_co, c.cout), tow = std::min<int64_t>(c.tile_ow, ow);
  AstNode& co0 = root.Add(OuterLoop("co0", CeilDiv(c.cout, tco), d));
  AstNode& b = co0.Add(AstNode::Loop("b", c.batch));
  AstNode& y = b.Add(AstNode::Loop("oh", oh));
  AstNode& x0 = y.Add(AstNode::Loop("ow0", CeilDiv(ow, tow)));
  AstNode& co = x0.Add(AstNode::Loop("co", tco));
  AstNode& ci = co.Add(AstNode::Loop("ci", c.cin));
  AstNode& r = ci.Add(AstNode::Loop("r", c.r));
  AstNode& s = r.Add(AstNode::Loop("s", c.s));
  AstNode& x = s.Add(VecLoop("ow", tow, d, c.stride == 1));
  LeafStmt leaf{"out[b,co,oh,ow] += in[b,ci,oh*st+r,ow*st+s]*w[co,ci,r,s]", {}, {}};
  leaf.ops.fma = 1;
  const int64_t fin = c.batch * c.cin * hp * wp, fw = c.cout * c.cin * c.r * c.s,
                fout = c.batch * c.cout * oh * ow;
  const int64_t tin = c.cin * c.r * (tow * c.stride + c.s), tw = tco * c.cin * c.r * c.s,
                tout = tco * tow;
  leaf.accesses = {Acc("in", false, c.stride, fin, tin), Acc("w", false, 0, fw, tw),
                   Acc("out", false, 1, fout, tout), Acc("out", true, 1, fout, tout)};
  x.Add(AstNode::Leaf(leaf));
}

void BuildConvIm2col(AstNode& root, const ConvParams& c, const Device& d) {
  const int64_t oh = c.OutH(), ow = c.OutW(), hp = c.h + 2 * c.pad, wp = c.w + 2 * c.pad;
  const int64_t crs = c.cin * c.r * c.s;
  AstNode& b = root.Add(AstNode::Loop("b", c.batch));
  AstNode& row = b.Add(OuterLoop("crs", crs, d));
  AstNode& y = row.Add(AstNode::Loop("oh", oh));
  AstNode& x = y.Add(VecLoop("ow", ow, d, c.stride == 1));
  LeafStmt copy{"col[crs,oh*ow] = in[b,ci,oh*st+r,ow*st+s]", {}, {}};
  copy.accesses = {Acc("in", false, c.stride, c.batch * c.cin * hp * wp, oh * ow * c.stride),
                   Acc("col", true, 1, crs * oh * ow, oh * ow)};
  x.Add(AstNode::Leaf(copy));
  AddGemmNest(b, c.gemm, c.cout, oh * ow, crs, d, "w", "col", "out");
}

void BuildElementwise(AstNode& root, const EltParams& e, const Device& d) {
  AstNode* parent = &root;
  int64_t n = e.size;
  if (d.threads > 1) {
    parent = &root.Add(AstNode::Loop("t", d.threads, LoopAnnot::kParallel, d.threads));
    n = CeilDiv(n, d.threads);
  }
  AstNode& i = parent->Add(VecLoop("i", n, d));
  LeafStmt leaf{std::string("y[i] = ") + std::string(EltOpName(e.op)) + "(x[i]...)", {}, {}};
  const int64_t f = e.size;
  leaf.accesses = {Acc("x", false, 1, f, n)};
  switch (e.op) {
    case EltOp::kAdd:
      leaf.ops.add = 1;
      leaf.accesses.push_back(Acc("x2", false, 1, f, n));
      break;
    case EltOp::kMul:
      leaf.ops.mul = 1;
      leaf.accesses.push_back(Acc("x2", false, 1, f, n));
      break;
    case EltOp::kRelu:
      leaf.ops.cmp = 1;
      break;
    case EltOp::kGelu:
      leaf.ops.mul = 5;
      leaf.ops.add = 3;
      leaf.ops.div = 1;
      leaf.ops.transcendental = 1;
      break;
  }
  leaf.accesses.push_back(Acc("y", true, 1, f, n));
  i.Add(AstNode::Leaf(leaf));
}

void BuildReduction(AstNode& root, const ReduceParams& p, const Device& d) {
  AstNode& r = root.Add(OuterLoop("r", p.rows, d));
  const int64_t fx = p.rows * p.cols, cols = p.cols;
  auto row_pass = [&](std::string name, OpCounts ops, bool writes_row) {
    AstNode& c = r.Add(VecLoop("c", cols, d));
    LeafStmt leaf{std::move(name), ops, {Acc("x", false, 1, fx, cols)}};
    if (writes_row) leaf.accesses.push_back(Acc("y", true, 1, fx, cols));
    c.Add(AstNode::Leaf(leaf));
  };
  OpCounts one_add, one_cmp;
  one_add.add = 1;
  one_cmp.cmp = 1;
  if (p.op == ReduceOp::kSum || p.op == ReduceOp::kMax) {
    row_pass(p.op == ReduceOp::kSum ? "acc += x[r,c]" : "acc = max(acc, x[r,c])",
             p.op == ReduceOp::kSum ? one_add : one_cmp, false);
    LeafStmt store{"y[r] = acc", {}, {Acc("y", true, 0, p.rows, 1)}};
    store.ops.add = 15;  // folding the 16 partial accumulators
    r.Add(AstNode::Leaf(store));
    return;
  }
  row_pass("m = max(m, x[r,c])", one_cmp, false);
  OpCounts e;
  e.add = 8;
  e.mul = 6;
  e.transcendental = 1;
  row_pass("y[r,c] = exp(x[r,c]-m); s += y[r,c]", e, true);
  OpCounts scale;
  scale.mul = 1;
  AstNode& c = r.Add(VecLoop("c", cols, d));
  c.Add(AstNode::Leaf(LeafStmt{
      "y[r,c] *= 1/s", scale, {Acc("y", false, 1, fx, cols), Acc("y", true, 1, fx, cols)}}));
}

}  // namespace

AstNode AstNode::Loop(std::string var, int64_t extent, LoopAnnot annot, int factor) {
  AstNode n;
  n.var = std::move(var);
  n.extent = std::max<int64_t>(extent, 1);
  n.annot = annot;
  n.annot_factor = factor;
  return n;
}

AstNode AstNode::Leaf(LeafStmt leaf) {
  AstNode n;
  n.is_leaf = true;
  n.leaf = std::move(leaf);
  return n;
}

AstNode& AstNode::Add(AstNode child) {
  children.push_back(std::move(child));
  return children.back();
}

std::vector<LeafContext> Ast::Leaves() const {
  std::vector<LeafContext> out;
  std::vector<const AstNode*> stack;
  int index = 0;
  std::function<void(const AstNode&)> visit = [&](const AstNode& n) {
    int my_index = index++;
    if (n.is_leaf) {
      out.push_back(LeafContext{&n.leaf, my_index, stack});
      return;
    }
    bool is_root = &n == &root;
    if (!is_root) stack.push_back(&n);
    for (const AstNode& c : n.children) visit(c);
    if (!is_root) stack.pop_back();
  };
  visit(root);
  return out;
}

int Ast::NumNodes() const {
  std::function<int(const AstNode&)> count = [&](const AstNode& n) {
    int c = 1;
    for (const AstNode& ch : n.children) c += count(ch);
    return c;
  };
  return count(root);
}

std::string Ast::ToString() const {
  std::ostringstream os;
  std::function<void(const AstNode&, int)> dump = [&](const AstNode& n, int depth) {
    os << std::string(2 * depth, ' ');
    if (n.is_leaf) {
      os << n.leaf.name << "\n";
      return;
    }
    os << "for " << n.var << " in " << n.extent;
    static const char* kAnnot[] = {"", " unroll", " vectorize", " parallel"};
    if (n.annot != LoopAnnot::kNone)
      os << kAnnot[static_cast<int>(n.annot)] << "(" << n.annot_factor << ")";
    os << "\n";
    for (const AstNode& c : n.children) dump(c, depth + 1);
  };
  dump(root, 0);
  return os.str();
}

Ast BuildAst(const KernelSpec& spec, const Device& device) {
  Ast ast;
  ast.root = AstNode::Loop("seq", 1);
  switch (spec.kind) {
    case KernelKind::kGemm:
      AddGemmNest(ast.root, spec.gemm, spec.gemm.m, spec.gemm.n, spec.gemm.k, device, "A", "B",
                  "C");
      break;
    case KernelKind::kConvDirect:
      BuildConvDirect(ast.root, spec.conv, device);
      break;
    case KernelKind::kConvIm2col:
      BuildConvIm2col(ast.root, spec.conv, device);
      break;
    case KernelKind::kElementwise:
      BuildElementwise(ast.root, spec.elt, device);
      break;
    case KernelKind::kReduction:
      BuildReduction(ast.root, spec.reduce, device);
      break;
  }
  return ast;
}

}  // namespace loom::trace::costmodel
