#include "loom/trace/ingest/internal/json_event_stream.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>

#include "loom/base/file_util.h"

namespace loom::trace::ingest::internal {
namespace {

// Buffered reader that counts the bytes handed to the parser (for error offsets).
class ByteSource {
 public:
  explicit ByteSource(std::FILE* f) : f_(f), buf_(1 << 20) {}
  bool AtEnd() {
    if (pos_ < len_) return false;
    Refill();
    return pos_ >= len_;
  }
  char Current() {
    if (pos_ >= len_) Refill();
    return pos_ < len_ ? buf_[pos_] : '\0';
  }
  void Advance() {
    ++pos_;
    ++offset_;
  }
  int64_t offset() const { return offset_; }
  bool read_error() const { return read_error_; }

 private:
  void Refill() {
    if (eof_) return;
    len_ = std::fread(buf_.data(), 1, buf_.size(), f_);
    pos_ = 0;
    if (len_ == 0) {
      eof_ = true;
      read_error_ = std::ferror(f_) != 0;
    }
  }
  std::FILE* f_;
  std::vector<char> buf_;
  size_t pos_ = 0, len_ = 0;
  int64_t offset_ = 0;
  bool eof_ = false, read_error_ = false;
};

// Single-pass iterator over a ByteSource; a null source is the end iterator.
struct ByteIterator {
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = char;
  ByteSource* src = nullptr;
  char operator*() const { return src->Current(); }
  ByteIterator& operator++() {
    src->Advance();
    return *this;
  }
  bool operator==(const ByteIterator& o) const {
    const bool a = src == nullptr || src->AtEnd();
    const bool b = o.src == nullptr || o.src->AtEnd();
    return a == b;
  }
  bool operator!=(const ByteIterator& o) const { return !(*this == o); }
};

Scalar MakeScalar(Scalar::Type t) {
  Scalar s;
  s.type = t;
  return s;
}

// Where the parser is. The stack holds one context per open object/array.
enum class Ctx : uint8_t {
  kTopObject,
  kTopArray,
  kEventsArray,
  kEvent,
  kArgs,
  kDistInfo,
  kLoomInfo,
  kInputDims,
  kInputDimsInner,
  kInputType,
  kSkip,
};

class Handler {
 public:
  Handler(ByteSource* src, const RawEventSink& sink, TopLevel* top)
      : src_(src), sink_(sink), top_(top) {}

  bool null() { return OnScalar(MakeScalar(Scalar::Type::kNull)); }
  bool boolean(bool v) {
    Scalar s = MakeScalar(Scalar::Type::kBool);
    s.i = v ? 1 : 0;
    return OnScalar(s);
  }
  bool number_integer(int64_t v) {
    Scalar s = MakeScalar(Scalar::Type::kInt);
    s.i = v;
    s.d = static_cast<double>(v);
    return OnScalar(s);
  }
  bool number_unsigned(uint64_t v) {
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      Scalar s = MakeScalar(Scalar::Type::kFloat);
      s.d = static_cast<double>(v);
      s.text = std::to_string(v);
      return OnScalar(s);
    }
    return number_integer(static_cast<int64_t>(v));
  }
  bool number_float(double v, const std::string& raw) {
    Scalar s = MakeScalar(Scalar::Type::kFloat);
    s.d = v;
    s.text = raw;
    return OnScalar(s);
  }
  bool string(std::string& v) {
    Scalar s = MakeScalar(Scalar::Type::kString);
    s.text = std::move(v);
    return OnScalar(s);
  }
  bool binary(std::vector<uint8_t>&) { return OnScalar(MakeScalar(Scalar::Type::kNull)); }

  bool key(std::string& k) {
    key_ = std::move(k);
    if (!stack_.empty() && stack_.back() == Ctx::kTopObject && top_->keys.size() < 8) {
      top_->keys.push_back(key_);
    }
    return true;
  }

