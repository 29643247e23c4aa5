#include "loom/ckpt/checkpointer.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "loom/ckpt/loader.h"
#include "loom/ckpt/storage/faulty_storage.h"
#include "loom/ckpt/testing/test_util.h"
#include "loom/comm/inproc/inproc_transport.h"
#include "loom/comm/testing/run_ranks.h"

namespace loom::ckpt {
namespace {

using testing::ScratchDir;

struct Model {
  std::vector<float> w = testing::RangeValues(1, 0, 64 * 48);
  std::vector<float> b = testing::RangeValues(2, 0, 48);
  int64_t step_value = 123;
  StateDict Dict() {
    StateDict d;
    d.AddFull("w", DType::kF32, {64, 48}, w.data(), false);
    d.AddFull("b", DType::kF32, {48}, b.data(), false);
    d.AddFull("step", DType::kI64, {}, &step_value, false);
    d.AddObject("trainer", "{\"pos\": 17}", true);
    return d;
  }
};

TEST(Checkpointer, SavesAndLoadsOneProcessOnDisk) {
  ScratchDir dir;
  auto storage = NewPosixStorage();
  Model m;
  {
    Checkpointer ckpt(storage.get(), dir.path(), nullptr);
    auto h = ckpt.Save(5, m.Dict());
    ASSERT_TRUE(h.ok()) << h.status();
    ASSERT_TRUE(h->Wait().ok());
    EXPECT_FALSE(h->stats().plan_cached);
  }
  EXPECT_EQ(*storage->ReadSmallFile(dir.path() + "/latest"), "step_00000005\n");
  auto src = OpenCheckpoint(*storage, dir.path());
  ASSERT_TRUE(src.ok()) << src.status();
  EXPECT_EQ(src->meta.step, 5);
  Model back;
  std::fill(back.w.begin(), back.w.end(), 0.f);
  std::fill(back.b.begin(), back.b.end(), 0.f);
  back.step_value = 0;
  auto rep = Load(*storage, *src, back.Dict());
  ASSERT_TRUE(rep.ok()) << rep.status();
  EXPECT_EQ(back.w, m.w);
  EXPECT_EQ(back.b, m.b);
  EXPECT_EQ(back.step_value, 123);
  EXPECT_EQ(rep->verified_chunks, 3);
  EXPECT_LE(rep->read_amplification(), 1.0 + 1e-9 + 3.0 * kAlignment / rep->bytes_needed);
  EXPECT_EQ(*ReadObject(*storage, *src, "trainer", 0), "{\"pos\": 17}");
  EXPECT_EQ(*VerifyChecksums(*storage, *src), 4);
  // Telemetry: one line per stage.
  std::ifstream tel(dir.path() + "/telemetry/r0.jsonl");
  int lines = 0;
  for (std::string l; std::getline(tel, l);) ++lines;
  EXPECT_EQ(lines, 4);  // plan, snapshot, write (with checksums), commit
}

TEST(Checkpointer, TwoTargetsWantingTheSameBytesBothGetThem) {
  auto storage = NewMemoryStorage();
  Model m;
  {
    Checkpointer ckpt(storage.get(), "/ck", nullptr);
    ASSERT_TRUE(ckpt.Save(1, m.Dict(), {.async = false}).ok());
  }
  auto src = OpenCheckpoint(*storage, "/ck");
  ASSERT_TRUE(src.ok());
  std::vector<float> a(48, 0), b(48, 0), rows(16 * 48, 0);
  StateDict d;
  d.AddFull("b", DType::kF32, {48}, a.data(), false);
  d.AddFull("b", DType::kF32, {48}, b.data(), false);
  d.AddTensor({"w", DType::kF32, {64, 48}, Box{{8, 0}, {16, 48}}, rows.data()});
  auto rep = Load(*storage, *src, d);
  ASSERT_TRUE(rep.ok()) << rep.status();
  EXPECT_EQ(a, m.b);
  EXPECT_EQ(b, m.b);
  EXPECT_EQ(rows, std::vector<float>(m.w.begin() + 8 * 48, m.w.begin() + 24 * 48));
}

TEST(Checkpointer, CachedPlansSkipTheGatherAndKeepLimitsSteps) {
  auto storage = NewMemoryStorage();
  auto comms = comm::MakeInProcCommunicators(2);
  comm::testing::RunRanks(2, [&](int rank) {
    std::vector<float> shard = testing::RangeValues(3, rank * 50, rank * 50 + 50);
    std::vector<float> ln = testing::RangeValues(4, 0, 10);
    Checkpointer ckpt(storage.get(), "/ck", comms[rank].get());
    for (int step = 1; step <= 4; ++step) {
      StateDict d;
      d.AddTensor({"w", DType::kF32, {100}, FlatRange{rank * 50, rank * 50 + 50}, shard.data()});
      d.AddFull("ln", DType::kF32, {10}, ln.data(), /*replicated=*/true);
      SaveOptions opts;
      opts.keep = 2;
      auto h = ckpt.Save(step, d, opts);
      ASSERT_TRUE(h.ok()) << h.status();
      EXPECT_EQ(h->stats().plan_cached, step > 1);
    }
    ASSERT_TRUE(ckpt.WaitAll().ok());
    EXPECT_EQ(ckpt.plan_gathers(), 1);
  });
  auto names = storage->List("/ck");
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{"latest", "step_00000003", "step_00000004"}));
  auto src = OpenCheckpoint(*storage, "/ck");
  ASSERT_TRUE(src.ok()) << src.status();
  // The replicated LayerNorm was written once.
  EXPECT_EQ(src->meta.tensors.at("ln").chunks.size(), 1u);
  std::vector<float> full(100);
  StateDict t;
  t.AddFull("w", DType::kF32, {100}, full.data(), false);
  ASSERT_TRUE(Load(*storage, *src, t).ok());
  EXPECT_EQ(full, testing::RangeValues(3, 0, 100));
}

