#include "loom/trace/chakra/chakra_trace.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <limits>
#include <unordered_map>

#include "chakra_et.pb.h"
#include "loom/base/file_util.h"

namespace loom::trace::chakra {
namespace {

namespace pb = ::loom::trace::chakra::proto;

void ToProto(const Attr& a, pb::Attribute* out) {
  out->set_name(a.name);
  struct Visitor {
    pb::Attribute* out;
    void operator()(bool v) const { out->set_bool_val(v); }
    void operator()(int32_t v) const { out->set_int32_val(v); }
    void operator()(int64_t v) const { out->set_int64_val(v); }
    void operator()(uint64_t v) const { out->set_uint64_val(v); }
    void operator()(double v) const { out->set_double_val(v); }
    void operator()(const std::string& v) const { out->set_string_val(v); }
  };
  std::visit(Visitor{out}, a.value);
}

// False for value kinds loom does not model (lists, sint/fixed, bytes): they are skipped.
bool FromProto(const pb::Attribute& a, Attr* out) {
  out->name = a.name();
  switch (a.value_case()) {
    case pb::Attribute::kBoolVal:
      out->value = a.bool_val();
      return true;
    case pb::Attribute::kInt32Val:
      out->value = a.int32_val();
      return true;
    case pb::Attribute::kInt64Val:
      out->value = static_cast<int64_t>(a.int64_val());
      return true;
    case pb::Attribute::kUint64Val:
      out->value = static_cast<uint64_t>(a.uint64_val());
      return true;
    case pb::Attribute::kDoubleVal:
      out->value = a.double_val();
      return true;
    case pb::Attribute::kStringVal:
      out->value = a.string_val();
      return true;
    default:
      return false;
  }
}

void ToProto(const IOInfo& io, pb::IOInfo* out) {
  out->set_values(io.values);
  out->set_shapes(io.shapes);
  out->set_types(io.types);
}

void ToProto(const Node& n, pb::Node* out) {
  out->set_id(n.id);
  out->set_name(n.name);
  out->set_type(static_cast<pb::NodeType>(static_cast<int>(n.type)));
  for (uint64_t d : n.ctrl_deps) out->add_ctrl_deps(d);
  for (uint64_t d : n.data_deps) out->add_data_deps(d);
  out->set_start_time_micros(n.start_time_micros);
  out->set_duration_micros(n.duration_micros);
  if (!(n.inputs == IOInfo{})) ToProto(n.inputs, out->mutable_inputs());
  if (!(n.outputs == IOInfo{})) ToProto(n.outputs, out->mutable_outputs());
  for (const Attr& a : n.attrs) ToProto(a, out->add_attr());
}

Node FromProto(const pb::Node& p) {
  Node n;
  n.id = p.id();
  n.name = p.name();
  n.type = static_cast<NodeType>(static_cast<int>(p.type()));
  n.ctrl_deps.assign(p.ctrl_deps().begin(), p.ctrl_deps().end());
  n.data_deps.assign(p.data_deps().begin(), p.data_deps().end());
  n.start_time_micros = p.start_time_micros();
  n.duration_micros = p.duration_micros();
  n.inputs = {p.inputs().values(), p.inputs().shapes(), p.inputs().types()};
  n.outputs = {p.outputs().values(), p.outputs().shapes(), p.outputs().types()};
  for (const pb::Attribute& a : p.attr()) {
    Attr attr;
    if (FromProto(a, &attr)) n.attrs.push_back(std::move(attr));
  }
  return n;
}

// Appends varint32(size) + message, as Chakra's protolib encodeMessage does.
Status AppendFramed(const google::protobuf::MessageLite& m, std::string_view what,
                    std::string* out) {
  const size_t size = m.ByteSizeLong();
  if (size > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return InvalidArgumentError("chakra encode: " + std::string(what) + " is " +
                                std::to_string(size) + " bytes, over the 2 GiB message limit");
  }
  google::protobuf::io::StringOutputStream zero_copy(out);
  google::protobuf::io::CodedOutputStream coded(&zero_copy);
  coded.WriteVarint32(static_cast<uint32_t>(size));
  m.SerializeWithCachedSizes(&coded);
  return OkStatus();
}

}  // namespace

std::string_view NodeTypeName(NodeType type) {
  switch (type) {
    case NodeType::kInvalid:
      return "INVALID_NODE";
    case NodeType::kMetadata:
      return "METADATA_NODE";
    case NodeType::kMemLoad:
      return "MEM_LOAD_NODE";
    case NodeType::kMemStore:
      return "MEM_STORE_NODE";
    case NodeType::kComp:
      return "COMP_NODE";
    case NodeType::kCommSend:
      return "COMM_SEND_NODE";
    case NodeType::kCommRecv:
      return "COMM_RECV_NODE";
    case NodeType::kCommColl:
      return "COMM_COLL_NODE";
  }
  return "UNKNOWN_NODE";
}

const Attr* Node::FindAttr(std::string_view attr_name) const {
  for (const Attr& a : attrs) {
    if (a.name == attr_name) return &a;
  }
  return nullptr;
}

Result<std::string> EncodeChakraTrace(const ChakraTrace& trace) {
  std::string out;
  pb::GlobalMetadata meta;
  meta.set_version(trace.version);
  for (const Attr& a : trace.metadata_attrs) ToProto(a, meta.add_attr());
  LOOM_RETURN_IF_ERROR(AppendFramed(meta, "GlobalMetadata", &out));
  pb::Node node;
  for (const Node& n : trace.nodes) {
    node.Clear();
    ToProto(n, &node);
    LOOM_RETURN_IF_ERROR(AppendFramed(node, "node " + std::to_string(n.id), &out));
  }
  return out;
}

Result<ChakraTrace> DecodeChakraTrace(std::string_view bytes, std::string_view source) {
  const std::string where = "chakra trace '" + std::string(source) + "'";
  if (bytes.empty()) return InvalidArgumentError(where + ": empty file (no GlobalMetadata)");
  ChakraTrace trace;
  size_t pos = 0;
  pb::Node node;
  for (int64_t index = 0; pos < bytes.size(); ++index) {
    const std::string what =
        index == 0 ? "GlobalMetadata" : "node message " + std::to_string(index);
    // Varint32 length prefix.
    uint64_t size = 0;
    int shift = 0;
    const size_t start = pos;
    while (true) {
      if (pos >= bytes.size()) {
        return DataLossError(where + ": truncated length prefix of " + what + " at byte " +
                             std::to_string(start));
      }
      const uint8_t b = static_cast<uint8_t>(bytes[pos++]);
      size |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) break;
      shift += 7;
      if (shift > 28) {
        return DataLossError(where + ": length prefix of " + what + " at byte " +
                             std::to_string(start) + " is longer than a varint32");
      }
    }
    if (size > bytes.size() - pos) {
      return DataLossError(where + ": " + what + " at byte " + std::to_string(start) + " needs " +
                           std::to_string(size) + " bytes, only " +
                           std::to_string(bytes.size() - pos) + " left (truncated file)");
    }
    const char* data = bytes.data() + pos;
    const int len = static_cast<int>(size);
    pos += size;
    if (index == 0) {
      pb::GlobalMetadata meta;
      if (!meta.ParseFromArray(data, len)) {
        return DataLossError(where + ": GlobalMetadata at byte " + std::to_string(start) +
                             " does not parse");
      }
      trace.version = meta.version();
      for (const pb::Attribute& a : meta.attr()) {
        Attr attr;
        if (FromProto(a, &attr)) trace.metadata_attrs.push_back(std::move(attr));
      }
      continue;
    }
    node.Clear();
    if (!node.ParseFromArray(data, len)) {
      return DataLossError(where + ": " + what + " at byte " + std::to_string(start) +
                           " does not parse");
    }
    trace.nodes.push_back(FromProto(node));
  }
  return trace;
}

