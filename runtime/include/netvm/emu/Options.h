//===- Options.h - Named options of the emulated machine --------*- C++ -*-===//
//
// One vocabulary for configuring the emulator from text: netvm-emu's
// command-line options, the C API's netvm_emu_set_option and Python's
// netvm.emulate(options=...) all apply a named option with a textual value
// to a MachineConfig here, with the same names, value grammar and error
// messages. docs/me-isa.md ("Machine parameters") lists them. Plain C++17,
// no LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_EMU_OPTIONS_H
#define NETVM_EMU_OPTIONS_H

#include "netvm/emu/Machine.h"

#include <cstddef>
#include <string>
#include <string_view>

namespace netvm::me {

/// A machine option: its name ("latency"), the shape of its value
/// ("UNIT=CYCLES[,...]") and a one-line description.
struct MachineOptionInfo {
  const char *name;
  const char *value;
  const char *help;
};

/// The machine options, in a fixed order: index 0 to count - 1.
size_t machineOptionCount();
const MachineOptionInfo &machineOption(size_t index);

/// The option called `name`, or null.
const MachineOptionInfo *findMachineOption(std::string_view name);

/// Applies option `name` with `value` to `config`. On failure `config` is
/// unchanged and `error` says which option and what it accepts, spelling
/// the option `spelling` + name ("bad --latency 'flash=3' (...)" with
/// spelling "--"). The values of list options (latency, controller) are
/// comma-separated items; each application changes only what it names.
bool applyMachineOption(MachineConfig &config, std::string_view name,
                        std::string_view value, std::string &error,
                        std::string_view spelling = "");

} // namespace netvm::me

#endif // NETVM_EMU_OPTIONS_H
