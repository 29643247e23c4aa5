#include "loom/compress/codec_spec.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace loom::compress {

std::string CodecSpec::ToString() const {
  switch (kind) {
    case CodecKind::kNone: return "none";
    case CodecKind::kFp16: return "fp16";
    case CodecKind::kBf16: return "bf16";
    case CodecKind::kInt:
      return "int" + std::to_string(bits) + ":g" + std::to_string(group) +
             (stochastic ? ":stochastic" : ":nearest") + (hadamard ? ":hadamard" : "");
    case CodecKind::kSign:
      return std::string("sign") + (group > 0 ? ":g" + std::to_string(group) : "") +
             (l2_scale ? ":l2" : "");
    case CodecKind::kPowerSgd: return "powersgd:r" + std::to_string(rank);
    case CodecKind::kQsgd: return "qsgd:s" + std::to_string(levels) + ":g" + std::to_string(group);
    case CodecKind::kTopK:
    case CodecKind::kRandK: {
      char buf[32];
      std::snprintf(buf, sizeof buf, ":%g", static_cast<double>(fraction));
      return std::string(kind == CodecKind::kTopK ? "topk" : "randk") + buf +
             (unbiased ? ":unbiased" : "");
    }
  }
  return "?";
}

namespace {

std::vector<std::string_view> SplitColons(std::string_view s) {
  std::vector<std::string_view> out;
  size_t at = 0;
  while (true) {
    size_t k = s.find(':', at);
    out.push_back(s.substr(at, k == std::string_view::npos ? std::string_view::npos : k - at));
    if (k == std::string_view::npos) return out;
    at = k + 1;
  }
}

Result<int> ParseInt(std::string_view s, const std::string& what) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) {
    return InvalidArgumentError(what + ": '" + std::string(s) + "' is not a number");
  }
  return v;
}

Result<CodecSpec> ParseSign(const std::vector<std::string_view>& parts, const std::string& where) {
  CodecSpec spec;
  spec.kind = CodecKind::kSign;
  spec.bits = 1;
  for (size_t i = 1; i < parts.size(); ++i) {
    if (parts[i].starts_with("g")) {
      LOOM_ASSIGN_OR_RETURN(spec.group, ParseInt(parts[i].substr(1), where + ": group"));
      if (spec.group < 32 || spec.group % 32 != 0) {
        return InvalidArgumentError(where + ": group " + std::to_string(spec.group) +
                                    " must be a multiple of 32");
      }
    } else if (parts[i] == "l2") {
      spec.l2_scale = true;
    } else {
      return InvalidArgumentError(where + ": unknown option '" + std::string(parts[i]) +
                                  "' (known: g<size>, l2)");
    }
  }
  return spec;
}

Result<CodecSpec> ParseSparse(const std::vector<std::string_view>& parts, bool top,
                              const std::string& where) {
  CodecSpec spec;
  spec.kind = top ? CodecKind::kTopK : CodecKind::kRandK;
  if (parts.size() < 2) {
    return InvalidArgumentError(where + ": give the share of elements to send, e.g. " +
                                std::string(parts[0]) + ":0.01");
  }
  const std::string text(parts[1]);
  char* end = nullptr;
  const double f = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !(f > 0 && f <= 1)) {
    return InvalidArgumentError(where + ": fraction '" + text + "' must be a number in (0, 1]");
  }
  spec.fraction = static_cast<float>(f);
  spec.bits = 32;
  for (size_t i = 2; i < parts.size(); ++i) {
    if (!top && parts[i] == "unbiased") {
      spec.unbiased = true;
    } else {
      return InvalidArgumentError(where + ": unknown option '" + std::string(parts[i]) + "'" +
                                  (top ? "" : " (known: unbiased)"));
    }
  }
  return spec;
}

