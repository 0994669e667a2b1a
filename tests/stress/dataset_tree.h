// DatasetTree: the names of a poolfs-stress run's datasets, by index.
//
// A run's datasets are numbered in the order they were created: 0 is the
// pool's root dataset, the others start as DatasetName(index) below it. A
// rename gives dataset i a new parent and its next generation, named
// DatasetComponent(i, generation) (op_log.h), so every name a run ever uses
// belongs to one index and generation: a dataset is followed through its
// renames by its index, which keys its Model. A destroy kills the dataset
// and every live one below it; their indices are never used again.
//
// The tree is plain data: the workload's dataset thread keeps one (what it
// did), the runner another (what the pool was last verified to hold), and
// the runner replays a crashed cycle's dataset operations on a copy to find
// the tree a txg must hold (dataset_verify.cc).
//
// Thread safety: none; a copy per user.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "poolfs/status.h"

namespace poolfs::stress {

class DatasetTree {
 public:
  DatasetTree() = default;
  // A tree with only the root dataset (index 0), named `root_name` (the
  // pool's name).
  explicit DatasetTree(std::string root_name);

  // Indices handed out so far, live or dead.
  size_t size() const { return nodes_.size(); }
  bool live(uint16_t i) const { return i < nodes_.size() && nodes_[i].live; }
  uint16_t parent(uint16_t i) const { return nodes_[i].parent; }
  uint32_t generation(uint16_t i) const { return nodes_[i].generation; }
  // Full name: "stress/ds3/ds7r2" (the root's: the pool's name).
  std::string Name(uint16_t i) const;
  // The live indices, in index order.
  std::vector<uint16_t> Live() const;
  // `i` and the live datasets below it, parents before children.
  std::vector<uint16_t> Subtree(uint16_t i) const;
  // Whether `i` is `ancestor` or below it.
  bool Below(uint16_t i, uint16_t ancestor) const;

  // Appends index size() as a live child of the root, generation 0, and
  // returns it.
  uint16_t Add();
  // Drops the indices from `n` on (creations that did not reach the txg
  // verified: the next cycle hands their indices out again).
  void Truncate(size_t n);
  // Moves `i` below `parent` with generation `generation`. InvalidArgument
  // when `i` is the root or not live, `parent` not live or below `i`, or
  // the generation does not advance.
  Status Rename(uint16_t i, uint16_t parent, uint32_t generation);
  // Kills `i` and its subtree. InvalidArgument for the root or a dead index.
  Status Destroy(uint16_t i);
  // Makes dead index `i` live again (a destroy that the txg being verified
  // does not hold yet).
  void Revive(uint16_t i) { nodes_[i].live = true; }

 private:
  struct Node {
    uint16_t parent = 0;
    uint32_t generation = 0;
    bool live = true;
  };
  std::string root_name_;
  std::vector<Node> nodes_;
};

}  // namespace poolfs::stress
