// IndexedMinHeap: a binary min-heap over keys 0..n-1 with O(log n) push, pop, update (decrease
// or increase key) and erase by key; ties broken by the smaller key, so that the order is
// deterministic. Used by the replayer for the projected finish times of running nodes, which
// change when a shared link's flow count or a rank's compute slowdown changes.
//
// Thread-safety: none (single-threaded use).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace loom::trace::replay::internal {

class IndexedMinHeap {
 public:
  explicit IndexedMinHeap(size_t n) : pos_(n, kAbsent), prio_(n, 0) {}

  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  bool contains(int key) const { return pos_[key] != kAbsent; }
  int top() const { return heap_.front(); }
  double top_priority() const { return prio_[heap_.front()]; }
  double priority(int key) const { return prio_[key]; }

  // Inserts `key` or changes its priority.
  void Set(int key, double priority) {
    if (!contains(key)) {
      prio_[key] = priority;
      pos_[key] = heap_.size();
      heap_.push_back(key);
      Up(pos_[key]);
      return;
    }
    const double old = prio_[key];
    prio_[key] = priority;
    if (priority < old)
      Up(pos_[key]);
    else
      Down(pos_[key]);
  }
  int Pop() {
    const int key = heap_.front();
    Erase(key);
    return key;
  }
  void Erase(int key) {
    const size_t i = pos_[key];
    const int last = heap_.back();
    heap_.pop_back();
    pos_[key] = kAbsent;
    if (i == heap_.size()) return;
    heap_[i] = last;
    pos_[last] = i;
    Up(i);
    Down(pos_[last]);
  }

 private:
  static constexpr size_t kAbsent = static_cast<size_t>(-1);
  bool Less(int a, int b) const { return prio_[a] < prio_[b] || (prio_[a] == prio_[b] && a < b); }
  void Swap(size_t i, size_t j) {
    std::swap(heap_[i], heap_[j]);
    pos_[heap_[i]] = i;
    pos_[heap_[j]] = j;
  }
  void Up(size_t i) {
    while (i > 0 && Less(heap_[i], heap_[(i - 1) / 2])) {
      Swap(i, (i - 1) / 2);
      i = (i - 1) / 2;
    }
  }
  void Down(size_t i) {
    for (;;) {
      size_t m = i;
      const size_t l = 2 * i + 1, r = 2 * i + 2;
      if (l < heap_.size() && Less(heap_[l], heap_[m])) m = l;
      if (r < heap_.size() && Less(heap_[r], heap_[m])) m = r;
      if (m == i) return;
      Swap(i, m);
      i = m;
    }
  }
  std::vector<int> heap_;
  std::vector<size_t> pos_;
  std::vector<double> prio_;
};

}  // namespace loom::trace::replay::internal
