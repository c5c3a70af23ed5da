//===- Coprocessor.h - NetVM virtual coprocessors ---------------*- C++ -*-===//
//
// The virtual coprocessors a NetPE can use (paper section 3.1.3): black boxes
// with numbered 32-bit registers, operations that act on the registers and
// on internal state, and an optional initialisation from the NetPE's
// initialised data. Every execution path (the reference interpreter and the
// native runtime) uses these implementations, so they behave identically.
//
// Plain C++17 without LLVM, so that the native runtime can link it.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_RUNTIME_COPROCESSOR_H
#define NETVM_RUNTIME_COPROCESSOR_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace netvm::rt {

/// The current exchange buffer as a coprocessor sees it (copro.exbuf).
struct ExchangeBufferView {
  const uint8_t *packet = nullptr;
  uint32_t packetLength = 0;
};

class Coprocessor {
public:
  virtual ~Coprocessor();

  /// The name NetIL programs use in `.use_coprocessor`.
  virtual std::string_view name() const = 0;
  virtual uint32_t numRegisters() const = 0;

  /// copro.init: initialise from `size` bytes of initialised data. Returns
  /// false if the coprocessor rejects the data; `status` is pushed on the
  /// NetIL stack otherwise.
  virtual bool init(const uint8_t *data, size_t size, uint32_t &status);
  /// copro.in / copro.out: false for a register that does not exist.
  virtual bool read(uint32_t reg, uint32_t &value);
  virtual bool write(uint32_t reg, uint32_t value);
  /// copro.invoke: false for an unknown operation or a failed one (the
  /// handler then raises the `coprocessor` exception).
  virtual bool invoke(uint32_t operation) = 0;
  /// copro.exbuf: the exchange buffer the next operations may look at.
  virtual void attach(const ExchangeBufferView &buffer) { exbuf = buffer; }

  /// A short description of the last failure, for diagnostics.
  const std::string &lastError() const { return error; }

protected:
  std::vector<uint32_t> registers;
  ExchangeBufferView exbuf;
  std::string error;
};

/// A new instance of the coprocessor called `name`, or null if netvm has no
/// such coprocessor.
std::unique_ptr<Coprocessor> createCoprocessor(std::string_view name);

/// The names createCoprocessor() accepts.
const std::vector<std::string_view> &availableCoprocessors();

} // namespace netvm::rt

#endif // NETVM_RUNTIME_COPROCESSOR_H
