// Basic blocks of a decoded function.
#pragma once
#include <vector>

#include "bytecode/instructions.h"

namespace pijit::bytecode {

struct Block {
  int32_t begin, end;                // instruction index range [begin, end)
  std::vector<int32_t> successors;   // block indices
};

struct Cfg {
  std::vector<Block> blocks;
  std::vector<int32_t> block_of;     // per instruction
};

Cfg BuildCfg(const std::vector<Instr>& code);

}  // namespace pijit::bytecode
