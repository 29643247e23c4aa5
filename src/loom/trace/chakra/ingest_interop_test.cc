// End to end: the ingest readers' test traces (a real torch 1.13 gloo profile, Kineto and loom's
// own export) -> Chakra ET file -> read back -> same graph, acyclic, with collective nodes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "loom/trace/chakra/export_chakra.h"
#include "loom/trace/ingest/trace_reader.h"

namespace loom::trace::chakra {
namespace {

std::string TestData(const std::string& name) {
  const std::string f = __FILE__;
  const std::string chakra_dir = f.substr(0, f.find_last_of('/'));
  return chakra_dir.substr(0, chakra_dir.find_last_of('/')) + "/ingest/testdata/" + name;
}

struct Counts {
  int comp = 0, coll = 0, send = 0, recv = 0, data_edges = 0;
};
Counts CountNodes(const ChakraTrace& t) {
  Counts c;
  for (const Node& n : t.nodes) {
    c.comp += n.type == NodeType::kComp;
    c.coll += n.type == NodeType::kCommColl;
    c.send += n.type == NodeType::kCommSend;
    c.recv += n.type == NodeType::kCommRecv;
    c.data_edges += static_cast<int>(n.data_deps.size());
  }
  return c;
}

class IngestInterop : public ::testing::TestWithParam<std::string> {};

TEST_P(IngestInterop, ExportsReadsBackAndHasCollectives) {
  Result<ingest::RankTrace> rt = ingest::ReadTrace(TestData(GetParam()));
  ASSERT_TRUE(rt.ok()) << rt.status();
  for (CommGranularity g : {CommGranularity::kCollective, CommGranularity::kPointToPoint}) {
    ChakraOptions o;
    o.granularity = g;
    const std::string path = "/tmp/loom_chakra_interop_" + std::to_string(::getpid()) + ".et";
    ASSERT_TRUE(ExportChakra(*rt, path, o).ok());
    Result<ChakraTrace> back = ReadChakraTrace(path);
    std::remove(path.c_str());
    ASSERT_TRUE(back.ok()) << back.status();
    Result<ChakraTrace> built = BuildChakraTrace(*rt, o);
    ASSERT_TRUE(built.ok());
    EXPECT_EQ(*back, *built);
    EXPECT_TRUE(ValidateChakraGraph(*back).ok());
    const Counts c = CountNodes(*back);
    EXPECT_GT(c.comp, 0) << GetParam();
    EXPECT_GT(c.coll + c.send + c.recv, 0) << GetParam();
    if (g == CommGranularity::kCollective) {
      EXPECT_GT(c.coll, 0) << GetParam();
    }
    std::printf("%s %s: %zu nodes (comp %d, coll %d, send %d, recv %d), %d data edges\n",
                GetParam().c_str(), g == CommGranularity::kCollective ? "collective" : "p2p",
                back->nodes.size(), c.comp, c.coll, c.send, c.recv, c.data_edges);
  }
}

INSTANTIATE_TEST_SUITE_P(Testdata, IngestInterop,
                         ::testing::Values("legacy_gloo_rank0.json", "legacy_gloo_rank1.json",
                                           "kineto_rank0.json", "loom_rank0.json",
                                           "loom_rank1.json"),
                         [](const auto& info) {
                           std::string s = info.param.substr(0, info.param.find('.'));
                           return s;
                         });

}  // namespace
}  // namespace loom::trace::chakra
