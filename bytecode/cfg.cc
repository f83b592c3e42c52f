#include "bytecode/cfg.h"

#include <algorithm>

namespace pijit::bytecode {

Cfg BuildCfg(const std::vector<Instr>& code) {
  const int32_t n = static_cast<int32_t>(code.size());
  std::vector<bool> leader(n + 1, false);
  leader[0] = true;
  for (int32_t i = 0; i < n; ++i) {
    if (code[i].target >= 0) leader[code[i].target] = true;
    if (code[i].target >= 0 || IsBlockEnd(code[i].op)) leader[i + 1] = true;
  }
  Cfg cfg;
  cfg.block_of.assign(n, -1);
  for (int32_t i = 0; i < n;) {
    int32_t j = i + 1;
    while (j < n && !leader[j]) ++j;
    for (int32_t k = i; k < j; ++k) cfg.block_of[k] = static_cast<int32_t>(cfg.blocks.size());
    cfg.blocks.push_back({i, j, {}});
    i = j;
  }
  for (Block& b : cfg.blocks) {
    const Instr& last = code[b.end - 1];
    if (last.target >= 0) b.successors.push_back(cfg.block_of[last.target]);
    if (!IsBlockEnd(last.op) && b.end < n) b.successors.push_back(cfg.block_of[b.end]);
  }
  return cfg;
}

}  // namespace pijit::bytecode
