#include "stress/dataset_tree.h"

#include "stress/op_log.h"

namespace poolfs::stress {

DatasetTree::DatasetTree(std::string root_name) : root_name_(std::move(root_name)) {
  nodes_.push_back(Node{});
}

std::string DatasetTree::Name(uint16_t i) const {
  if (i == 0) return root_name_;
  return Name(nodes_[i].parent) + "/" + DatasetComponent(i, nodes_[i].generation);
}

std::vector<uint16_t> DatasetTree::Live() const {
  std::vector<uint16_t> out;
  for (size_t i = 0; i < nodes_.size(); i++)
    if (nodes_[i].live) out.push_back(uint16_t(i));
  return out;
}

std::vector<uint16_t> DatasetTree::Subtree(uint16_t i) const {
  std::vector<uint16_t> out{i};
  for (size_t at = 0; at < out.size(); at++)
    for (size_t c = 1; c < nodes_.size(); c++)
      if (nodes_[c].live && nodes_[c].parent == out[at] && c != out[at]) out.push_back(uint16_t(c));
  return out;
}

bool DatasetTree::Below(uint16_t i, uint16_t ancestor) const {
  for (uint16_t at = i;; at = nodes_[at].parent) {
    if (at == ancestor) return true;
    if (at == 0) return false;
  }
}

uint16_t DatasetTree::Add() {
  nodes_.push_back(Node{});
  return uint16_t(nodes_.size() - 1);
}

void DatasetTree::Truncate(size_t n) {
  if (n < nodes_.size()) nodes_.resize(n);
}

Status DatasetTree::Rename(uint16_t i, uint16_t parent, uint32_t generation) {
  const std::string what = "rename of dataset " + std::to_string(i) + " below dataset " +
                           std::to_string(parent) + " (generation " + std::to_string(generation) +
                           ")";
  if (i == 0 || !live(i)) return Status::InvalidArgument(what + ": not a live non-root dataset");
  if (!live(parent) || Below(parent, i))
    return Status::InvalidArgument(what + ": the new parent is not live or is below it");
  if (generation <= nodes_[i].generation)
    return Status::InvalidArgument(what + ": it has generation " +
                                   std::to_string(nodes_[i].generation) + " already");
  nodes_[i].parent = parent;
  nodes_[i].generation = generation;
  return Status::Ok();
}

Status DatasetTree::Destroy(uint16_t i) {
  if (i == 0 || !live(i))
    return Status::InvalidArgument("destroy of dataset " + std::to_string(i) +
                                   ": not a live non-root dataset");
  for (uint16_t d : Subtree(i)) nodes_[d].live = false;
  return Status::Ok();
}

}  // namespace poolfs::stress
