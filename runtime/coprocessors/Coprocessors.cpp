//===- Coprocessors.cpp - NetVM virtual coprocessors --------------------------===//
//
// The coprocessors netvm provides:
//
//  lookup       an exact-match table from keys of 1..16 words to a word
//               (NetBee's "lookup" coprocessor interface).
//  associative  a TCAM-like longest-prefix-match table from byte-string keys
//               to byte-string values (the interface documented by NetBee's
//               associative test program).
//
// The register maps and operations are documented in docs/netil.md.
//
//===----------------------------------------------------------------------===//

#include "netvm/Coprocessor.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>

using namespace netvm::rt;

Coprocessor::~Coprocessor() = default;

bool Coprocessor::init(const uint8_t *, size_t, uint32_t &status) {
  status = 0;
  return true;
}

bool Coprocessor::read(uint32_t reg, uint32_t &value) {
  if (reg >= registers.size()) {
    error = "no register " + std::to_string(reg);
    return false;
  }
  value = registers[reg];
  return true;
}

bool Coprocessor::write(uint32_t reg, uint32_t value) {
  if (reg >= registers.size()) {
    error = "no register " + std::to_string(reg);
    return false;
  }
  registers[reg] = value;
  return true;
}

namespace {

/// Exact-match lookup table.
///
/// Registers: R0 data (read/write), R1 valid (read).
/// Operations:
///   0 init        empty the table and the pending key
///   1 add_data    append R0 to the pending key (at most 16 words)
///   2 add_value   map the pending key to R0, then clear the pending key
///   3 read_value  look up the pending key, or [R0] if none is pending;
///                 on a hit R0 = value and R1 = 1, on a miss R1 = 0; the
///                 pending key is cleared
///   4 reset       clear the pending key
class LookupCoprocessor final : public Coprocessor {
public:
  LookupCoprocessor() { registers.assign(2, 0); }
  std::string_view name() const override { return "lookup"; }
  uint32_t numRegisters() const override { return 2; }

  bool invoke(uint32_t operation) override {
    switch (operation) {
    case 0:
      table.clear();
      key.clear();
      return true;
    case 1:
      if (key.size() == 16) {
        error = "lookup key longer than 16 words";
        return false;
      }
      key.push_back(registers[0]);
      return true;
    case 2:
      if (key.empty()) {
        error = "add_value without a key (use add_data first)";
        return false;
      }
      table[key] = registers[0];
      key.clear();
      return true;
    case 3: {
      if (key.empty())
        key.push_back(registers[0]);
      auto it = table.find(key);
      if (it != table.end()) {
        registers[0] = it->second;
        registers[1] = 1;
      } else {
        registers[1] = 0;
      }
      key.clear();
      return true;
    }
    case 4:
      key.clear();
      return true;
    default:
      error = "unknown lookup operation " + std::to_string(operation);
      return false;
    }
  }

private:
  std::map<std::vector<uint32_t>, uint32_t> table;
  std::vector<uint32_t> key;
};

/// Longest-prefix-match associative memory (TCAM + SRAM).
///
/// Registers: R0 table (0..15), R1 key length in bytes (0..32), R2 value
/// length in bytes (0..32; after a lookup, the length of the value found, 0
/// on a miss), R3..R10 key bytes, R11..R19 value bytes, each register
/// holding four bytes most significant first.
/// Operations:
///   0 reset   empty every table
///   1 insert  map the first R1 key bytes to the first R2 value bytes in
///             table R0 (replacing an equal key)
///   2 lookup  find, in table R0, the longest inserted key that is a prefix
///             of the first R1 key bytes; copy its value to R11.. and its
///             length to R2 (on a miss R2 = 0 and R11.. are zero)
class AssociativeCoprocessor final : public Coprocessor {
  static constexpr uint32_t kTables = 16, kMaxBytes = 32;
  static constexpr uint32_t kKeyReg = 3, kValueReg = 11, kRegs = 20;

public:
  AssociativeCoprocessor() { registers.assign(kRegs, 0); }
  std::string_view name() const override { return "associative"; }
  uint32_t numRegisters() const override { return kRegs; }

  bool invoke(uint32_t operation) override {
    switch (operation) {
    case 0:
      for (auto &t : tables)
        t.clear();
      return true;
    case 1:
    case 2: {
      uint32_t table = registers[0], keyLen = registers[1];
      if (table >= kTables || keyLen > kMaxBytes) {
        error = table >= kTables ? "associative table " +
                                       std::to_string(table) + " out of range"
                                 : "associative key longer than 32 bytes";
        return false;
      }
      std::vector<uint8_t> key = bytesOf(kKeyReg, keyLen);
      if (operation == 1) {
        uint32_t valueLen = registers[2];
        if (valueLen > kMaxBytes) {
          error = "associative value longer than 32 bytes";
          return false;
        }
        tables[table][key] = bytesOf(kValueReg, valueLen);
        return true;
      }
      const std::vector<uint8_t> *best = nullptr;
      size_t bestLen = 0;
      for (auto &[entryKey, value] : tables[table]) {
        if (entryKey.size() > key.size() || (best && entryKey.size() < bestLen))
          continue;
        if (std::equal(entryKey.begin(), entryKey.end(), key.begin())) {
          best = &value;
          bestLen = entryKey.size();
        }
      }
      std::fill(registers.begin() + kValueReg, registers.end(), 0);
      registers[2] = best ? static_cast<uint32_t>(best->size()) : 0;
      if (best)
        for (size_t i = 0; i < best->size(); ++i)
          registers[kValueReg + i / 4] |= static_cast<uint32_t>((*best)[i])
                                          << (24 - 8 * (i % 4));
      return true;
    }
    default:
      error = "unknown associative operation " + std::to_string(operation);
      return false;
    }
  }

private:
  std::vector<uint8_t> bytesOf(uint32_t firstReg, uint32_t len) const {
    std::vector<uint8_t> bytes(len);
    for (uint32_t i = 0; i < len; ++i)
      bytes[i] =
          static_cast<uint8_t>(registers[firstReg + i / 4] >> (24 - 8 * (i % 4)));
    return bytes;
  }

  std::array<std::map<std::vector<uint8_t>, std::vector<uint8_t>>, kTables>
      tables;
};

} // namespace

std::unique_ptr<Coprocessor> netvm::rt::createCoprocessor(std::string_view name) {
  if (name == "lookup")
    return std::make_unique<LookupCoprocessor>();
  if (name == "associative")
    return std::make_unique<AssociativeCoprocessor>();
  return nullptr;
}

const std::vector<std::string_view> &netvm::rt::availableCoprocessors() {
  static const std::vector<std::string_view> names = {"associative", "lookup"};
  return names;
}
