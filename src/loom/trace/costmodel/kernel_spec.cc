#include "loom/trace/costmodel/kernel_spec.h"

#include <array>
#include <nlohmann/json.hpp>
#include <sstream>

namespace loom::trace::costmodel {
namespace {

constexpr std::array<std::string_view, 5> kKindNames = {"gemm", "conv_direct", "conv_im2col",
                                                        "elementwise", "reduction"};
constexpr std::array<std::string_view, 3> kOrderNames = {"ikj", "ijk", "jki"};
constexpr std::array<std::string_view, 4> kEltNames = {"add", "mul", "relu", "gelu"};
constexpr std::array<std::string_view, 3> kReduceNames = {"sum", "max", "softmax"};
constexpr std::array<std::string_view, 3> kIsaNames = {"scalar", "avx2", "avx512"};

template <typename E, size_t N>
Result<E> ParseEnum(const std::array<std::string_view, N>& names, std::string_view s,
                    std::string_view what) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == s) return static_cast<E>(i);
  }
  return InvalidArgumentError("costmodel: unknown " + std::string(what) + " '" + std::string(s) +
                              "'");
}

}  // namespace

std::string_view KernelKindName(KernelKind k) { return kKindNames[static_cast<int>(k)]; }
std::string_view LoopOrderName(LoopOrder o) { return kOrderNames[static_cast<int>(o)]; }
std::string_view EltOpName(EltOp o) { return kEltNames[static_cast<int>(o)]; }
std::string_view ReduceOpName(ReduceOp o) { return kReduceNames[static_cast<int>(o)]; }
std::string_view IsaName(Isa isa) { return kIsaNames[static_cast<int>(isa)]; }
int IsaLanes(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return 1;
    case Isa::kAvx2:
      return 8;
    case Isa::kAvx512:
      return 16;
  }
  return 1;
}

std::string Device::Name() const {
  return std::string(IsaName(isa)) + "x" + std::to_string(threads);
}

Result<Device> DeviceFromName(std::string_view name) {
  size_t x = name.rfind('x');
  if (x == std::string_view::npos || x + 1 >= name.size()) {
    return InvalidArgumentError("costmodel: bad device name '" + std::string(name) +
                                "' (want e.g. avx2x1)");
  }
  Device d;
  LOOM_ASSIGN_OR_RETURN(d.isa, (ParseEnum<Isa>(kIsaNames, name.substr(0, x), "isa")));
  d.threads = std::atoi(std::string(name.substr(x + 1)).c_str());
  if (d.threads < 1 || d.threads > 2) {
    return InvalidArgumentError("costmodel: device '" + std::string(name) + "' threads not 1/2");
  }
  return d;
}

std::string KernelSpec::ShapeKey() const {
  std::ostringstream os;
  os << KernelKindName(kind) << ":";
  switch (kind) {
    case KernelKind::kGemm:
      os << "m=" << gemm.m << ",n=" << gemm.n << ",k=" << gemm.k;
      break;
    case KernelKind::kConvDirect:
    case KernelKind::kConvIm2col:
      os << "b=" << conv.batch << ",c=" << conv.cin << ",h=" << conv.h << ",w=" << conv.w
         << ",k=" << conv.cout << ",r=" << conv.r << ",s=" << conv.s << ",st=" << conv.stride
         << ",p=" << conv.pad;
      break;
    case KernelKind::kElementwise:
      os << EltOpName(elt.op) << ",n=" << elt.size;
      break;
    case KernelKind::kReduction:
      os << ReduceOpName(reduce.op) << ",r=" << reduce.rows << ",c=" << reduce.cols;
      break;
  }
  return os.str();
}

std::string KernelSpec::InstanceKey() const {
  std::ostringstream os;
  os << ShapeKey();
  const GemmParams* g = nullptr;
  if (kind == KernelKind::kGemm) g = &gemm;
  if (kind == KernelKind::kConvIm2col) g = &conv.gemm;
  if (g != nullptr) {
    os << "|t=" << g->mt << "x" << g->nt << "x" << g->kt << ",o=" << LoopOrderName(g->order)
       << ",u=" << g->unroll;
  }
  if (kind == KernelKind::kConvDirect) os << "|tco=" << conv.tile_co << ",tow=" << conv.tile_ow;
  return os.str();
}

double KernelSpec::Flops() const {
  switch (kind) {
    case KernelKind::kGemm:
      return 2.0 * gemm.m * gemm.n * gemm.k;
    case KernelKind::kConvDirect:
    case KernelKind::kConvIm2col:
      return 2.0 * conv.batch * conv.cout * conv.OutH() * conv.OutW() * conv.cin * conv.r * conv.s;
    case KernelKind::kElementwise: {
      double per = elt.op == EltOp::kGelu ? 14.0 : 1.0;
      return per * elt.size;
    }
    case KernelKind::kReduction: {
      double per = reduce.op == ReduceOp::kSoftmax ? 14.0 : 1.0;
      return per * reduce.rows * reduce.cols;
    }
  }
  return 0;
}

