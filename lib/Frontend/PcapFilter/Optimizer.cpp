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
           (v->ipHeader ? "x" + std::to_string(v->ipHeaderAt) + "+"
                        : std::string()) +
           (v->index ? keyOf(v->index) + "+" : "") + std::to_string(v->k) +
           ":" + std::to_string(v->size) + "]";
  case Val::Binary:
    return "(" + keyOf(v->a) + v->op + keyOf(v->b) + ")";
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
    return t;
  case Pred::False:
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
    return r ? t : f;
  }
  Test test{code, a, b, keyOf(a), keyOf(b), b->kind == Val::Const};
  std::string key = std::to_string(code) + test.aKey + "?" + test.rKey;
  auto [it, inserted] = testIds.try_emplace(key, tests.size());
  if (inserted)
    tests.push_back(std::move(test));
  return node(it->second, t, f);
}

int Dag::optimize(int root) {
  for (unsigned round = 0; round < 256; ++round) {
    bool changed = false;
    root = thread(root, changed);
    // One pull-up at a time, each followed by a clean-up.
    for (unsigned pulls = 0; pulls < 256 && pullup(root); ++pulls) {
      bool ignored = false;
      root = thread(root, ignored);
      changed = true;
    }
    if (!changed)
      break;
  }
  return root;
}

int Dag::node(int test, int t, int f) {
  if (t == f && optimizing)
    return t;
  auto [it, inserted] = unique.try_emplace({test, t, f}, nodes.size());
  if (inserted)
    nodes.push_back({test, t, f});
  return it->second;
}

int Dag::fold(int child, int from, bool sense) {
  const Test &c = tests[nodes[child].test], &e = tests[nodes[from].test];
  if (c.code != e.code || c.rConst != e.rConst || c.aKey != e.aKey)
    return -1;
  if (c.rKey == e.rKey)
    return sense ? nodes[child].jt : nodes[child].jf;
  if (sense && c.code == Test::JEQ && c.rConst)
    return nodes[child].jf;
  return -1;
}

Dag::Shape Dag::shape(int root) {
  Shape sh;
  std::vector<int> state(nodes.size(), 0);
  std::function<void(int)> visit = [&](int n) {
    if (n < 2 || state[n])
      return;
    state[n] = 1;
    visit(nodes[n].jt);
    visit(nodes[n].jf);
    int h = 0;
    for (int c : {nodes[n].jt, nodes[n].jf})
      h = std::max(h, c < 2 ? 1 : sh.height[c] + 1);
    sh.height[n] = h;
    sh.order.push_back(n);
  };
  visit(root);
  std::reverse(sh.order.begin(), sh.order.end());
  for (int n : sh.order)
    for (int sense = 0; sense < 2; ++sense) {
      int c = sense == 0 ? nodes[n].jt : nodes[n].jf;
      if (c >= 2)
        sh.in[c].push_back({n, sense});
    }
  for (int n : sh.order) {
    std::set<int> d;
    bool firstPred = true;
    for (auto [p, sense] : sh.in[n]) {
      (void)sense;
      if (firstPred) {
        d = sh.dom[p];
        firstPred = false;
      } else {
        std::set<int> both;
        std::set_intersection(d.begin(), d.end(), sh.dom[p].begin(),
                              sh.dom[p].end(),
                              std::inserter(both, both.begin()));
        d = std::move(both);
      }
    }
    d.insert(n);
    sh.dom[n] = std::move(d);
  }
  return sh;
}

bool Dag::pullOne(int b, const Shape &sh, bool alongTrue) {
  auto inIt = sh.in.find(b);
  if (inIt == sh.in.end() || inIt->second.empty())
    return false;
  const auto &in = inIt->second;
  const std::string &val = tests[nodes[in[0].first].test].aKey;
  for (auto [p, sense] : in) {
    (void)sense;
    if (tests[nodes[p].test].aKey != val)
      return false;
  }
  auto other = [&](int n) { return alongTrue ? nodes[n].jf : nodes[n].jt; };
  auto dominated = [&](int n) {
    auto it = sh.dom.find(n);
    return it != sh.dom.end() && it->second.count(b);
  };
  // diff: the slot holding the first test of another value.
  int diffNode = in[0].first;
  bool diffTrue = in[0].second == 0;
  bool atTop = true;
  for (;;) {
    int d = slot(diffNode, diffTrue);
    if (d < 2 || other(d) != other(b) || !dominated(d))
      return false;
    if (tests[nodes[d].test].aKey != val)
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
    if (tests[nodes[s].test].aKey == val)
      break;
    sameNode = s;
  }
  int pull = slot(sameNode, alongTrue);
  slot(sameNode, alongTrue) = slot(pull, alongTrue);
  slot(pull, alongTrue) = diff;
  if (atTop) {
    for (auto [p, sense] : in)
      slot(p, sense == 0) = pull;
  } else {
    slot(diffNode, diffTrue) = pull;
  }
  return true;
}