  bool start_object(size_t) {
    if (stack_.empty()) {
      top_->is_object = true;
      stack_.push_back(Ctx::kTopObject);
      return true;
    }
    switch (stack_.back()) {
      case Ctx::kTopArray:
      case Ctx::kEventsArray:
        BeginEvent();
        stack_.push_back(Ctx::kEvent);
        return true;
      case Ctx::kTopObject:
        if (key_ == "distributedInfo") return Push(Ctx::kDistInfo);
        if (key_ == "loom") {
          top_->has_loom = true;
          return Push(Ctx::kLoomInfo);
        }
        return Push(Ctx::kSkip);
      case Ctx::kEvent:
        return Push(key_ == "args" ? Ctx::kArgs : Ctx::kSkip);
      default:
        return Push(Ctx::kSkip);
    }
  }
  bool end_object() {
    const Ctx c = stack_.back();
    stack_.pop_back();
    if (c == Ctx::kEvent) {
      Status s = sink_(ev_, *top_);
      ++event_index_;
      if (!s.ok()) {
        status_ = std::move(s);
        return false;
      }
    }
    return true;
  }
  bool start_array(size_t) {
    if (stack_.empty()) {
      top_->is_array = true;
      return Push(Ctx::kTopArray);
    }
    const Ctx c = stack_.back();
    if (c == Ctx::kTopObject && key_ == "traceEvents") {
      top_->has_trace_events = true;
      return Push(Ctx::kEventsArray);
    }
    if (c == Ctx::kArgs && key_ == "Input Dims") {
      ev_.input_dims_product = -1;
      dims_seen_inner_ = false;
      return Push(Ctx::kInputDims);
    }
    if (c == Ctx::kArgs && key_ == "Input type") return Push(Ctx::kInputType);
    if (c == Ctx::kInputDims && !dims_seen_inner_) {
      dims_seen_inner_ = true;
      ev_.input_dims_product = 1;
      return Push(Ctx::kInputDimsInner);
    }
    return Push(Ctx::kSkip);
  }
  bool end_array() {
    stack_.pop_back();
    return true;
  }
  bool parse_error(size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& ex) {
    parse_error_ = true;
    parse_message_ = ex.what();
    parse_position_ = static_cast<int64_t>(position);
    return false;
  }

  int64_t event_index() const { return event_index_; }
  bool in_event() const {
    for (Ctx c : stack_) {
      if (c == Ctx::kEvent) return true;
    }
    return false;
  }
  bool parse_error_seen() const { return parse_error_; }
  const std::string& parse_message() const { return parse_message_; }
  Status& status() { return status_; }

 private:
  bool Push(Ctx c) {
    stack_.push_back(c);
    return true;
  }
  void BeginEvent() {
    ev_.Reset();
    ev_.index = event_index_;
    ev_.byte_offset = src_->offset() - 1;
  }
  bool OnScalar(Scalar s) {
    if (stack_.empty()) return true;
    switch (stack_.back()) {
      case Ctx::kEvent:
        EventField(std::move(s));
        break;
      case Ctx::kArgs: {
        if (ev_.args_used == ev_.args.size()) ev_.args.emplace_back();
        RawArg& a = ev_.args[ev_.args_used++];
        a.key = key_;
        a.value = std::move(s);
        break;
      }
      case Ctx::kInputDimsInner:
        if (s.type == Scalar::Type::kInt) ev_.input_dims_product *= s.i;
        break;
      case Ctx::kInputType:
        if (s.type == Scalar::Type::kString && ev_.input_type.empty()) ev_.input_type = s.text;
        break;
      case Ctx::kTopObject:
        if (key_ == "baseTimeNanoseconds")
          top_->base_time_ns = std::move(s);
        else if (key_ == "traceName")
          top_->trace_name = std::move(s);
        else if (key_ == "displayTimeUnit")
          top_->display_time_unit = std::move(s);
        else if (key_ == "time_unit" || key_ == "timeUnit")
          top_->time_unit = std::move(s);
        break;
      case Ctx::kDistInfo:
        if (key_ == "rank")
          top_->dist_rank = std::move(s);
        else if (key_ == "world_size")
          top_->dist_world_size = std::move(s);
        else if (key_ == "backend")
          top_->dist_backend = std::move(s);
        break;
      case Ctx::kLoomInfo:
        if (key_ == "rank")
          top_->loom_rank = std::move(s);
        else if (key_ == "world_size")
          top_->loom_world_size = std::move(s);
        else if (key_ == "run_id")
          top_->loom_run_id = std::move(s);
        else if (key_ == "clock_offset_ns")
          top_->loom_clock_offset_ns = std::move(s);
        else if (key_ == "clock_rounds")
          top_->loom_clock_rounds = std::move(s);
        else if (key_ == "rtt_ns")
          top_->loom_rtt_ns = std::move(s);
        else if (key_ == "time_unit")
          top_->time_unit = std::move(s);
        break;
      default:
        break;
    }
    return true;
  }
  void EventField(Scalar s) {
    const std::string& k = key_;
    if (k == "name")
      ev_.name = std::move(s.text);
    else if (k == "ph")
      ev_.ph = std::move(s.text);
    else if (k == "cat")
      ev_.cat = std::move(s.text);
    else if (k == "bp")
      ev_.bp = std::move(s.text);
    else if (k == "ts")
      ev_.ts = std::move(s);
    else if (k == "dur")
      ev_.dur = std::move(s);
    else if (k == "pid")
      ev_.pid = std::move(s);
    else if (k == "tid")
      ev_.tid = std::move(s);
    else if (k == "id")
      ev_.id = std::move(s);
  }

