//===- Optimizer.cpp - The effects of libpcap's optimizer -----------------===//
//
// libpcap compiles with its optimizer on (tcpdump does), and that changes
// what a short packet does: a load the optimizer removes cannot fail.
// The predicate tree becomes a hash-consed decision graph of BPF-style
// tests on which the transformations of optimize.c that change which
// loads run are applied until nothing changes.
//
//===----------------------------------------------------------------------===//

#include "PcapFilterInternal.h"

#include <algorithm>
#include <cassert>
#include <limits>

using namespace mlir;
using namespace netvm;

namespace netvm::pcapfilter::detail {

//===----------------------------------------------------------------------===//
// libpcap's optimizer, on a decision graph
//
// libpcap compiles with its optimizer on (tcpdump does), and that changes
// what a short packet does: a load the optimizer removes cannot fail. To
// give every packet libpcap's verdict, the predicate tree becomes a graph
// of tests (each with a true and a false successor, ending in accept or
// reject) on which the optimizer's transformations run: constants fold
// (x & 0 is 0, x + 0 is x), identical tests share one node, a test whose
// two successors are the same node goes, and edges are threaded as
// libpcap's opt_j/fold_edge do: when every path to an edge has taken a
// branch of the same test (or, on its true branch, an equality test of the
// same value with another constant), the edge jumps past the test.
//===----------------------------------------------------------------------===//

std::string keyOf(const ValP &v);
/// The key of a predicate (a Select's condition).
static std::string keyOf(const PredP &p) {
  switch (p->kind) {
  case Pred::True:
    return "T";
  case Pred::False:
    return "F";
  case Pred::Not:
    return "!(" + keyOf(p->a) + ")";
  case Pred::And:
  case Pred::Or:
    return "(" + keyOf(p->a) + (p->kind == Pred::And ? "&&" : "||") +
           keyOf(p->b) + ")";
  case Pred::Rel:
    return "(" + keyOf(p->lhs) + " r" + std::to_string(int(p->rel)) + " " +
           keyOf(p->rhs) + ")";
  }
  return "?";
}

/// A structural key: equal keys, equal values (libpcap's value numbers).
std::string keyOf(const ValP &v) {
  switch (v->kind) {
  case Val::Const:
    return "#" + std::to_string(v->k);
  case Val::WireLen:
    return "len";
  case Val::Neg:
    return "-(" + keyOf(v->a) + ")";
  case Val::Chain:
    return std::string("chain") + (v->ipv6 ? "6@" : "4@") +
           std::to_string(v->k);
  case Val::Load:
    return "[" +
           (v->ipHeader ? "x" +
                              (v->ipHeaderIndex ? keyOf(v->ipHeaderIndex) + "+"
                                                : std::string()) +
                              std::to_string(v->ipHeaderAt) + "+"
                        : std::string()) +
           (v->index ? keyOf(v->index) + "+" : "") + std::to_string(v->k) +
           ":" + std::to_string(v->size) + "]";
  case Val::Binary:
    return "(" + keyOf(v->a) + v->op + keyOf(v->b) + ")";
  case Val::Select:
    return "(" + keyOf(v->cond) + "?" + keyOf(v->a) + ":" + keyOf(v->b) + ")";
  }
  return "?";
}

/// libpcap's opt_stmt on arithmetic: constants fold, and an operation with
/// a constant 0 is the identity (+ - | ^ << >>) or 0 (* &), which drops
/// the loads of the other operand.
ValP simplify(const ValP &v) {
  if (v->kind == Val::Neg) {
    ValP a = simplify(v->a);
    if (a->kind == Val::Const)
      return constant(0u - a->k);
    auto n = std::make_shared<Val>(*v);
    n->a = a;
    return n;
  }
  if (v->kind == Val::Load && v->index) {
    auto n = std::make_shared<Val>(*v);
    n->index = simplify(v->index);
    return n;
  }
  if (v->kind != Val::Binary)
    return v;
  ValP a = simplify(v->a), b = simplify(v->b);
  if (b->kind == Val::Const) {
    uint32_t k = b->k;
    if (a->kind == Val::Const) {
      uint32_t x = a->k;
      switch (v->op) {
      case '+':
        return constant(x + k);
      case '-':
        return constant(x - k);
      case '*':
        return constant(x * k);
      case '&':
        return constant(x & k);
      case '|':
        return constant(x | k);
      case '^':
        return constant(x ^ k);
      case '/':
        if (k)
          return constant(x / k);
        break;
      case '%':
        if (k)
          return constant(x % k);
        break;
      case '<':
        return constant(k < 32 ? x << k : 0);
      case '>':
        return constant(k < 32 ? x >> k : 0);
      }
    } else if (k == 0) {
      if (v->op == '+' || v->op == '-' || v->op == '|' || v->op == '^' ||
          v->op == '<' || v->op == '>')
        return a;
      if (v->op == '*' || v->op == '&')
        return constant(0);
    }
  }
  return binary(v->op, a, b);
}

int Dag::compile(const PredP &p, int t, int f) {
  switch (p->kind) {
  case Pred::True:
    lastTest = -1;
    return t;
  case Pred::False:
    lastTest = -1;
    return f;
  case Pred::Not:
    return compile(p->a, f, t);
  case Pred::And:
    return compile(p->a, compile(p->b, t, f), f);
  case Pred::Or:
    return compile(p->a, t, compile(p->b, t, f));
  case Pred::Rel:
    break;
  }
  ValP a = optimizing ? simplify(p->lhs) : p->lhs;
  ValP b = optimizing ? simplify(p->rhs) : p->rhs;
  Test::Code code;
  bool swap = false;
  switch (p->rel) {
  case arith::CmpIPredicate::eq:
    code = Test::JEQ;
    break;
  case arith::CmpIPredicate::ne:
    code = Test::JEQ;
    swap = true;
    break;
  case arith::CmpIPredicate::ugt:
    code = Test::JGT;
    break;
  case arith::CmpIPredicate::ule:
    code = Test::JGT;
    swap = true;
    break;
  case arith::CmpIPredicate::uge:
    code = Test::JGE;
    break;
  default:
    code = Test::JGE;
    swap = true;
    break; // ult
  }
  if (swap)
    std::swap(t, f);
  // libpcap's peephole rule: "and #k; jeq #0" becomes "jset #k" with its
  // branches swapped.
  if (optimizing && code == Test::JEQ && b->kind == Val::Const && b->k == 0 &&
      a->kind == Val::Binary && a->op == '&' && a->b->kind == Val::Const) {
    code = Test::JSET;
    b = a->b;
    a = a->a;
    std::swap(t, f);
  }
  // A test of two constants is decided now.
  if (a->kind == Val::Const && b->kind == Val::Const) {
    bool r = code == Test::JEQ   ? a->k == b->k
             : code == Test::JGT ? a->k > b->k
             : code == Test::JGE ? a->k >= b->k
                                 : (a->k & b->k) != 0;
    lastTest = -1;
    return r ? t : f;
  }
  Test test{code, a, b, keyOf(a), keyOf(b), b->kind == Val::Const};
  std::string key = std::to_string(code) + test.aKey + "?" + test.rKey;
  auto [it, inserted] = testIds.try_emplace(key, tests.size());
  if (inserted) {
    test.aId = aIds.try_emplace(test.aKey, aIds.size()).first->second;
    tests.push_back(std::move(test));
  }
  lastTest = it->second;
  return node(it->second, t, f);
}

int Dag::optimize(int root) {
  // Each step walks the reachable graph; past the budget the graph stays
  // as it is (see `exhausted`).
  auto spent = [&] {
    if (work > kWorkBudget)
      exhausted = true;
    return exhausted;
  };
  for (unsigned round = 0; round < 256 && !spent(); ++round) {
    bool changed = false;
    root = thread(root, changed);
    // Then every pull-up found on one view of the graph, as libpcap's
    // opt_blks does (its dominators and in-edges are not recomputed
    // between pull-ups).
    if (!spent() && pullup(root))
      changed = true;
    if (!changed)
      break;
  }
  return root;
}

int Dag::node(int test, int t, int f) {
  if (t == f && optimizing)
    return t;
  auto [it, inserted] = unique.try_emplace({test, t, f});
  if (!inserted && !it->second.empty())
    return it->second.front();
  it->second.push_back(nodes.size());
  nodes.push_back({test, t, f});
  return nodes.size() - 1;
}

void Dag::setSlot(int n, bool jt, int to) {
  Node &node = nodes[n];
  auto &old = unique[{node.test, node.jt, node.jf}];
  old.erase(std::find(old.begin(), old.end(), n));
  slot(n, jt) = to;
  auto &now = unique[{node.test, node.jt, node.jf}];
  now.insert(std::lower_bound(now.begin(), now.end(), n), n);
}

int Dag::fold(int child, int from, bool sense) {
  const Test &c = tests[nodes[child].test], &e = tests[nodes[from].test];
  if (c.code != e.code || c.rConst != e.rConst || c.aId != e.aId)
    return -1;
  if (c.rKey == e.rKey)
    return sense ? nodes[child].jt : nodes[child].jf;
  if (sense && c.code == Test::JEQ && c.rConst)
    return nodes[child].jf;
  return -1;
}

void Dag::reach(int root) {
  // A new generation marks nothing visited, without clearing.
  if (++generation == 0) {
    std::fill(stamp.begin(), stamp.end(), 0);
    generation = 1;
  }
  stamp.resize(nodes.size(), 0);
  local.resize(nodes.size(), -1);
  order.clear();
  // The recursive walk visit(n) { visit(jt); visit(jf); post(n); } with
  // an explicit stack: (node, successors visited).
  std::vector<std::pair<int, int>> stack;
  auto visit = [&](int n) {
    if (n >= 2 && stamp[n] != generation) {
      stamp[n] = generation;
      stack.push_back({n, 0});
    }
  };
  visit(root);
  while (!stack.empty()) {
    auto [n, done] = stack.back();
    if (done < 2) {
      stack.back().second = done + 1;
      visit(done == 0 ? nodes[n].jt : nodes[n].jf);
      continue;
    }
    order.push_back(n);
    stack.pop_back();
  }
  std::reverse(order.begin(), order.end());
  for (size_t i = 0; i < order.size(); ++i)
    local[order[i]] = i;
  work += order.size();
}

void Dag::shape(int root) {
  reach(root);
  size_t size = order.size();
  // Heights, successors first.
  sh.height.assign(size, 0);
  for (size_t i = size; i-- > 0;) {
    int h = 0;
    for (int c : {nodes[order[i]].jt, nodes[order[i]].jf})
      h = std::max(h, c < 2 ? 1 : sh.height[local[c]] + 1);
    sh.height[i] = h;
  }
  // Incoming edges, by the position of their node.
  sh.inStart.assign(size + 1, 0);
  for (int n : order)
    for (int c : {nodes[n].jt, nodes[n].jf})
      if (c >= 2)
        ++sh.inStart[local[c] + 1];
  for (size_t i = 0; i < size; ++i)
    sh.inStart[i + 1] += sh.inStart[i];
  sh.inEdges.resize(sh.inStart[size]);
  std::vector<int> fill(sh.inStart.begin(), sh.inStart.end() - 1);
  for (int n : order)
    for (int sense = 0; sense < 2; ++sense) {
      int c = sense == 0 ? nodes[n].jt : nodes[n].jf;
      if (c >= 2)
        sh.inEdges[fill[local[c]]++] = {n, sense};
    }
  // Immediate dominators (Cooper, Harvey and Kennedy; one pass, as the
  // graph is acyclic and dominators come first in the order).
  sh.idom.assign(size, -1);
  for (size_t i = 1; i < size; ++i) {
    int d = -1;
    for (int k = sh.inStart[i]; k < sh.inStart[i + 1]; ++k) {
      int p = local[sh.inEdges[k].first];
      if (d < 0) {
        d = p;
        continue;
      }
      while (d != p) {
        while (d > p)
          d = sh.idom[d];
        while (p > d)
          p = sh.idom[p];
      }
    }
    sh.idom[i] = d;
  }
  // Entry and exit times of a walk of the dominator tree: b dominates n
  // when n's interval is inside b's.
  std::vector<int> start(size + 1, 0), kids(size ? size - 1 : 0);
  for (size_t i = 1; i < size; ++i)
    ++start[sh.idom[i] + 1];
  for (size_t i = 0; i < size; ++i)
    start[i + 1] += start[i];
  std::vector<int> kidFill(start.begin(), start.end() - 1);
  for (size_t i = 1; i < size; ++i)
    kids[kidFill[sh.idom[i]]++] = i;
  sh.enter.assign(size, 0);
  sh.exit.assign(size, 0);
  if (!size)
    return;
  int clock = 0;
  std::vector<std::pair<int, int>> stack{{0, start[0]}};
  sh.enter[0] = clock++;
  while (!stack.empty()) {
    auto &[i, next] = stack.back();
    if (next == start[i + 1]) {
      sh.exit[i] = clock++;
      stack.pop_back();
      continue;
    }
    int kid = kids[next++];
    sh.enter[kid] = clock++;
    stack.push_back({kid, start[kid]});
  }
}

bool Dag::dominates(int b, int n) const {
  int x = local[b], y = local[n];
  return sh.enter[x] <= sh.enter[y] && sh.exit[y] <= sh.exit[x];
}

bool Dag::pullOne(int b, bool alongTrue) {
  int at = local[b];
  if (sh.inStart[at] == sh.inStart[at + 1])
    return false;
  llvm::ArrayRef<std::pair<int, int>> in(sh.inEdges.data() + sh.inStart[at],
                                         sh.inEdges.data() +
                                             sh.inStart[at + 1]);
  auto valueOf = [&](int n) { return tests[nodes[n].test].aId; };
  int val = valueOf(in[0].first);
  for (auto [p, sense] : in) {
    // The view may be older than an earlier pull-up of this pass: an edge
    // that no longer leads to `b` is left alone.
    if (valueOf(p) != val || slot(p, sense == 0) != b)
      return false;
  }
  auto other = [&](int n) { return alongTrue ? nodes[n].jf : nodes[n].jt; };
  auto dominated = [&](int n) { return reached(n) && dominates(b, n); };
  // diff: the slot holding the first test of another value.
  int diffNode = in[0].first;
  bool diffTrue = in[0].second == 0;
  bool atTop = true;
  for (;;) {
    int d = slot(diffNode, diffTrue);
    if (d < 2 || other(d) != other(b) || !dominated(d))
      return false;
    if (valueOf(d) != val)
      break;
    diffNode = d;
    diffTrue = alongTrue;
    atTop = false;
  }
  int diff = slot(diffNode, diffTrue);
  // same: the slot holding a later test of the value.
  int sameNode = diff;
  for (;;) {
    int s = slot(sameNode, alongTrue);
    if (s < 2 || other(s) != other(b) || !dominated(s))
      return false;
    if (valueOf(s) == val)
      break;
    sameNode = s;
  }
  int pull = slot(sameNode, alongTrue);
  setSlot(sameNode, alongTrue, slot(pull, alongTrue));
  setSlot(pull, alongTrue, diff);
  if (atTop) {
    // Copied: setSlot may move the nodes' entries, not the edges.
    llvm::SmallVector<std::pair<int, int>> edges(in.begin(), in.end());
    for (auto [p, sense] : edges)
      setSlot(p, sense == 0, pull);
  } else {
    setSlot(diffNode, diffTrue, pull);
  }
  return true;
}

bool Dag::pullup(int root) {
  shape(root);
  // Bottom up, as libpcap goes through its levels: by height, then by
  // position in the order.
  // A counting sort, stable.
  int highest = 0;
  for (int h : sh.height)
    highest = std::max(highest, h);
  std::vector<int> start(highest + 2, 0), byHeight(order.size());
  for (int h : sh.height)
    ++start[h + 1];
  for (int h = 0; h <= highest; ++h)
    start[h + 1] += start[h];
  for (size_t i = 0; i < order.size(); ++i)
    byHeight[start[sh.height[i]]++] = i;
  bool pulled = false;
  for (int position : byHeight) {
    int b = order[position];
    pulled |= pullOne(b, /*alongTrue=*/false);
    pulled |= pullOne(b, /*alongTrue=*/true);
  }
  return pulled;
}

int Dag::thread(int root, bool &changed) {
  reach(root);
  size_t size = order.size();
  // The edge-dominator tree. Edge 2 * i + sense leaves the node at
  // position i; its parent is the deepest edge dominating that node's
  // entry (-1: none), the meet of the node's incoming edges. Parents have
  // lower numbers, which the meet relies on.
  std::vector<int> parent(2 * size, -1), entry(size, -2);
  // Depths and jump pointers (Myers' skew-binary ones: a root jumps to
  // itself) make the meet logarithmic: chains of merges far below their
  // common dominator are common (10,000 'and not port N').
  std::vector<int> depth(2 * size, 0), jump(2 * size, 0);
  auto meet = [&](int x, int y) {
    if (depth[x] < depth[y])
      std::swap(x, y);
    while (depth[x] > depth[y]) {
      ++work;
      x = depth[jump[x]] >= depth[y] ? jump[x] : parent[x];
    }
    while (x != y) {
      ++work;
      if (parent[x] < 0)
        return -1; // two roots: no common dominating edge
      if (jump[x] != jump[y]) {
        x = jump[x];
        y = jump[y];
      } else {
        x = parent[x];
        y = parent[y];
      }
    }
    return x;
  };
  for (size_t i = 0; i < size; ++i) {
    int in = entry[i] == -2 ? -1 : entry[i];
    int n = order[i];
    for (int sense = 0; sense < 2; ++sense) {
      int e = 2 * i + sense;
      parent[e] = in;
      if (in < 0) {
        jump[e] = e;
      } else {
        depth[e] = depth[in] + 1;
        int j = jump[in];
        jump[e] =
            depth[in] - depth[j] == depth[j] - depth[jump[j]] ? jump[j] : in;
      }
      int succ = sense == 0 ? nodes[n].jt : nodes[n].jf;
      if (succ < 2)
        continue;
      int &into = entry[local[succ]];
      into = into == -2 ? e : (into < 0 ? -1 : meet(into, e));
    }
  }
  // Children of each edge, then a walk down the tree that keeps, per
  // test, the lowest dominating edge (as the node numbers go, which
  // decides between edges that would fold one test differently).
  std::vector<int> childStart(2 * size + 2, 0), children(2 * size);
  for (size_t e = 0; e < 2 * size; ++e)
    ++childStart[parent[e] + 2];
  for (size_t e = 1; e < childStart.size(); ++e)
    childStart[e] += childStart[e - 1];
  {
    std::vector<int> fill(childStart.begin(), childStart.end() - 1);
    for (size_t e = 0; e < 2 * size; ++e)
      children[fill[parent[e] + 1]++] = e;
  }
  lowestByTest.resize(tests.size());
  lowestTrueByValue.resize(aIds.size());
  auto top = [](const std::vector<int> &v) {
    return v.empty() ? std::numeric_limits<int>::max() : v.back();
  };
  auto push = [&](std::vector<int> &v, int e) {
    v.push_back(std::min(top(v), e));
  };
  std::vector<int> out(2 * size);
  // (edge, entered): children are visited between entering and leaving.
  std::vector<std::pair<int, bool>> stack;
  for (int k = childStart[0]; k < childStart[1]; ++k)
    stack.push_back({children[k], false});
  while (!stack.empty()) {
    auto [e, entered] = stack.back();
    int n = order[e / 2], sense = e % 2;
    const Test &own = tests[nodes[n].test];
    bool byValue = sense == 0 && own.code == Test::JEQ && own.rConst;
    if (entered) {
      lowestByTest[nodes[n].test].pop_back();
      if (byValue)
        lowestTrueByValue[own.aId].pop_back();
      stack.pop_back();
      continue;
    }
    stack.back().second = true;
    int global = 2 * n + sense;
    push(lowestByTest[nodes[n].test], global);
    if (byValue)
      push(lowestTrueByValue[own.aId], global);
    int v = sense == 0 ? nodes[n].jt : nodes[n].jf;
    while (v >= 2) {
      const Test &t = tests[nodes[v].test];
      int from = top(lowestByTest[nodes[v].test]);
      if (t.code == Test::JEQ && t.rConst)
        from = std::min(from, top(lowestTrueByValue[t.aId]));
      if (from == std::numeric_limits<int>::max())
        break;
      ++work;
      int r = fold(v, from / 2, from % 2 == 0);
      assert(r >= 0 && "a dominating edge of the same test or value folds");
      v = r;
      changed = true;
    }
    out[e] = v;
    for (int k = childStart[e + 1]; k < childStart[e + 2]; ++k)
      stack.push_back({children[k], false});
  }
  // Rebuild bottom-up (the true successor first), sharing equal nodes.
  std::vector<int> rebuilt(size, -1);
  auto result = [&](int n) { return n < 2 ? n : rebuilt[local[n]]; };
  if (root < 2)
    return root;
  std::vector<std::pair<int, int>> stack2{{root, 0}};
  while (!stack2.empty()) {
    auto [n, done] = stack2.back();
    int i = local[n];
    if (done == 0 && rebuilt[i] >= 0) {
      stack2.pop_back();
      continue;
    }
    if (done < 2) {
      stack2.back().second = done + 1;
      int c = out[2 * i + done];
      assert((c < 2 || reached(c)) && "threading stays in the graph");
      if (c >= 2 && rebuilt[local[c]] < 0)
        stack2.push_back({c, 0});
      continue;
    }
    int r = node(nodes[n].test, result(out[2 * i]), result(out[2 * i + 1]));
    if (r != n)
      changed = true;
    rebuilt[i] = r;
    stack2.pop_back();
  }
  return rebuilt[local[root]];
}

} // namespace netvm::pcapfilter::detail
