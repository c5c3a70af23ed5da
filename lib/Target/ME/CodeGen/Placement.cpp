//===- Placement.cpp - A placement of NetPEs on MEs, given by hand --------===//
//
// The syntax of netc --me-placement (docs/me-backend.md, "Placement"):
//
//   spec   := item (';' item)*
//   item   := 'rx=' N            receive MEs (default 1)
//           | names ['*' N]      a stage: its NetPEs on N MEs (default 1)
//           | '*' N              one stage of every NetPE on N MEs
//   names  := name (',' name)*
//
// e.g. "rx=2;ip,count*3;tail": two receive MEs, the stage {ip, count} on
// three MEs (replicas), the stage {tail} on one.
//
//===----------------------------------------------------------------------===//

#include "netvm/Target/ME/CodeGen.h"

#include "llvm/ADT/SmallVector.h"

using namespace netvm::me;

bool netvm::me::parsePlacement(llvm::StringRef spec, Placement &placement,
                               std::string &error) {
  placement = Placement();
  auto number = [&](llvm::StringRef text, llvm::StringRef what,
                    unsigned &value) {
    text = text.trim();
    if (text.getAsInteger(10, value) || value == 0 || value > 8) {
      error = "the placement's " + what.str() +
              " must be a number from 1 "
              "to 8, not '" +
              text.str() + "'";
      return false;
    }
    return true;
  };
  llvm::SmallVector<llvm::StringRef> items;
  spec.split(items, ';', -1, /*KeepEmpty=*/false);
  if (items.empty()) {
    error = "the placement is empty";
    return false;
  }
  bool sawRx = false;
  for (llvm::StringRef item : items) {
    item = item.trim();
    if (item.empty())
      continue;
    if (item.consume_front("rx=")) {
      if (sawRx) {
        error = "the placement gives rx= twice";
        return false;
      }
      sawRx = true;
      if (!number(item, "number of receive MEs", placement.receiveMEs))
        return false;
      continue;
    }
    StagePlacement stage;
    auto [names, mes] = item.split('*');
    if (item.contains('*') &&
        !number(mes, "number of MEs of a stage", stage.mes))
      return false;
    llvm::SmallVector<llvm::StringRef> list;
    names.split(list, ',', -1, /*KeepEmpty=*/true);
    for (llvm::StringRef name : list) {
      name = name.trim();
      if (name.empty() && list.size() == 1)
        break; // "*N": every NetPE
      if (name.empty() ||
          name.find_first_of("=* \t") != llvm::StringRef::npos) {
        error = "the placement has a stage with a bad NetPE name: '" +
                item.str() + "'";
        return false;
      }
      stage.pes.push_back(name.str());
    }
    if (stage.pes.empty() && items.size() - sawRx > 1) {
      error = "a stage of every NetPE ('*N') must be the placement's only "
              "stage";
      return false;
    }
    placement.stages.push_back(std::move(stage));
  }
  return true;
}
