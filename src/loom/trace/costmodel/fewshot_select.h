// Few-shot sample selection: which `k` of a new device's kernels to time so that a pretrained
// latency model adapts best (CDMPP's KMeans-based sampling, plus the random baselines).
//
//   KMeansMedoids   k-means++ seeding + Lloyd on the rows of `x` (a representation of the
//                   target's samples: standardised pooled features, or a model's latents), k
//                   clusters, and per non-empty cluster its medoid (the member nearest the
//                   centre), largest cluster first; each pick carries its cluster's size.
//   KMeansSelection the medoids as a Selection, weighted by cluster size (each pick stands for its
//                   cluster, so the fine-tuning objective approximates the whole pool's) or not.
//   RandomSelection / StratifiedSelection  uniform picks; stratified = proportional allocation
//                   over strata (e.g. kernel kind, largest remainder), uniform within each.
// CDMPP's own code (metalearner/analyze/sample4finetune.py, method "kmeans") clusters the
// normalised raw features with k = the number of picks, visits clusters largest first and picks
// the *task* (a group of samples) with the smallest mean distance to the centre; here a pick is
// one sample (one kernel instance on the target device).
//
// Weights are normalised to mean 1 over the picks (unweighted: all 1); the evaluation multiplies
// them by its few-shot weight. All functions are deterministic for a seed.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "loom/trace/costmodel/baselines.h"

namespace loom::trace::costmodel {

struct Medoids {
  std::vector<int> picks;         // distinct rows of x
  std::vector<int> cluster_size;  // members of the cluster each pick represents (fill picks: 1)
  std::vector<int> assignment;    // cluster id of every row (Lloyd's final assignment)
};

// min(k, rows) distinct picks. When fewer than k clusters are non-empty (duplicate rows), the
// rest are filled by farthest-point picks. `x` should be on a meaningful scale (standardised
// features, or a model's latents as they are).
Medoids KMeansMedoids(const FeatureMatrix& x, int k, uint64_t seed);

// The picks of KMeansMedoids only (the original selection API).
std::vector<int> KMeansSelect(const FeatureMatrix& x, int k, uint64_t seed);

struct Selection {
  std::vector<int> picks;       // distinct positions into the pool
  std::vector<double> weights;  // one per pick, mean 1
};

Selection KMeansSelection(const FeatureMatrix& x, int k, uint64_t seed, bool size_weighted);
// min(k, n) distinct positions of 0..n-1, uniformly at random; weights 1.
Selection RandomSelection(int n, int k, uint64_t seed);
// `stratum[i]` is the stratum of position i. Each stratum gets round(k * share) picks (largest
// remainder, so the total is min(k, n)), uniformly at random within it; weights 1.
Selection StratifiedSelection(const std::vector<int>& stratum, int k, uint64_t seed);

// Integer copies of each pick for models that take weights as repeated samples:
// max(1, round(scale * weight)).
std::vector<int> CopiesForWeights(const std::vector<double>& weights, double scale);

}  // namespace loom::trace::costmodel
