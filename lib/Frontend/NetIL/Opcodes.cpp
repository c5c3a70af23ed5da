//===- Opcodes.cpp - The NetIL opcode table
//-----------------------------------===//
//
// Lookup of mnemonics and the stack effects and control-flow properties of
// NetIL instructions.
//
//===----------------------------------------------------------------------===//

#include "AST.h"

#include "llvm/ADT/StringMap.h"

using namespace netvm::netil;

static const OpcodeInfo kOpcodes[] = {
#define NETIL_OPCODE(Id, Name, Code, Operand, Pops, Pushes)                    \
  {Opcode::Id, Name, Code, OperandKind::Operand, Pops, Pushes, ""},
#define NETIL_UNSUPPORTED(Id, Name, Code, Operand, Reason)                     \
  {Opcode::Id, Name, Code, OperandKind::Operand, 0, 0, Reason},
#include "Opcodes.def"
};

llvm::ArrayRef<OpcodeInfo> netvm::netil::allOpcodes() { return kOpcodes; }

const OpcodeInfo *netvm::netil::lookupOpcode(llvm::StringRef mnemonic) {
  static const llvm::StringMap<const OpcodeInfo *> table = [] {
    llvm::StringMap<const OpcodeInfo *> map;
    for (const OpcodeInfo &info : kOpcodes)
      map[info.mnemonic] = &info;
    return map;
  }();
  return table.lookup(mnemonic);
}

std::pair<unsigned, unsigned> Instr::stackEffect() const {
  switch (op()) {
  case Opcode::POP_I:
    return {imm, 0};
  case Opcode::XFINDBITSET:
    return {imm, imm};
  case Opcode::XMFINDBITSET:
    // The mask on top plus N words; the N words are replaced.
    return {imm + 1, imm};
  case Opcode::HASH:
    return {imm, 1};
  default:
    return {static_cast<unsigned>(info->pops),
            static_cast<unsigned>(info->pushes)};
  }
}

bool Instr::endsFlow() const {
  switch (op()) {
  case Opcode::JUMP:
  case Opcode::JUMPW:
  case Opcode::SWITCH:
  case Opcode::RET:
  case Opcode::SNDPKT:
  case Opcode::EXIT:
    return true;
  default:
    return false;
  }
}

bool Instr::isBranch() const {
  switch (op()) {
  case Opcode::JCMPEQ:
  case Opcode::JCMPNEQ:
  case Opcode::JCMPG:
  case Opcode::JCMPGE:
  case Opcode::JCMPL:
  case Opcode::JCMPLE:
  case Opcode::JCMPG_S:
  case Opcode::JCMPGE_S:
  case Opcode::JCMPL_S:
  case Opcode::JCMPLE_S:
  case Opcode::JEQ:
  case Opcode::JNE:
  case Opcode::JUMP:
  case Opcode::JUMPW:
  case Opcode::SWITCH:
  case Opcode::JFLDEQ:
  case Opcode::JFLDNEQ:
  case Opcode::JFLDLT:
  case Opcode::JFLDGT:
  case Opcode::JUMPCHECKSUM:
    return true;
  default:
    return false;
  }
}