bool Dag::pullup(int root) {
  Shape sh = shape(root);
  // Bottom up, as libpcap goes through its levels.
  // Sorted by (height, position in the order): a stable sort by height.
  std::vector<std::pair<int, size_t>> byHeight;
  for (size_t i = 0; i < sh.order.size(); ++i)
    byHeight.emplace_back(sh.height[sh.order[i]], i);
  std::sort(byHeight.begin(), byHeight.end());
  for (auto [height, position] : byHeight) {
    int b = sh.order[position];
    // Edits make node numbers stand for other graphs: copy on write.
    if (pullOne(b, sh, /*alongTrue=*/false) ||
        pullOne(b, sh, /*alongTrue=*/true)) {
      unique.clear();
      for (size_t n = 2; n < nodes.size(); ++n)
        unique.try_emplace({nodes[n].test, nodes[n].jt, nodes[n].jf}, n);
      return true;
    }
  }
  return false;
}

int Dag::thread(int root, bool &changed) {
  // Reachable nodes in topological order (successors after).
  std::vector<int> order, state(nodes.size(), 0);
  std::function<void(int)> visit = [&](int n) {
    if (n < 2 || state[n])
      return;
    state[n] = 1;
    visit(nodes[n].jt);
    visit(nodes[n].jf);
    order.push_back(n);
  };
  visit(root);
  std::reverse(order.begin(), order.end());
  // Edge e = 2 * node + (sense ? 0 : 1); dominating edges of each node's
  // entry: the intersection over its incoming edges.
  std::map<int, std::set<int>> indom;
  std::map<int, bool> seen;
  std::vector<std::set<int>> edom(2 * nodes.size());
  for (int n : order) {
    std::set<int> &in = indom[n];
    for (int sense = 0; sense < 2; ++sense) {
      int e = 2 * n + sense;
      edom[e] = in;
      edom[e].insert(e);
      int succ = sense == 0 ? nodes[n].jt : nodes[n].jf;
      if (succ < 2)
        continue;
      if (!seen[succ]) {
        indom[succ] = edom[e];
        seen[succ] = true;
      } else {
        std::set<int> both;
        std::set_intersection(indom[succ].begin(), indom[succ].end(),
                              edom[e].begin(), edom[e].end(),
                              std::inserter(both, both.begin()));
        indom[succ] = std::move(both);
      }
    }
  }
  // Thread every edge.
  std::map<int, std::pair<int, int>> succs;
  for (int n : order) {
    int out[2] = {nodes[n].jt, nodes[n].jf};
    for (int sense = 0; sense < 2; ++sense) {
      int v = out[sense];
      for (bool again = true; again && v >= 2;) {
        again = false;
        for (int e : edom[2 * n + sense]) {
          int r = fold(v, e / 2, e % 2 == 0);
          if (r >= 0) {
            v = r;
            again = changed = true;
            break;
          }
        }
      }
      out[sense] = v;
    }
    succs[n] = {out[0], out[1]};
  }
  // Rebuild bottom-up.
  std::map<int, int> rebuilt;
  std::function<int(int)> rebuild = [&](int n) -> int {
    if (n < 2)
      return n;
    auto it = rebuilt.find(n);
    if (it != rebuilt.end())
      return it->second;
    auto [t, f] = succs.count(n)
                      ? succs[n]
                      : std::pair<int, int>{nodes[n].jt, nodes[n].jf};
    int r = node(nodes[n].test, rebuild(t), rebuild(f));
    if (r != n)
      changed = true;
    rebuilt[n] = r;
    return r;
  };
  return rebuild(root);
}

} // namespace netvm::pcapfilter::detail
