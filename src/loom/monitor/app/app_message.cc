// AppMessage wire encoding: see app_message.h for the format.
#include "loom/monitor/app/app_message.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <vector>

namespace loom::monitor {
namespace {

constexpr std::string_view kVersion = "v1";
constexpr size_t kMaxLineBytes = 1024;
constexpr size_t kMaxNameBytes = 64;

std::string FormatDouble(double v) {
  if (std::isnan(v)) return "nan";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

// Replaces characters that would break the line format (the encoder never fails).
std::string SanitizeName(std::string_view s) {
  std::string out(s.substr(0, kMaxNameBytes));
  for (char& c : out) {
    if (!IsNameChar(c)) c = '_';
  }
  if (out.empty()) out.push_back('_');
  return out;
}

std::vector<std::string_view> SplitSpaces(std::string_view s) {
  std::vector<std::string_view> out;
  // Every separator yields a token, so doubled or trailing spaces show up as empty tokens.
  size_t i = 0;
  while (true) {
    size_t j = s.find(' ', i);
    if (j == std::string_view::npos) {
      out.push_back(s.substr(i));
      return out;
    }
    out.push_back(s.substr(i, j - i));
    i = j + 1;
  }
}

Status FieldError(std::string_view kind, std::string_view field, std::string_view what) {
  return InvalidArgumentError("app message (" + std::string(kind) + "): field '" +
                              std::string(field) + "' " + std::string(what));
}

Result<int64_t> ParseInt(std::string_view kind, std::string_view field, std::string_view v) {
  int64_t out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size() || v.empty()) {
    return FieldError(kind, field, "is not an integer: '" + std::string(v) + "'");
  }
  return out;
}

// Non-negative finite number, or NaN when allow_nan and the text is "nan".
Result<double> ParseSeconds(std::string_view kind, std::string_view field, std::string_view v,
                            bool allow_nan) {
  if (v == "nan") {
    if (allow_nan) return NAN;
    return FieldError(kind, field, "must be a number, got 'nan'");
  }
  std::string s(v);
  char* end = nullptr;
  double out = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size()) {
    return FieldError(kind, field, "is not a number: '" + s + "'");
  }
  if (!std::isfinite(out) || out < 0) {
    return FieldError(kind, field, "must be finite and >= 0, got '" + s + "'");
  }
  return out;
}

Result<std::string> ParseName(std::string_view kind, std::string_view field, std::string_view v) {
  if (v.empty() || v.size() > kMaxNameBytes) {
    return FieldError(kind, field, "must have 1.." + std::to_string(kMaxNameBytes) + " characters");
  }
  for (char c : v) {
    if (!IsNameChar(c)) return FieldError(kind, field, "has a character outside [A-Za-z0-9_.-]");
  }
  return std::string(v);
}

}  // namespace

std::string_view AppMessageKindName(AppMessage::Kind kind) {
  switch (kind) {
    case AppMessage::Kind::kStep:
      return "step";
    case AppMessage::Kind::kCollective:
      return "coll";
    case AppMessage::Kind::kPhase:
      return "phase";
  }
  return "?";
}

std::string EncodeAppMessage(const AppMessage& m) {
  std::string out(kVersion);
  out += ' ';
  out += AppMessageKindName(m.kind);
  out += " rank=" + std::to_string(m.rank) + " ts=" + std::to_string(m.ts_ms);
  switch (m.kind) {
    case AppMessage::Kind::kStep:
      out += " step=" + std::to_string(m.step) + " t=" + FormatDouble(m.step_time_s) +
             " wait=" + FormatDouble(m.data_wait_s);
      if (!std::isnan(m.compute_s)) out += " comp=" + FormatDouble(m.compute_s);
      break;
    case AppMessage::Kind::kCollective:
      out += " op=" + SanitizeName(m.op) + " bytes=" + std::to_string(m.bytes) +
             " seq=" + std::to_string(m.seq) + " dur=" + FormatDouble(m.duration_s);
      break;
    case AppMessage::Kind::kPhase:
      out += " phase=" + SanitizeName(m.phase);
      break;
  }
  return out;
}

