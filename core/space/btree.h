// BTree<T, Compare>: an ordered set whose elements live inline in fixed-size
// nodes.
//
// Theory
// ------
// A B-tree (not a B+tree): every element is stored exactly once, either in a
// leaf or as a separator in a core node. Leaves are `leaf_bytes` (4 KiB by
// default, settable per tree) of header plus an array of T; core nodes hold
// up to `core_cap_` separators and one more child pointer. Elements are
// copied into node buffers with memmove, so T must be trivially copyable,
// and any insert or remove invalidates every iterator and pointer into the
// tree. For 8-byte elements a 4 KiB leaf holds 510 of them: a range-tree
// segment costs ~10.7 bytes in a 3/4-full leaf instead of the 48–64 of a
// node-based tree.
//
// Invariants (checked by Verify):
//   - all leaves are at the same depth; elements ascend strictly in order;
//   - separator i of a core node is greater than every element of child i
//     and less than every element of child i+1;
//   - every non-root node holds at least min and at most cap elements,
//     except the right edge while in bulk-append mode (see below);
//   - every node's parent pointer names the core node that points to it.
//
// Bulk append: BulkAppend(x) requires x to be greater than every element. A
// full leaf on the right edge then splits 3/4 : 1/4 instead of 1/2 : 1/2, so
// a tree built in order ends with nodes about 3/4 full (the steady state of
// random inserts is ln 2 ≈ 69%). The right edge may hold under-full nodes
// while appending; the first other mutation (Insert, Remove) calls
// FinishBulk, which refills them from their left neighbours.
//
// Thread safety: none. Callers lock (a metaslab's tree is guarded by the
// metaslab's mutex).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "poolfs/status.h"
#include "util/check.h"

namespace poolfs::core::space {

inline constexpr size_t kBTreeDefaultLeafBytes = 4096;

template <typename T, typename Compare = std::less<T>>
class BTree {
  static_assert(std::is_trivially_copyable_v<T>, "BTree elements are moved with memmove");

  struct Node {
    Node* parent;
    uint32_t count;
    bool leaf;
  };
  static constexpr size_t kElemOffset = (sizeof(Node) + alignof(T) - 1) / alignof(T) * alignof(T);

 public:
  // A position in the tree: a node and an index into its elements. Invalid
  // after any mutation of the tree.
  class Iterator {
   public:
    Iterator() = default;
    const T& operator*() const { return tree_->Elems(node_)[idx_]; }
    const T* operator->() const { return &tree_->Elems(node_)[idx_]; }
    Iterator& operator++() {
      tree_->Next(&node_, &idx_);
      return *this;
    }
    Iterator& operator--() {
      tree_->Prev(&node_, &idx_);
      return *this;
    }
    bool operator==(const Iterator& o) const { return node_ == o.node_ && idx_ == o.idx_; }
    bool operator!=(const Iterator& o) const { return !(*this == o); }

   private:
    friend class BTree;
    Iterator(const BTree* t, Node* n, uint32_t i) : tree_(t), node_(n), idx_(i) {}
    const BTree* tree_ = nullptr;
    Node* node_ = nullptr;  // nullptr: end()
    uint32_t idx_ = 0;
  };