Result<CodecSpec> ParseQsgd(const std::vector<std::string_view>& parts, const std::string& where) {
  CodecSpec spec;
  spec.kind = CodecKind::kQsgd;
  spec.group = kDefaultQsgdGroup;
  if (parts.size() < 2 || !parts[1].starts_with("s")) {
    return InvalidArgumentError(where + ": give the levels, e.g. qsgd:s16 or qsgd:s4:g256");
  }
  LOOM_ASSIGN_OR_RETURN(spec.levels, ParseInt(parts[1].substr(1), where + ": levels"));
  if (spec.levels < 1 || spec.levels > kMaxQsgdLevels) {
    return InvalidArgumentError(where + ": " + std::to_string(spec.levels) +
                                " levels must be in [1, " + std::to_string(kMaxQsgdLevels) + "]");
  }
  spec.bits = QsgdBits(spec.levels);
  for (size_t i = 2; i < parts.size(); ++i) {
    if (!parts[i].starts_with("g")) {
      return InvalidArgumentError(where + ": unknown option '" + std::string(parts[i]) +
                                  "' (known: g<size>)");
    }
    LOOM_ASSIGN_OR_RETURN(spec.group, ParseInt(parts[i].substr(1), where + ": group"));
  }
  if (spec.group < 32 || spec.group > kMaxQsgdGroup || spec.group % 32 != 0) {
    return InvalidArgumentError(where + ": group " + std::to_string(spec.group) +
                                " must be a multiple of 32 in [32, " +
                                std::to_string(kMaxQsgdGroup) + "]");
  }
  return spec;
}

}  // namespace

int QsgdBits(int levels) {
  int bits = 1;
  while ((1 << bits) < 2 * levels + 1) ++bits;
  return bits;
}

Result<CodecSpec> ParseCodecSpec(std::string_view text) {
  const std::string where = "codec spec '" + std::string(text) + "'";
  const std::vector<std::string_view> parts = SplitColons(text);
  CodecSpec spec;
  const std::string_view head = parts[0];
  if (head == "none" || head == "fp16" || head == "bf16") {
    if (parts.size() > 1) return InvalidArgumentError(where + ": " + std::string(head) + " takes no options");
    spec.kind = head == "none" ? CodecKind::kNone : head == "fp16" ? CodecKind::kFp16 : CodecKind::kBf16;
    spec.bits = head == "none" ? 32 : 16;
    return spec;
  }
  if (head == "sign") return ParseSign(parts, where);
  if (head == "powersgd") {
    if (parts.size() != 2 || !parts[1].starts_with("r")) {
      return InvalidArgumentError(where + ": give the rank, e.g. powersgd:r4");
    }
    spec.kind = CodecKind::kPowerSgd;
    LOOM_ASSIGN_OR_RETURN(spec.rank, ParseInt(parts[1].substr(1), where + ": rank"));
    if (spec.rank < 1 || spec.rank > 64) {
      return InvalidArgumentError(where + ": rank " + std::to_string(spec.rank) +
                                  " must be in [1, 64]");
    }
    return spec;
  }
  if (head == "topk" || head == "randk") return ParseSparse(parts, head == "topk", where);
  if (head == "qsgd") return ParseQsgd(parts, where);
  if (!head.starts_with("int")) {
    return InvalidArgumentError(where + ": unknown codec '" + std::string(head) +
                                "' (known: none, fp16, bf16, int8, int4, int2, sign, topk, randk, qsgd, powersgd)");
  }
  spec.kind = CodecKind::kInt;
  LOOM_ASSIGN_OR_RETURN(spec.bits, ParseInt(head.substr(3), where + ": bits"));
  if (spec.bits != 8 && spec.bits != 4 && spec.bits != 2) {
    return InvalidArgumentError(where + ": " + std::to_string(spec.bits) +
                                "-bit integers are not supported (use 8, 4 or 2)");
  }
  spec.group = 128;
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string_view p = parts[i];
    if (p.starts_with("g")) {
      LOOM_ASSIGN_OR_RETURN(spec.group, ParseInt(p.substr(1), where + ": group"));
    } else if (p == "stochastic") {
      spec.stochastic = true;
    } else if (p == "nearest") {
      spec.stochastic = false;
    } else if (p == "hadamard") {
      spec.hadamard = true;
    } else {
      return InvalidArgumentError(where + ": unknown option '" + std::string(p) +
                                  "' (known: g<size>, stochastic, nearest, hadamard)");
    }
  }
  if (spec.group < 32 || spec.group > 4096 || spec.group % 32 != 0) {
    return InvalidArgumentError(where + ": group " + std::to_string(spec.group) +
                                " must be a multiple of 32 in [32, 4096]");
  }
  return spec;
}

}  // namespace loom::compress