Status WriteChakraTrace(const ChakraTrace& trace, const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(std::string bytes, EncodeChakraTrace(trace));
  return WriteFileAtomic(path, bytes).WithContext("chakra export");
}

Result<ChakraTrace> ReadChakraTrace(const std::string& path) {
  Result<std::string> bytes = ReadFileToString(path);
  if (!bytes.ok()) return bytes.status().WithContext("chakra read");
  return DecodeChakraTrace(*bytes, path);
}

Status ValidateChakraGraph(const ChakraTrace& trace) {
  std::unordered_map<uint64_t, size_t> index;
  index.reserve(trace.nodes.size());
  for (size_t i = 0; i < trace.nodes.size(); ++i) {
    const Node& n = trace.nodes[i];
    if (!index.emplace(n.id, i).second) {
      return FailedPreconditionError("chakra graph: node id " + std::to_string(n.id) +
                                     " is used twice ('" + n.name + "')");
    }
  }
  // Kahn's algorithm over edges dep -> node.
  const size_t n = trace.nodes.size();
  std::vector<int64_t> pending(n, 0);
  std::vector<std::vector<size_t>> children(n);
  for (size_t i = 0; i < n; ++i) {
    const Node& node = trace.nodes[i];
    for (const auto* deps : {&node.ctrl_deps, &node.data_deps}) {
      for (uint64_t d : *deps) {
        auto it = index.find(d);
        if (it == index.end()) {
          return FailedPreconditionError("chakra graph: node " + std::to_string(node.id) + " ('" +
                                         node.name + "') depends on missing node " +
                                         std::to_string(d));
        }
        children[it->second].push_back(i);
        ++pending[i];
      }
    }
  }
  std::vector<size_t> ready;
  for (size_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push_back(i);
  }
  size_t done = 0;
  while (!ready.empty()) {
    const size_t i = ready.back();
    ready.pop_back();
    ++done;
    for (size_t c : children[i]) {
      if (--pending[c] == 0) ready.push_back(c);
    }
  }
  if (done == n) return OkStatus();
  // Every unresolved node has an unresolved dependency: walking those back must revisit a node,
  // and the first revisited node lies on a cycle.
  auto unresolved_dep = [&](size_t i) -> int64_t {
    for (const auto* deps : {&trace.nodes[i].ctrl_deps, &trace.nodes[i].data_deps}) {
      for (uint64_t d : *deps) {
        const size_t j = index.at(d);
        if (pending[j] > 0) return static_cast<int64_t>(j);
      }
    }
    return -1;
  };
  size_t at = 0;
  while (pending[at] == 0) ++at;
  std::vector<bool> seen(n, false);
  while (!seen[at]) {
    seen[at] = true;
    const int64_t j = unresolved_dep(at);
    if (j < 0) {
      return InternalError("chakra graph: cycle check lost track of node " +
                           std::to_string(trace.nodes[at].id));
    }
    at = static_cast<size_t>(j);
  }
  return FailedPreconditionError("chakra graph: dependency cycle through node " +
                                 std::to_string(trace.nodes[at].id) + " ('" + trace.nodes[at].name +
                                 "'); " + std::to_string(n - done) + " nodes never become ready");
}

}  // namespace loom::trace::chakra