TEST(Checkpointer, OneRankWithABadEntryFailsTheSaveOnEveryRankWithoutHanging) {
  auto storage = NewMemoryStorage();
  auto comms = comm::MakeInProcCommunicators(2);
  std::vector<Status> results(2);
  comm::testing::RunRanks(2, [&](int rank) {
    std::vector<float> data(10, 1.f);
    Checkpointer ckpt(storage.get(), "/ck", comms[rank].get());
    StateDict d;
    // Rank 1 claims a box outside the tensor.
    d.AddTensor({"w", DType::kF32, {20}, rank == 0 ? Box{{0}, {10}} : Box{{15}, {10}},
                 data.data()});
    results[rank] = ckpt.Save(1, d).status();
    // The communicator is still usable afterwards: both ranks left the save together.
    int64_t x = rank;
    EXPECT_TRUE(comms[rank]->AllReduce(TensorView::Of(&x, 1), comm::ReduceOp::kSum).ok());
    EXPECT_EQ(x, 1);
  });
  EXPECT_EQ(results[1].code(), StatusCode::kInvalidArgument) << results[1];
  EXPECT_EQ(results[0].code(), StatusCode::kAborted) << results[0];
  EXPECT_NE(results[0].message().find("rank 1"), std::string::npos) << results[0];
  EXPECT_FALSE(storage->Exists("/ck/latest"));
}

TEST(Checkpointer, SynchronousSaveReturnsAfterTheCommitOnEveryRank) {
  auto storage = NewMemoryStorage();
  auto comms = comm::MakeInProcCommunicators(3);
  comm::testing::RunRanks(3, [&](int rank) {
    std::vector<float> part(8, static_cast<float>(rank));
    Checkpointer ckpt(storage.get(), "/ck", comms[rank].get());
    StateDict d;
    d.AddTensor({"w", DType::kF32, {24}, Box{{8 * rank}, {8}}, part.data()});
    for (int step = 1; step <= 3; ++step) {
      ASSERT_TRUE(ckpt.Save(step, d, {.async = false}).ok());
      // Committed already, whichever rank looks.
      auto src = OpenCheckpoint(*storage, "/ck");
      ASSERT_TRUE(src.ok()) << src.status();
      EXPECT_GE(src->meta.step, step);
    }
  });
}