Result<AppMessage> ParseAppMessage(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  if (line.size() > kMaxLineBytes) {
    return InvalidArgumentError("app message: longer than " + std::to_string(kMaxLineBytes) +
                                " bytes");
  }
  std::vector<std::string_view> tokens = SplitSpaces(line);
  if (tokens.size() < 2) return InvalidArgumentError("app message: missing version/kind header");
  if (tokens[0] != kVersion) {
    return InvalidArgumentError("app message: field 'version' must be 'v1', got '" +
                                std::string(tokens[0].substr(0, 16)) + "'");
  }
  AppMessage m;
  std::string_view kind = tokens[1];
  std::vector<std::string_view> required, optional;
  if (kind == "step") {
    m.kind = AppMessage::Kind::kStep;
    required = {"rank", "ts", "step", "t", "wait"};
    optional = {"comp"};
  } else if (kind == "coll") {
    m.kind = AppMessage::Kind::kCollective;
    required = {"rank", "ts", "op", "bytes", "seq", "dur"};
  } else if (kind == "phase") {
    m.kind = AppMessage::Kind::kPhase;
    required = {"rank", "ts", "phase"};
  } else {
    return InvalidArgumentError("app message: field 'kind' must be step|coll|phase, got '" +
                                std::string(kind.substr(0, 16)) + "'");
  }
  std::map<std::string_view, std::string_view> fields;
  for (size_t i = 2; i < tokens.size(); ++i) {
    size_t eq = tokens[i].find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return InvalidArgumentError("app message (" + std::string(kind) + "): token '" +
                                  std::string(tokens[i].substr(0, 32)) + "' is not key=value");
    }
    std::string_view key = tokens[i].substr(0, eq);
    bool known = false;
    for (std::string_view r : required) known |= (r == key);
    for (std::string_view r : optional) known |= (r == key);
    if (!known) return FieldError(kind, key.substr(0, 32), "is unknown");
    if (!fields.emplace(key, tokens[i].substr(eq + 1)).second) {
      return FieldError(kind, key, "appears twice");
    }
  }
  for (std::string_view r : required) {
    if (!fields.count(r)) return FieldError(kind, r, "is missing");
  }
  LOOM_ASSIGN_OR_RETURN(int64_t rank, ParseInt(kind, "rank", fields["rank"]));
  if (rank < 0 || rank > (1 << 24)) return FieldError(kind, "rank", "is out of range");
  m.rank = static_cast<int>(rank);
  LOOM_ASSIGN_OR_RETURN(m.ts_ms, ParseInt(kind, "ts", fields["ts"]));
  if (m.ts_ms < 0) return FieldError(kind, "ts", "must be >= 0");
  switch (m.kind) {
    case AppMessage::Kind::kStep: {
      LOOM_ASSIGN_OR_RETURN(m.step, ParseInt(kind, "step", fields["step"]));
      if (m.step < 0) return FieldError(kind, "step", "must be >= 0");
      LOOM_ASSIGN_OR_RETURN(m.step_time_s, ParseSeconds(kind, "t", fields["t"], false));
      LOOM_ASSIGN_OR_RETURN(m.data_wait_s, ParseSeconds(kind, "wait", fields["wait"], true));
      if (fields.count("comp")) {
        LOOM_ASSIGN_OR_RETURN(m.compute_s, ParseSeconds(kind, "comp", fields["comp"], true));
      }
      break;
    }
    case AppMessage::Kind::kCollective: {
      LOOM_ASSIGN_OR_RETURN(m.op, ParseName(kind, "op", fields["op"]));
      LOOM_ASSIGN_OR_RETURN(m.bytes, ParseInt(kind, "bytes", fields["bytes"]));
      if (m.bytes < 0) return FieldError(kind, "bytes", "must be >= 0");
      LOOM_ASSIGN_OR_RETURN(m.seq, ParseInt(kind, "seq", fields["seq"]));
      if (m.seq < 0) return FieldError(kind, "seq", "must be >= 0");
      LOOM_ASSIGN_OR_RETURN(m.duration_s, ParseSeconds(kind, "dur", fields["dur"], false));
      break;
    }
    case AppMessage::Kind::kPhase: {
      LOOM_ASSIGN_OR_RETURN(m.phase, ParseName(kind, "phase", fields["phase"]));
      break;
    }
  }
  return m;
}

}  // namespace loom::monitor