  explicit BTree(Compare cmp = Compare(), size_t leaf_bytes = kBTreeDefaultLeafBytes)
      : cmp_(cmp), leaf_bytes_(leaf_bytes) {
    leaf_cap_ = uint32_t((leaf_bytes_ - kElemOffset) / sizeof(T));
    POOLFS_CHECK_GE(leaf_cap_, 4u);
    // Core nodes are half a leaf: enough fan-out that they are a small share
    // of the memory, small enough to stay in a few cache lines when searched.
    size_t core_bytes = std::max<size_t>(leaf_bytes_ / 2, 256);
    core_cap_ = uint32_t((core_bytes - kElemOffset - sizeof(Node*)) / (sizeof(T) + sizeof(Node*)));
    POOLFS_CHECK_GE(core_cap_, 4u);
    children_offset_ = (kElemOffset + core_cap_ * sizeof(T) + alignof(Node*) - 1) /
                       alignof(Node*) * alignof(Node*);
    core_bytes_ = children_offset_ + (core_cap_ + 1) * sizeof(Node*);
    staged_.resize(std::max(leaf_cap_, core_cap_) + 1);
    staged_children_.resize(core_cap_ + 2);
  }
  ~BTree() { Clear(); }
  BTree(const BTree&) = delete;
  BTree& operator=(const BTree&) = delete;
  BTree(BTree&& o) noexcept { MoveFrom(&o); }
  BTree& operator=(BTree&& o) noexcept {
    if (this != &o) {
      Clear();
      MoveFrom(&o);
    }
    return *this;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  uint32_t leaf_capacity() const { return leaf_cap_; }
  uint32_t core_capacity() const { return core_cap_; }
  // Bytes of node memory the tree holds (leaves and core nodes).
  size_t memory_bytes() const { return leaves_ * leaf_bytes_ + cores_ * core_bytes_; }
  size_t leaf_count() const { return leaves_; }
  size_t core_count() const { return cores_; }

  Iterator begin() const {
    if (!root_) return end();
    Node* n = root_;
    while (!n->leaf) n = Children(n)[0];
    return Iterator(this, n, 0);
  }
  Iterator end() const { return Iterator(this, nullptr, 0); }
  // The last element, or end() when empty.
  Iterator last() const {
    if (!root_) return end();
    Node* n = bulk_ ? bulk_leaf_ : RightmostLeaf();
    return Iterator(this, n, n->count - 1);
  }

  // Returns the element equal to `key` (neither orders before the other), or end().
  template <typename K>
  Iterator find(const K& key) const {
    Iterator it = lower_bound(key);
    if (it != end() && !cmp_(key, *it)) return it;
    return end();
  }

  // Returns the first element not ordered before `key`, or end().
  template <typename K>
  Iterator lower_bound(const K& key) const {
    Node* n = root_;
    Iterator best = end();
    while (n) {
      uint32_t i = LowerBoundIn(n, key);
      if (i < n->count) {
        best = Iterator(this, n, i);
        if (!cmp_(key, Elems(n)[i])) return best;  // equal: exact hit
      }
      if (n->leaf) break;
      n = Children(n)[i];
    }
    return best;
  }

  // Inserts `value`. Returns its position and true, or the equal element
  // already present and false.
  std::pair<Iterator, bool> Insert(const T& value) {
    FinishBulk();
    return InsertImpl(value, false);
  }

  // Appends `value`, which must order after every element (CHECKed). Leaves
  // the nodes it splits 3/4 full; see the theory comment.
  Iterator BulkAppend(const T& value) {
    if (bulk_ && bulk_leaf_->count < leaf_cap_) {
      // The common case: room in the rightmost leaf, found without a descent.
      T* e = Elems(bulk_leaf_);
      POOLFS_CHECK(cmp_(e[bulk_leaf_->count - 1], value));
      e[bulk_leaf_->count] = value;
      size_++;
      return Iterator(this, bulk_leaf_, bulk_leaf_->count++);
    }
    if (root_) POOLFS_CHECK(cmp_(*last(), value));
    bulk_ = true;
    Iterator it = InsertImpl(value, true).first;
    bulk_leaf_ = it.node_;  // an append always lands in the rightmost leaf
    return it;
  }

  // Refills the under-full right edge left by BulkAppend. Called by every
  // other mutation; call it before Verify if the tree was bulk-built.
  void FinishBulk() {
    if (!bulk_) return;
    bulk_ = false;
    // Top down along the right edge: each under-full node borrows from its
    // left sibling (or merges, which may shrink the levels above: then
    // start again from the root; the walk is only as long as the tree is deep).
    for (Node* n = root_; n && !n->leaf;) {
      Node* right = Children(n)[n->count];
      if (right->count < MinCount(right)) {
        Rebalance(right);
        n = root_;
        continue;
      }
      n = right;
    }
  }

  // Removes the element equal to `key`. Returns false when there is none.
  template <typename K>
  bool Remove(const K& key) {
    Iterator it = find(key);
    if (it == end()) return false;
    Erase(it);
    return true;
  }

  // Removes the element at `it` (which must not be end()).
  void Erase(Iterator it) {
    if (bulk_) {
      // Refilling the right edge moves elements between nodes: find the
      // element again afterwards.
      T v = *it;
      FinishBulk();
      it = find(v);
    }
    Node* n = it.node_;
    uint32_t i = it.idx_;
    if (!n->leaf) {
      // Replace the separator with its predecessor, the last element of the
      // rightmost leaf of the left subtree, and remove that one instead.
      Node* pred = Children(n)[i];
      while (!pred->leaf) pred = Children(pred)[pred->count];
      Elems(n)[i] = Elems(pred)[pred->count - 1];
      n = pred;
      i = pred->count - 1;
    }
    T* e = Elems(n);
    std::memmove(e + i, e + i + 1, (n->count - i - 1) * sizeof(T));
    n->count--;
    size_--;
    Rebalance(n);
  }

  // Gives mutable access to an element. The caller must not change its
  // position in the order (e.g. growing a range-tree segment into a gap).
  T& MutableAt(Iterator it) { return Elems(it.node_)[it.idx_]; }

  void Clear() {
    if (root_) FreeSubtree(root_);
    root_ = nullptr;
    size_ = 0;
    bulk_ = false;
  }

  // Checks every invariant of the theory comment. Returns Corruption naming
  // the first violation.
  Status Verify() const {
    if (!root_) {
      if (size_ != 0) return Status::Corruption("btree: empty root but size " + std::to_string(size_));
      return Status::Ok();
    }
    if (root_->parent) return Status::Corruption("btree: root has a parent");
    size_t count = 0;
    int leaf_depth = -1;
    POOLFS_RETURN_IF_ERROR(VerifyNode(root_, nullptr, nullptr, 0, &leaf_depth, &count));
    if (count != size_)
      return Status::Corruption("btree: counted " + std::to_string(count) + " elements, size says " +
                                std::to_string(size_));
    return Status::Ok();
  }

 private:
  T* Elems(Node* n) const {
    return std::launder(reinterpret_cast<T*>(reinterpret_cast<char*>(n) + kElemOffset));
  }
  Node** Children(Node* n) const {
    return reinterpret_cast<Node**>(reinterpret_cast<char*>(n) + children_offset_);
  }
  uint32_t Cap(const Node* n) const { return n->leaf ? leaf_cap_ : core_cap_; }
  uint32_t MinCount(const Node* n) const { return (Cap(n) - 1) / 2; }

  Node* NewNode(bool leaf) {
    void* mem = ::operator new(leaf ? leaf_bytes_ : core_bytes_);
    Node* n = static_cast<Node*>(mem);
    n->parent = nullptr;
    n->count = 0;
    n->leaf = leaf;
    (leaf ? leaves_ : cores_)++;
    return n;
  }
  void FreeNode(Node* n) {
    (n->leaf ? leaves_ : cores_)--;
    ::operator delete(n);
  }
  void FreeSubtree(Node* n) {
    if (!n->leaf)
      for (uint32_t i = 0; i <= n->count; i++) FreeSubtree(Children(n)[i]);
    FreeNode(n);
  }
  void MoveFrom(BTree* o) {
    cmp_ = o->cmp_;
    leaf_bytes_ = o->leaf_bytes_;
    leaf_cap_ = o->leaf_cap_;
    core_cap_ = o->core_cap_;
    core_bytes_ = o->core_bytes_;
    children_offset_ = o->children_offset_;
    root_ = std::exchange(o->root_, nullptr);
    size_ = std::exchange(o->size_, 0);
    leaves_ = std::exchange(o->leaves_, 0);
    cores_ = std::exchange(o->cores_, 0);
    bulk_ = std::exchange(o->bulk_, false);
    bulk_leaf_ = std::exchange(o->bulk_leaf_, nullptr);
    staged_ = std::move(o->staged_);
    staged_children_ = std::move(o->staged_children_);
  }
  Node* RightmostLeaf() const {
    Node* n = root_;
    while (!n->leaf) n = Children(n)[n->count];
    return n;
  }

  // Branch-light binary search: the first index whose element is not
  // ordered before `key`.
  template <typename K>
  uint32_t LowerBoundIn(Node* n, const K& key) const {
    const T* e = Elems(n);
    uint32_t lo = 0, len = n->count;
    while (len > 0) {
      uint32_t half = len / 2;
      if (cmp_(e[lo + half], key)) {
        lo += half + 1;
        len -= half + 1;
      } else {
        len = half;
      }
    }
    return lo;
  }
  // Index of child `c` in its parent.
  uint32_t ChildIndex(Node* parent, Node* c) const {
    Node** ch = Children(parent);
    // The child's first element bounds its position; fall back to a scan
    // for the transient empty child.
    if (c->count > 0) {
      uint32_t i = LowerBoundIn(parent, Elems(c)[0]);
      POOLFS_DCHECK(ch[i] == c);
      return i;
    }
    for (uint32_t i = 0; i <= parent->count; i++)
      if (ch[i] == c) return i;
    POOLFS_CHECK(false);
    return 0;
  }

  void Next(Node** np, uint32_t* ip) const {
    Node* n = *np;
    if (!n) return;
    if (!n->leaf) {  // after separator i comes the leftmost of child i+1
      n = Children(n)[*ip + 1];
      while (!n->leaf) n = Children(n)[0];
      *np = n;
      *ip = 0;
      return;
    }
    if (++*ip < n->count) return;
    while (n->parent) {  // climb until we come up from a child that is not last
      Node* p = n->parent;
      uint32_t ci = ChildIndex(p, n);
      if (ci < p->count) {
        *np = p;
        *ip = ci;
        return;
      }
      n = p;
    }
    *np = nullptr;
    *ip = 0;
  }
  void Prev(Node** np, uint32_t* ip) const {
    Node* n = *np;
    if (!n) {  // --end() is the last element
      Iterator l = last();
      *np = l.node_;
      *ip = l.idx_;
      return;
    }
    if (!n->leaf) {  // before separator i comes the rightmost of child i
      n = Children(n)[*ip];
      while (!n->leaf) n = Children(n)[n->count];
      *np = n;
      *ip = n->count - 1;
      return;
    }
    if (*ip > 0) {
      --*ip;
      return;
    }
    while (n->parent) {
      Node* p = n->parent;
      uint32_t ci = ChildIndex(p, n);
      if (ci > 0) {
        *np = p;
        *ip = ci - 1;
        return;
      }
      n = p;
    }
    POOLFS_CHECK(false);  // decremented begin()
  }

  std::pair<Iterator, bool> InsertImpl(const T& value, bool append) {
    if (!root_) {
      root_ = NewNode(true);
      Elems(root_)[0] = value;
      root_->count = 1;
      size_ = 1;
      return {Iterator(this, root_, 0), true};
    }
    Node* n = root_;
    uint32_t i;
    for (;;) {
      i = LowerBoundIn(n, value);
      if (i < n->count && !cmp_(value, Elems(n)[i])) return {Iterator(this, n, i), false};
      if (n->leaf) break;
      n = Children(n)[i];
    }
    size_++;
    if (n->count < leaf_cap_) {
      T* e = Elems(n);
      std::memmove(e + i + 1, e + i, (n->count - i) * sizeof(T));
      e[i] = value;
      n->count++;
      return {Iterator(this, n, i), true};
    }
    // Split the full leaf: cap+1 elements become left, separator, right.
    uint32_t total = leaf_cap_ + 1;
    uint32_t left_count = append ? total - total / 4 - 1 : total / 2;
    return SplitAndInsert(n, i, value, left_count, nullptr);
  }

  // Inserts `value` (and, for a core node, `right_child` after it) at index
  // i of the full node n, splitting n into n (left_count elements), a
  // separator pushed to the parent, and a new right node. Returns where
  // `value` ended up.
  std::pair<Iterator, bool> SplitAndInsert(Node* n, uint32_t i, const T& value, uint32_t left_count,
                                           Node* right_child) {
    const uint32_t cap = Cap(n);
    const uint32_t total = cap + 1;
    // Stage the cap+1 elements (and cap+2 children) in order, then deal them
    // out. Staging keeps the index arithmetic obvious; nodes are small.
    T* staged = staged_.data();
    Node** staged_ch = staged_children_.data();
    T* e = Elems(n);
    std::memcpy(staged, e, i * sizeof(T));
    staged[i] = value;
    std::memcpy(staged + i + 1, e + i, (cap - i) * sizeof(T));
    if (!n->leaf) {
      Node** ch = Children(n);
      std::memcpy(staged_ch, ch, (i + 1) * sizeof(Node*));
      staged_ch[i + 1] = right_child;
      std::memcpy(staged_ch + i + 2, ch + i + 1, (cap - i) * sizeof(Node*));
    }
    Node* right = NewNode(n->leaf);
    uint32_t right_count = total - left_count - 1;
    std::memcpy(e, staged, left_count * sizeof(T));
    n->count = left_count;
    T sep = staged[left_count];
    std::memcpy(Elems(right), staged + left_count + 1, right_count * sizeof(T));
    right->count = right_count;
    if (!n->leaf) {
      std::memcpy(Children(n), staged_ch, (left_count + 1) * sizeof(Node*));
      std::memcpy(Children(right), staged_ch + left_count + 1, (right_count + 1) * sizeof(Node*));
      for (uint32_t k = 0; k <= left_count; k++) Children(n)[k]->parent = n;
      for (uint32_t k = 0; k <= right_count; k++) Children(right)[k]->parent = right;
    }
    Iterator where = i < left_count    ? Iterator(this, n, i)
                     : i == left_count ? Iterator()
                                       : Iterator(this, right, i - left_count - 1);
    Node* sep_node = InsertIntoParent(n, sep, right);
    if (i == left_count) where = Iterator(this, sep_node, LowerBoundIn(sep_node, sep));
    return {where, true};
  }

  // Puts separator `sep` and new child `right` (to the right of `left`)
  // into left's parent, growing the tree upwards as needed. Returns the
  // node that ends up holding `sep`.
  Node* InsertIntoParent(Node* left, const T& sep, Node* right) {
    Node* p = left->parent;
    if (!p) {
      p = NewNode(false);
      Elems(p)[0] = sep;
      Children(p)[0] = left;
      Children(p)[1] = right;
      p->count = 1;
      left->parent = right->parent = p;
      root_ = p;
      return p;
    }
    uint32_t i = ChildIndex(p, left);
    right->parent = p;
    if (p->count < core_cap_) {
      T* e = Elems(p);
      Node** ch = Children(p);
      std::memmove(e + i + 1, e + i, (p->count - i) * sizeof(T));
      std::memmove(ch + i + 2, ch + i + 1, (p->count - i) * sizeof(Node*));
      e[i] = sep;
      ch[i + 1] = right;
      p->count++;
      return p;
    }
    uint32_t total = core_cap_ + 1;
    bool append = bulk_ && i == p->count;
    uint32_t left_count = append ? total - total / 4 - 1 : total / 2;
    Iterator it = SplitAndInsert(p, i, sep, left_count, right).first;
    return it.node_;
  }

  // Restores the minimum fill of n after a removal, borrowing from or
  // merging with a sibling, and walking up as parents lose separators.
  void Rebalance(Node* n) {
    for (;;) {
      if (n == root_) {
        if (n->count == 0) ShrinkRoot();
        return;
      }
      if (n->count >= MinCount(n)) return;
      // One short after a removal; more on the right edge after bulk appends.
      uint32_t need = MinCount(n) - n->count;
      Node* p = n->parent;
      uint32_t ci = ChildIndex(p, n);
      Node* left = ci > 0 ? Children(p)[ci - 1] : nullptr;
      Node* right = ci < p->count ? Children(p)[ci + 1] : nullptr;
      if (left && left->count >= MinCount(left) + need) {
        ShiftRight(p, ci - 1, need);
        return;
      }
      if (right && right->count >= MinCount(right) + need) {
        ShiftLeft(p, ci, need);
        return;
      }
      // A sibling that cannot lend holds under min + need elements, so the
      // two fit in one node: n->count + need = min and 2 * min < cap.
      Merge(p, left ? ci - 1 : ci);
      n = p;
    }
  }

  void ShrinkRoot() {
    Node* old = root_;
    if (old->leaf) {
      root_ = nullptr;
    } else {
      root_ = Children(old)[0];
      root_->parent = nullptr;
    }
    FreeNode(old);
  }

  // Moves k elements from child s of p to child s+1, through separator s.
  void ShiftRight(Node* p, uint32_t s, uint32_t k) {
    Node* l = Children(p)[s];
    Node* r = Children(p)[s + 1];
    POOLFS_DCHECK_LE(k, l->count);
    T* le = Elems(l);
    T* re = Elems(r);
    std::memmove(re + k, re, r->count * sizeof(T));
    re[k - 1] = Elems(p)[s];
    std::memcpy(re, le + l->count - k + 1, (k - 1) * sizeof(T));
    Elems(p)[s] = le[l->count - k];
    if (!l->leaf) {
      Node** lc = Children(l);
      Node** rc = Children(r);
      std::memmove(rc + k, rc, (r->count + 1) * sizeof(Node*));
      std::memcpy(rc, lc + l->count - k + 1, k * sizeof(Node*));
      for (uint32_t j = 0; j < k; j++) rc[j]->parent = r;
    }
    l->count -= k;
    r->count += k;
  }

  // Moves k elements from child s+1 of p to child s, through separator s.
  void ShiftLeft(Node* p, uint32_t s, uint32_t k) {
    Node* l = Children(p)[s];
    Node* r = Children(p)[s + 1];
    POOLFS_DCHECK_LE(k, r->count);
    T* le = Elems(l);
    T* re = Elems(r);
    le[l->count] = Elems(p)[s];
    std::memcpy(le + l->count + 1, re, (k - 1) * sizeof(T));
    Elems(p)[s] = re[k - 1];
    std::memmove(re, re + k, (r->count - k) * sizeof(T));
    if (!l->leaf) {
      Node** lc = Children(l);
      Node** rc = Children(r);
      std::memcpy(lc + l->count + 1, rc, k * sizeof(Node*));
      for (uint32_t j = 0; j < k; j++) lc[l->count + 1 + j]->parent = l;
      std::memmove(rc, rc + k, (r->count + 1 - k) * sizeof(Node*));
    }
    l->count += k;
    r->count -= k;
  }

  // Merges child s+1 of p into child s, pulling separator s down.
  void Merge(Node* p, uint32_t s) {
    Node* l = Children(p)[s];
    Node* r = Children(p)[s + 1];
    POOLFS_DCHECK_LE(l->count + 1 + r->count, Cap(l));
    T* le = Elems(l);
    le[l->count] = Elems(p)[s];
    std::memcpy(le + l->count + 1, Elems(r), r->count * sizeof(T));
    if (!l->leaf) {
      Node** lc = Children(l);
      std::memcpy(lc + l->count + 1, Children(r), (r->count + 1) * sizeof(Node*));
      for (uint32_t j = 0; j <= r->count; j++) lc[l->count + 1 + j]->parent = l;
    }
    l->count += r->count + 1;
    T* pe = Elems(p);
    Node** pc = Children(p);
    std::memmove(pe + s, pe + s + 1, (p->count - s - 1) * sizeof(T));
    std::memmove(pc + s + 1, pc + s + 2, (p->count - s - 1) * sizeof(Node*));
    p->count--;
    FreeNode(r);
  }

  Status VerifyNode(Node* n, const T* lo, const T* hi, int depth, int* leaf_depth,
                    size_t* count) const {
    auto where = [&] { return "btree: node at depth " + std::to_string(depth) + ": "; };
    if (n->count == 0 && n != root_) return Status::Corruption(where() + "empty node");
    if (n->count > Cap(n)) return Status::Corruption(where() + "count over capacity");
    if (n != root_ && n->count < MinCount(n) && !bulk_)
      return Status::Corruption(where() + "under-full: " + std::to_string(n->count) + " < " +
                                std::to_string(MinCount(n)));
    const T* e = Elems(n);
    for (uint32_t i = 0; i < n->count; i++) {
      if (i > 0 && !cmp_(e[i - 1], e[i])) return Status::Corruption(where() + "out of order");
      if (lo && !cmp_(*lo, e[i])) return Status::Corruption(where() + "below its separator");
      if (hi && !cmp_(e[i], *hi)) return Status::Corruption(where() + "above its separator");
    }
    *count += n->count;
    if (n->leaf) {
      if (*leaf_depth < 0) *leaf_depth = depth;
      if (*leaf_depth != depth) return Status::Corruption(where() + "leaves at unequal depths");
      return Status::Ok();
    }
    for (uint32_t i = 0; i <= n->count; i++) {
      Node* c = Children(n)[i];
      if (c->parent != n) return Status::Corruption(where() + "child's parent pointer is wrong");
      POOLFS_RETURN_IF_ERROR(VerifyNode(c, i > 0 ? &e[i - 1] : lo, i < n->count ? &e[i] : hi,
                                        depth + 1, leaf_depth, count));
    }
    return Status::Ok();
  }

  Compare cmp_;
  size_t leaf_bytes_ = kBTreeDefaultLeafBytes;
  uint32_t leaf_cap_ = 0;
  uint32_t core_cap_ = 0;
  size_t core_bytes_ = 0;
  size_t children_offset_ = 0;
  Node* root_ = nullptr;
  size_t size_ = 0;
  size_t leaves_ = 0;
  size_t cores_ = 0;
  bool bulk_ = false;
  Node* bulk_leaf_ = nullptr;  // the rightmost leaf, while bulk_
  // Scratch for splits: a full node's elements plus the new one.
  std::vector<T> staged_;
  std::vector<Node*> staged_children_;
};

}  // namespace poolfs::core::space