double KernelSpec::CompulsoryBytes() const {
  switch (kind) {
    case KernelKind::kGemm:
      return 4.0 * (gemm.m * gemm.k + gemm.k * gemm.n + 2.0 * gemm.m * gemm.n);
    case KernelKind::kConvDirect:
    case KernelKind::kConvIm2col: {
      double in = 1.0 * conv.batch * conv.cin * (conv.h + 2 * conv.pad) * (conv.w + 2 * conv.pad);
      double wt = 1.0 * conv.cout * conv.cin * conv.r * conv.s;
      double out = 2.0 * conv.batch * conv.cout * conv.OutH() * conv.OutW();
      double col = kind == KernelKind::kConvIm2col
                       ? 2.0 * conv.batch * conv.cin * conv.r * conv.s * conv.OutH() * conv.OutW()
                       : 0.0;
      return 4.0 * (in + wt + out + col);
    }
    case KernelKind::kElementwise: {
      int inputs = (elt.op == EltOp::kAdd || elt.op == EltOp::kMul) ? 2 : 1;
      return 4.0 * (inputs + 1) * elt.size;
    }
    case KernelKind::kReduction: {
      double out = reduce.op == ReduceOp::kSoftmax ? 1.0 * reduce.rows * reduce.cols : reduce.rows;
      return 4.0 * (1.0 * reduce.rows * reduce.cols + out);
    }
  }
  return 0;
}

namespace {
nlohmann::json GemmToJson(const GemmParams& g) {
  return {{"m", g.m},
          {"n", g.n},
          {"k", g.k},
          {"mt", g.mt},
          {"nt", g.nt},
          {"kt", g.kt},
          {"order", LoopOrderName(g.order)},
          {"unroll", g.unroll}};
}
Result<GemmParams> GemmFromJson(const nlohmann::json& j) {
  GemmParams g;
  g.m = j.at("m");
  g.n = j.at("n");
  g.k = j.at("k");
  g.mt = j.at("mt");
  g.nt = j.at("nt");
  g.kt = j.at("kt");
  g.unroll = j.at("unroll");
  LOOM_ASSIGN_OR_RETURN(
      g.order, (ParseEnum<LoopOrder>(kOrderNames, j.at("order").get<std::string>(), "order")));
  return g;
}
}  // namespace

nlohmann::json SpecToJson(const KernelSpec& s) {
  nlohmann::json j = {{"kind", KernelKindName(s.kind)}, {"group", s.shape_group}};
  switch (s.kind) {
    case KernelKind::kGemm:
      j["gemm"] = GemmToJson(s.gemm);
      break;
    case KernelKind::kConvDirect:
    case KernelKind::kConvIm2col: {
      const ConvParams& c = s.conv;
      j["conv"] = {{"batch", c.batch},
                   {"cin", c.cin},
                   {"h", c.h},
                   {"w", c.w},
                   {"cout", c.cout},
                   {"r", c.r},
                   {"s", c.s},
                   {"stride", c.stride},
                   {"pad", c.pad},
                   {"tile_co", c.tile_co},
                   {"tile_ow", c.tile_ow},
                   {"gemm", GemmToJson(c.gemm)}};
      break;
    }
    case KernelKind::kElementwise:
      j["elt"] = {{"op", EltOpName(s.elt.op)}, {"size", s.elt.size}};
      break;
    case KernelKind::kReduction:
      j["reduce"] = {
          {"op", ReduceOpName(s.reduce.op)}, {"rows", s.reduce.rows}, {"cols", s.reduce.cols}};
      break;
  }
  return j;
}

Result<KernelSpec> SpecFromJson(const nlohmann::json& j) {
  try {
    KernelSpec s;
    LOOM_ASSIGN_OR_RETURN(
        s.kind, (ParseEnum<KernelKind>(kKindNames, j.at("kind").get<std::string>(), "kind")));
    s.shape_group = j.value("group", "synthetic");
    switch (s.kind) {
      case KernelKind::kGemm: {
        LOOM_ASSIGN_OR_RETURN(s.gemm, GemmFromJson(j.at("gemm")));
        break;
      }
      case KernelKind::kConvDirect:
      case KernelKind::kConvIm2col: {
        const nlohmann::json& c = j.at("conv");
        ConvParams& p = s.conv;
        p.batch = c.at("batch");
        p.cin = c.at("cin");
        p.h = c.at("h");
        p.w = c.at("w");
        p.cout = c.at("cout");
        p.r = c.at("r");
        p.s = c.at("s");
        p.stride = c.at("stride");
        p.pad = c.at("pad");
        p.tile_co = c.at("tile_co");
        p.tile_ow = c.at("tile_ow");
        LOOM_ASSIGN_OR_RETURN(p.gemm, GemmFromJson(c.at("gemm")));
        break;
      }
      case KernelKind::kElementwise: {
        LOOM_ASSIGN_OR_RETURN(s.elt.op,
                              (ParseEnum<EltOp>(kEltNames, j.at("elt").at("op").get<std::string>(),
                                                "elementwise op")));
        s.elt.size = j.at("elt").at("size");
        break;
      }
      case KernelKind::kReduction: {
        const nlohmann::json& r = j.at("reduce");
        LOOM_ASSIGN_OR_RETURN(
            s.reduce.op,
            (ParseEnum<ReduceOp>(kReduceNames, r.at("op").get<std::string>(), "reduction op")));
        s.reduce.rows = r.at("rows");
        s.reduce.cols = r.at("cols");
        break;
      }
    }
    return s;
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(std::string("costmodel: bad kernel spec JSON: ") + e.what());
  }
}

}  // namespace loom::trace::costmodel
