#include "loom/comm/world.h"

#include <gtest/gtest.h>

namespace loom::comm {
namespace {

TEST(WorldTest, NoLauncherIsSingleProcess) {
  auto w = WorldFromEnv(Env::FromMap({}));
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->world_size, 1);
  EXPECT_EQ(w->launcher, Launcher::kNone);
}

TEST(WorldTest, LoomVariables) {
  auto w = WorldFromEnv(Env::FromMap({{"LOOM_RANK", "1"},
                                      {"LOOM_WORLD_SIZE", "4"},
                                      {"LOOM_LOCAL_RANK", "1"},
                                      {"LOOM_LOCAL_WORLD_SIZE", "2"},
                                      {"LOOM_STORE", "file:///tmp/x"}}));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->rank, 1);
  EXPECT_EQ(w->world_size, 4);
  EXPECT_EQ(w->local_world_size, 2);
  EXPECT_EQ(w->store_url, "file:///tmp/x");
  EXPECT_EQ(w->launcher, Launcher::kLoom);
}

TEST(WorldTest, OpenMpiAndSlurm) {
  auto m = WorldFromEnv(Env::FromMap({{"OMPI_COMM_WORLD_RANK", "2"},
                                      {"OMPI_COMM_WORLD_SIZE", "3"},
                                      {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                                      {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"},
                                      {"OMPI_MCA_ess_base_jobid", "77"}}));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->rank, 2);
  EXPECT_EQ(m->launcher, Launcher::kMpirun);
  EXPECT_NE(m->store_url.find(".loom_rendezvous/ompi-77"), std::string::npos) << m->store_url;
  auto s = WorldFromEnv(Env::FromMap({{"SLURM_PROCID", "5"},
                                      {"SLURM_NTASKS", "8"},
                                      {"SLURM_LOCALID", "1"},
                                      {"SLURM_NTASKS_PER_NODE", "4(x2)"},
                                      {"SLURM_JOB_ID", "9"},
                                      {"LOOM_STORE", "redis://h:1"}}));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->rank, 5);
  EXPECT_EQ(s->local_world_size, 4);
  EXPECT_EQ(s->store_url, "redis://h:1");
  EXPECT_EQ(s->launcher, Launcher::kSrun);
}

TEST(WorldTest, InconsistentVariablesNameTheVariable) {
  auto w = WorldFromEnv(Env::FromMap(
      {{"LOOM_RANK", "4"}, {"LOOM_WORLD_SIZE", "4"}, {"LOOM_STORE", "file:///tmp/x"}}));
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("LOOM_RANK=4 is outside [0, 4)"), std::string::npos)
      << w.status().message();
  auto nostore = WorldFromEnv(Env::FromMap({{"LOOM_RANK", "0"}, {"LOOM_WORLD_SIZE", "2"}}));
  ASSERT_FALSE(nostore.ok());
  EXPECT_NE(nostore.status().message().find("LOOM_STORE"), std::string::npos);
}

}  // namespace
}  // namespace loom::comm