TEST(Checkpointer, ReplicatedStateIsSpreadOverHolders) {
  auto storage = NewMemoryStorage();
  auto comms = comm::MakeInProcCommunicators(3);
  std::vector<std::vector<float>> tensors(6, std::vector<float>(1000, 1.f));
  comm::testing::RunRanks(3, [&](int rank) {
    Checkpointer ckpt(storage.get(), "/ck", comms[rank].get());
    StateDict d;
    for (int i = 0; i < 6; ++i) {
      d.AddFull("t" + std::to_string(i), DType::kF32, {1000}, tensors[i].data(), true);
    }
    auto h = ckpt.Save(1, d, {.async = false});
    ASSERT_TRUE(h.ok()) << h.status();
  });
  auto src = OpenCheckpoint(*storage, "/ck");
  ASSERT_TRUE(src.ok()) << src.status();
  std::vector<int> per_file(3, 0);
  for (const auto& [n, t] : src->meta.tensors) ++per_file[t.chunks[0].file];
  EXPECT_EQ(per_file, (std::vector<int>{2, 2, 2}));
}

TEST(Checkpointer, DiskFullFailsTheSaveCleanlyAndTrainingContinues) {
  auto mem = NewMemoryStorage();
  auto faulty = NewFaultyStorage(mem.get(), {{FaultOp::kWrite, 2, ENOSPC, true}});
  Model m;
  Checkpointer::Options one_io;
  one_io.io_threads = 1;
  Checkpointer ckpt(faulty.get(), "/ck", nullptr, one_io);
  auto ok = ckpt.Save(1, m.Dict());  // write #1
  ASSERT_TRUE(ok.ok());
  ASSERT_TRUE(ok->Wait().ok());
  auto bad = ckpt.Save(2, m.Dict());  // write #2 fails
  ASSERT_TRUE(bad.ok()) << bad.status();  // the snapshot succeeded; the failure is async
  Status s = bad->Wait();
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("step 2"), std::string::npos) << s;
  EXPECT_FALSE(mem->Exists("/ck/step_00000002.tmp"));
  EXPECT_FALSE(mem->Exists("/ck/step_00000002"));
  EXPECT_EQ(*mem->ReadSmallFile("/ck/latest"), "step_00000001\n");
  auto errors = ckpt.TakeErrors();
  ASSERT_EQ(errors.size(), 1u);
  auto next = ckpt.Save(3, m.Dict());
  ASSERT_TRUE(next.ok());
  EXPECT_TRUE(next->Wait().ok());
  EXPECT_EQ(*mem->ReadSmallFile("/ck/latest"), "step_00000003\n");
}

TEST(Checkpointer, FailedCommitRenameLeavesLatestAlone) {
  auto mem = NewMemoryStorage();
  auto faulty = NewFaultyStorage(mem.get(), {{FaultOp::kRename, 1, EIO}});
  Model m;
  Checkpointer ckpt(faulty.get(), "/ck", nullptr);
  auto h = ckpt.Save(1, m.Dict());
  ASSERT_TRUE(h.ok());
  EXPECT_FALSE(h->Wait().ok());
  EXPECT_FALSE(mem->Exists("/ck/latest"));
  EXPECT_FALSE(mem->Exists("/ck/step_00000001"));
  EXPECT_EQ(OpenCheckpoint(*mem, "/ck/step_00000001").status().code(), StatusCode::kNotFound);
}

TEST(Checkpointer, PersistentTierGetsEveryStepAfterTheFastTier) {
  auto fast = NewMemoryStorage();
  auto disk_base = NewMemoryStorage();
  // The persistent tier's second data write fails: step 2 misses it, steps 1 and 3 do not.
  auto disk = NewFaultyStorage(disk_base.get(), {{FaultOp::kWrite, 2, EIO}});
  Model m;
  Checkpointer::Options opts;
  opts.io_threads = 1;
  opts.persist_storage = disk.get();
  opts.persist_root = "/disk/ck";
  Checkpointer ckpt(fast.get(), "/shm/ck", nullptr, opts);
  SaveOptions keep2;
  keep2.keep = 2;
  for (int step = 1; step <= 3; ++step) {
    auto h = ckpt.Save(step, m.Dict(), keep2);
    ASSERT_TRUE(h.ok()) << h.status();
    Status s = h->Wait();
    if (step == 2) {
      EXPECT_FALSE(s.ok());
      EXPECT_NE(s.message().find("persistent tier /disk/ck"), std::string::npos) << s;
    } else {
      EXPECT_TRUE(s.ok()) << s;
    }
  }
  EXPECT_EQ(*fast->ReadSmallFile("/shm/ck/latest"), "step_00000003\n");
  EXPECT_EQ(*disk_base->ReadSmallFile("/disk/ck/latest"), "step_00000003\n");
  EXPECT_TRUE(fast->Exists("/shm/ck/step_00000002/COMMITTED"));
  EXPECT_FALSE(disk_base->Exists("/disk/ck/step_00000002"));
  // keep=2 prunes each tier by its own contents.
  EXPECT_EQ(*fast->List("/shm/ck"),
            (std::vector<std::string>{"latest", "step_00000002", "step_00000003"}));
  EXPECT_EQ(*disk_base->List("/disk/ck"),
            (std::vector<std::string>{"latest", "step_00000001", "step_00000003"}));
  // Both copies load and carry the same checksums.
  auto a = OpenCheckpoint(*fast, "/shm/ck");
  auto b = OpenCheckpoint(*disk_base, "/disk/ck");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(MetadataToJson(a->meta), MetadataToJson(b->meta));
  EXPECT_EQ(*VerifyChecksums(*disk_base, *b), 4);
}

