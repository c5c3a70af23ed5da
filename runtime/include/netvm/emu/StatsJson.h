//===- StatsJson.h - The emulator's statistics as JSON ----------*- C++ -*-===//
//
// The machine-readable report of a run: what netvm-emu --stats-json writes
// and the C API's netvm_emu_stats_json returns. Objects have their keys in
// sorted order and numbers are printed the same way on every run, so two
// runs compare with cmp (docs/me-isa.md, "Statistics"). Plain C++17, no
// LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_EMU_STATSJSON_H
#define NETVM_EMU_STATSJSON_H

#include <string>

namespace netvm::me {

struct Stats;

/// The statistics as JSON indented by two spaces, without a final newline.
std::string statsToJson(const Stats &stats);

} // namespace netvm::me

#endif // NETVM_EMU_STATSJSON_H
