// In-memory Chakra execution trace (ET) and its file codec: what loom writes for ASTRA-sim and
// Chakra's tools, and reads back for round-trip tests.
//
// A ChakraTrace is one rank's graph: a GlobalMetadata (version + attributes) and Nodes with ids,
// a type, control/data dependencies, start time and duration in µs and typed attributes. The
// file is Chakra's layout (protolib encodeMessage): varint32 byte length, then the serialized
// message; GlobalMetadata first, then one message per Node. The protobuf schema is loom's own,
// wire-compatible with Chakra's et_def.proto for the fields used (chakra_et.proto); protobuf
// types stay inside chakra_trace.cc.
//
// Thread-safety: plain value types and reentrant functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "loom/base/status.h"

namespace loom::trace::chakra {

// Chakra NodeType (values are Chakra's wire numbers).
enum class NodeType : int {
  kInvalid = 0,
  kMetadata = 1,
  kMemLoad = 2,
  kMemStore = 3,
  kComp = 4,
  kCommSend = 5,
  kCommRecv = 6,
  kCommColl = 7,
};
std::string_view NodeTypeName(NodeType type);  // "COMP_NODE", ...

// Chakra CollectiveCommType (values are Chakra's wire numbers; attribute "comm_type").
enum class CommType : int64_t {
  kAllReduce = 0,
  kReduce = 1,
  kAllGather = 2,
  kGather = 3,
  kScatter = 4,
  kBroadcast = 5,
  kAllToAll = 6,
  kReduceScatter = 7,
  kReduceScatterBlock = 8,
  kBarrier = 9,
};

// One typed attribute. The variant alternative picks the Chakra oneof field: bool -> bool_val,
// int32_t -> int32_val, int64_t -> int64_val, uint64_t -> uint64_val, double -> double_val,
// std::string -> string_val. ASTRA-sim reads is_cpu_op as bool, comm_type/comm_size as int64 and
// comm_src/comm_dst/comm_tag as int32: use those alternatives for those names.
using AttrValue = std::variant<bool, int32_t, int64_t, uint64_t, double, std::string>;
struct Attr {
  std::string name;
  AttrValue value;
  friend bool operator==(const Attr&, const Attr&) = default;
};

// Chakra IOInfo: free-form tensor description strings (empty when unknown).
struct IOInfo {
  std::string values;
  std::string shapes;
  std::string types;
  friend bool operator==(const IOInfo&, const IOInfo&) = default;
};

struct Node {
  uint64_t id = 0;
  std::string name;
  NodeType type = NodeType::kInvalid;
  std::vector<uint64_t> ctrl_deps;  // ids of nodes that must finish first (execution order)
  std::vector<uint64_t> data_deps;  // ids of nodes whose outputs this node consumes
  uint64_t start_time_micros = 0;
  uint64_t duration_micros = 0;
  IOInfo inputs;
  IOInfo outputs;
  std::vector<Attr> attrs;

  // The attribute named `name`, or nullptr.
  const Attr* FindAttr(std::string_view name) const;
  friend bool operator==(const Node&, const Node&) = default;
};

struct ChakraTrace {
  std::string version = "0.0.4";  // GlobalMetadata.version (Chakra's current schema version)
  std::vector<Attr> metadata_attrs;
  std::vector<Node> nodes;
  friend bool operator==(const ChakraTrace&, const ChakraTrace&) = default;
};

// The file bytes: varint32 length + GlobalMetadata, then varint32 length + Node for each node.
// Errors (kInvalidArgument) only for a message over 2 GiB.
Result<std::string> EncodeChakraTrace(const ChakraTrace& trace);
// Parses file bytes; `source` names the file in errors. kDataLoss names the message index and
// byte offset of a truncated length, a truncated message or a message that does not parse;
// kInvalidArgument for an empty input (no GlobalMetadata).
Result<ChakraTrace> DecodeChakraTrace(std::string_view bytes, std::string_view source);

// Encode + atomic write (temporary file renamed into place); errors name the path.
Status WriteChakraTrace(const ChakraTrace& trace, const std::string& path);
// Reads a whole .et file (loom's or any Chakra writer's; unknown fields are ignored).
Result<ChakraTrace> ReadChakraTrace(const std::string& path);

// Checks that node ids are unique, that every dependency names a node of the trace and that the
// dependency graph (ctrl + data) has no cycle. The error names the offending node(s).
Status ValidateChakraGraph(const ChakraTrace& trace);

}  // namespace loom::trace::chakra
