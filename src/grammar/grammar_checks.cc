#include "grammar/grammar_checks.h"

#include <algorithm>
#include <vector>

namespace lumen::grammar {
namespace {

// Rules that can match the empty string (fixpoint over the alternatives).
std::vector<bool> nullable_rules(const Grammar& g) {
  std::vector<bool> nullable(g.rules.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < g.rules.size(); ++r) {
      if (nullable[r]) continue;
      for (uint32_t a = g.rules[r].alternatives_begin; a < g.rules[r].alternatives_end && !nullable[r]; ++a) {
        uint32_t pos = g.alternative_starts[a];
        while (g.elements[pos].kind == ElementKind::kRuleRef && nullable[g.elements[pos].rule]) ++pos;
        if (g.elements[pos].kind == ElementKind::kEnd) {
          nullable[r] = true;
          changed = true;
        }
      }
    }
  }
  return nullable;
}

struct Edge {
  uint32_t to;
  bool pushes;  // something follows the reference in its alternative
};

}  // namespace

void check_no_left_recursion(const Grammar& g, std::string_view text) {
  const size_t n = g.rules.size();
  std::vector<bool> nullable = nullable_rules(g);
  // Edges A -> B: B can be entered from A before A has consumed anything.
  std::vector<std::vector<Edge>> edges(n);
  for (size_t r = 0; r < n; ++r) {
    for (uint32_t a = g.rules[r].alternatives_begin; a < g.rules[r].alternatives_end; ++a) {
      for (uint32_t pos = g.alternative_starts[a]; g.elements[pos].kind == ElementKind::kRuleRef; ++pos) {
        const Element& e = g.elements[pos];
        edges[r].push_back({e.rule, g.elements[pos + 1].kind != ElementKind::kEnd});
        if (!nullable[e.rule]) break;
      }
    }
  }
  // Strongly connected components (Tarjan's algorithm, iterative: rule chains can be long).
  std::vector<int> index(n, -1), low(n, 0), component(n, -1);
  std::vector<bool> on_stack(n, false);
  std::vector<uint32_t> stack;
  std::vector<std::pair<uint32_t, size_t>> call;  // (rule, next edge)
  int counter = 0, components = 0;
  for (uint32_t start = 0; start < n; ++start) {
    if (index[start] >= 0) continue;
    call.push_back({start, 0});
    while (!call.empty()) {
      auto& [v, next] = call.back();
      if (next == 0 && index[v] < 0) {
        index[v] = low[v] = counter++;
        stack.push_back(v);
        on_stack[v] = true;
      }
      if (next < edges[v].size()) {
        uint32_t w = edges[v][next++].to;
        if (index[w] < 0) {
          call.push_back({w, 0});
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      if (low[v] == index[v]) {
        uint32_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          component[w] = components;
        } while (w != v);
        ++components;
      }
      uint32_t done = v;
      call.pop_back();
      if (!call.empty()) low[call.back().first] = std::min(low[call.back().first], low[done]);
    }
  }
  for (size_t r = 0; r < n; ++r)
    for (const Edge& e : edges[r])
      if (e.pushes && component[e.to] == component[r])
        throw_grammar_error(text, g.rules[r].offset, "left recursion: rule '" + g.rules[r].name +
                                                         "' can reach itself without matching anything");
}

}  // namespace lumen::grammar