TEST(Checkpointer, NewestCheckpointPicksTheHighestCommittedStepAcrossRoots) {
  auto storage = NewMemoryStorage();
  Model m;
  {
    Checkpointer a(storage.get(), "/a", nullptr);
    ASSERT_TRUE(a.Save(4, m.Dict(), {.async = false}).ok());
    Checkpointer b(storage.get(), "/b", nullptr);
    ASSERT_TRUE(b.Save(7, m.Dict(), {.async = false}).ok());
  }
  EXPECT_EQ(*NewestCheckpoint(*storage, {"/a", "/b", "/missing"}), "/b/step_00000007");
  EXPECT_EQ(*NewestCheckpoint(*storage, {"/missing"}), "");
}

TEST(Checkpointer, SavingAnExistingStepIsAnError) {
  auto mem = NewMemoryStorage();
  Model m;
  Checkpointer ckpt(mem.get(), "/ck", nullptr);
  ASSERT_TRUE(ckpt.Save(1, m.Dict(), {.async = false}).ok());
  EXPECT_EQ(ckpt.Save(1, m.Dict()).status().code(), StatusCode::kAlreadyExists);
}

class CorruptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    storage_ = NewPosixStorage();
    Checkpointer ckpt(storage_.get(), dir_.path(), nullptr);
    ASSERT_TRUE(ckpt.Save(1, m_.Dict(), {.async = false}).ok());
    step_ = dir_.path() + "/step_00000001";
  }
  Status LoadAll() {
    auto src = OpenCheckpoint(*storage_, dir_.path());
    if (!src.ok()) return src.status();
    Model back;
    return Load(*storage_, *src, back.Dict()).status();
  }
  ScratchDir dir_;
  std::unique_ptr<Storage> storage_;
  Model m_;
  std::string step_;
};

TEST_F(CorruptionTest, FlippedByteFailsTheChecksumNamingTensorAndFile) {
  {
    std::fstream f(step_ + "/data/r0.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(10);
    f.put('\x7f');
  }
  Status s = LoadAll();
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("tensor 'w'"), std::string::npos) << s;
  EXPECT_NE(s.message().find("r0.bin"), std::string::npos) << s;
}

TEST_F(CorruptionTest, TruncatedFileIsDataLoss) {
  std::filesystem::resize_file(step_ + "/data/r0.bin", 5000);
  Status s = LoadAll();
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("truncated"), std::string::npos) << s;
}

TEST_F(CorruptionTest, MissingCommittedMarkerIsRefused) {
  std::filesystem::remove(step_ + "/COMMITTED");
  Status s = LoadAll();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("not committed"), std::string::npos) << s;
}

TEST_F(CorruptionTest, WrongTargetShapeAndUnknownNameAreErrors) {
  auto src = OpenCheckpoint(*storage_, dir_.path());
  ASSERT_TRUE(src.ok());
  std::vector<float> buf(64 * 64);
  StateDict t;
  t.AddFull("w", DType::kF32, {64, 64}, buf.data(), false);
  Status s = Load(*storage_, *src, t).status();
  EXPECT_NE(s.message().find("global shape"), std::string::npos) << s;
  StateDict u;
  u.AddFull("ww", DType::kF32, {64, 48}, buf.data(), false);
  s = Load(*storage_, *src, u).status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("did you mean 'w'"), std::string::npos) << s;
}

}  // namespace
}  // namespace loom::ckpt