  ByteSource* src_;
  const RawEventSink& sink_;
  TopLevel* top_;
  std::vector<Ctx> stack_;
  std::string key_;
  RawEvent ev_;
  int64_t event_index_ = 0;
  bool dims_seen_inner_ = false;
  bool parse_error_ = false;
  std::string parse_message_;
  int64_t parse_position_ = 0;
  Status status_;
};

}  // namespace

std::string Scalar::AsText() const {
  switch (type) {
    case Type::kInt:
    case Type::kBool:
      return std::to_string(i);
    case Type::kFloat:
    case Type::kString:
      return text;
    default:
      return "";
  }
}

const Scalar* RawEvent::Arg(std::string_view key) const {
  for (size_t i = 0; i < args_used; ++i) {
    if (args[i].key == key) return &args[i].value;
  }
  return nullptr;
}

void RawEvent::Reset() {
  name.clear();
  ph.clear();
  cat.clear();
  bp.clear();
  ts.Reset();
  dur.Reset();
  pid.Reset();
  tid.Reset();
  id.Reset();
  args_used = 0;
  input_dims_product = -1;
  input_type.clear();
}

bool MicrosToNanos(const Scalar& v, int64_t* ns) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max() / 1000;
  if (v.type == Scalar::Type::kInt) {
    if (v.i > kMax || v.i < -kMax) return false;
    *ns = v.i * 1000;
    return true;
  }
  if (v.type != Scalar::Type::kFloat) return false;
  // Exact decimal conversion: "<int>.<frac>" without exponent.
  const std::string& t = v.text;
  if (t.find_first_of("eE") == std::string::npos && !t.empty()) {
    size_t p = 0;
    const bool neg = t[0] == '-';
    if (neg) ++p;
    int64_t whole = 0;
    for (; p < t.size() && t[p] != '.'; ++p) {
      if (t[p] < '0' || t[p] > '9' || whole > kMax / 10) return false;
      whole = whole * 10 + (t[p] - '0');
    }
    if (whole > kMax) return false;
    int64_t frac = 0;
    int digits = 0;
    int round_digit = 0;
    if (p < t.size()) ++p;  // '.'
    for (; p < t.size(); ++p, ++digits) {
      if (t[p] < '0' || t[p] > '9') return false;
      if (digits < 3)
        frac = frac * 10 + (t[p] - '0');
      else if (digits == 3)
        round_digit = t[p] - '0';
    }
    for (int d = digits; d < 3; ++d) frac *= 10;
    int64_t r = whole * 1000 + frac + (round_digit >= 5 ? 1 : 0);
    *ns = neg ? -r : r;
    return true;
  }
  const double x = v.d * 1000.0;
  if (!std::isfinite(x) || std::fabs(x) > 9.2e18) return false;
  *ns = std::llround(x);
  return true;
}

Status StreamJsonEvents(const std::string& path, const RawEventSink& sink, TopLevel* top,
                        const std::function<std::string(const TopLevel&)>& describe_rank) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return ErrnoError("trace ingest: cannot open", path, errno);
  ByteSource src(f);
  Handler handler(&src, sink, top);
  bool ok = false;
  try {
    ok = nlohmann::json::sax_parse(ByteIterator{&src}, ByteIterator{}, &handler);
  } catch (const std::exception& e) {
    std::fclose(f);
    return InternalError("trace ingest: '" + path + "': parser threw: " + e.what());
  }
  const bool read_error = src.read_error();
  std::fclose(f);
  if (ok) return OkStatus();
  if (!handler.status().ok()) return handler.status();
  const std::string where = "'" + path + "' (" + describe_rank(*top) + ")";
  if (read_error) return DataLossError("trace ingest: read error on " + where);
  const int64_t offset = src.offset();
  const std::string last_event = handler.event_index() == 0
                                     ? std::string("no complete event")
                                     : "after event #" + std::to_string(handler.event_index() - 1);
  const std::string in_event =
      handler.in_event() ? ", inside event #" + std::to_string(handler.event_index()) : "";
  if (handler.parse_error_seen() && src.AtEnd()) {
    return DataLossError("trace ingest: " + where +
                         " is truncated: unexpected end of file at byte " + std::to_string(offset) +
                         " (" + last_event + in_event + ")");
  }
  return DataLossError("trace ingest: " + where + ": malformed JSON at byte " +
                       std::to_string(offset) + " (" + last_event + in_event +
                       "): " + handler.parse_message());
}

}  // namespace loom::trace::ingest::internal
