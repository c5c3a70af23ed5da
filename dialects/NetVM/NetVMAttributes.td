//===- NetVMAttributes.td - Enumerations of the netvm dialect -*- tablegen -*-===//
//
// The enumerations that appear as keywords in netvm operations: memory
// spaces, handler and port kinds, exception kinds and the variants of the
// bit, field-comparison, timestamp and CRC operations.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_ATTRIBUTES_TD
#define NETVM_ATTRIBUTES_TD

include "NetVMDialect.td"
include "mlir/IR/EnumAttr.td"

def NetVM_MemSpace : I32Enum<"MemSpace", "a NetVM memory space", [
    I32EnumCase<"Packet", 0, "packet">,
    I32EnumCase<"Info", 1, "info">,
    I32EnumCase<"Data", 2, "data">,
    I32EnumCase<"Shared", 3, "shared">,
    I32EnumCase<"InitData", 4, "initdata">
  ]> {
  let cppNamespace = "::netvm";
  let description = [{
    - `packet`: the bytes of the packet in the current exchange buffer; its
      size is the packet length.
    - `info`: the info memory of the current exchange buffer, zeroed when the
      packet enters the application and carried along with it.
    - `data`: the NetPE's private, persistent data memory.
    - `shared`: the application-wide shared memory.
    - `initdata`: the NetPE's read-only initialised data segment (NetIL's
      `.data` segment).
  }];
}
def NetVM_MemSpaceAttr : EnumAttr<NetVM_Dialect, NetVM_MemSpace, "mem">;

def NetVM_HandlerKind : I32Enum<"HandlerKind", "a NetPE handler kind", [
    I32EnumCase<"Init", 0, "init">,
    I32EnumCase<"Push", 1, "push">,
    I32EnumCase<"Pull", 2, "pull">
  ]> {
  let cppNamespace = "::netvm";
}
def NetVM_HandlerKindAttr : EnumAttr<NetVM_Dialect, NetVM_HandlerKind, "handler">;

def NetVM_PortKind : I32Enum<"PortKind", "a NetPE port kind", [
    I32EnumCase<"PushInput", 0, "push_input">,
    I32EnumCase<"PushOutput", 1, "push_output">,
    I32EnumCase<"PullInput", 2, "pull_input">,
    I32EnumCase<"PullOutput", 3, "pull_output">
  ]> {
  let cppNamespace = "::netvm";
}
def NetVM_PortKindAttr : EnumAttr<NetVM_Dialect, NetVM_PortKind, "port">;

def NetVM_ExceptionKind : I32Enum<"ExceptionKind", "a NetVM exception kind", [
    I32EnumCase<"PacketBounds", 0, "packet_bounds">,
    I32EnumCase<"InfoBounds", 1, "info_bounds">,
    I32EnumCase<"DataBounds", 2, "data_bounds">,
    I32EnumCase<"SharedBounds", 3, "shared_bounds">,
    I32EnumCase<"InitDataBounds", 4, "initdata_bounds">,
    I32EnumCase<"DivisionByZero", 5, "division_by_zero">,
    I32EnumCase<"Watchdog", 6, "watchdog">,
    I32EnumCase<"Coprocessor", 7, "coprocessor">,
    I32EnumCase<"NoExchangeBuffer", 8, "no_exbuf">,
    I32EnumCase<"Exit", 9, "exit">
  ]> {
  let cppNamespace = "::netvm";
  let description = [{
    Why a handler stopped abnormally. `*_bounds`: a memory access outside its
    memory (with no current exchange buffer, the packet and info memories
    are empty, so their accesses raise these too); `division_by_zero`: `mod`
    by zero; `watchdog`: the loop budget of one packet ran out;
    `coprocessor`: a coprocessor rejected an operation; `no_exbuf`: sending,
    or handing to a coprocessor, with no current exchange buffer; `exit`:
    NetIL's `exit` instruction.
  }];
}
def NetVM_ExceptionKindAttr
    : EnumAttr<NetVM_Dialect, NetVM_ExceptionKind, "exception">;

def NetVM_BitOpKind : I32Enum<"BitOpKind", "a single-bit operation", [
    I32EnumCase<"Set", 0, "set">,
    I32EnumCase<"Clear", 1, "clear">,
    I32EnumCase<"Flip", 2, "flip">,
    I32EnumCase<"Test", 3, "test">,
    I32EnumCase<"TestNot", 4, "testn">
  ]> {
  let cppNamespace = "::netvm";
}
def NetVM_BitOpKindAttr : EnumAttr<NetVM_Dialect, NetVM_BitOpKind, "bitop">;

def NetVM_FieldCmpKind : I32Enum<"FieldCmpKind", "a packet field comparison", [
    I32EnumCase<"Eq", 0, "eq">,
    I32EnumCase<"Ne", 1, "ne">,
    I32EnumCase<"Lt", 2, "lt">,
    I32EnumCase<"Gt", 3, "gt">
  ]> {
  let cppNamespace = "::netvm";
}
def NetVM_FieldCmpKindAttr
    : EnumAttr<NetVM_Dialect, NetVM_FieldCmpKind, "fieldcmp">;

def NetVM_TimeUnit : I32Enum<"TimeUnit", "a timestamp part", [
    I32EnumCase<"Seconds", 0, "seconds">,
    I32EnumCase<"Microseconds", 1, "microseconds">
  ]> {
  let cppNamespace = "::netvm";
}
def NetVM_TimeUnitAttr : EnumAttr<NetVM_Dialect, NetVM_TimeUnit, "time">;

def NetVM_CrcKind : I32Enum<"CrcKind", "a CRC algorithm", [
    I32EnumCase<"Crc32", 0, "crc32">,
    I32EnumCase<"Crc32c", 1, "crc32c">
  ]> {
  let cppNamespace = "::netvm";
  let description = [{
    `crc32`: CRC-32 of IEEE 802.3 (reflected, polynomial 0x04C11DB7, initial
    value and final XOR 0xFFFFFFFF); `crc32c`: CRC-32C (Castagnoli,
    polynomial 0x1EDC6F41, same conventions). NetIL selects them with the
    immediate of `crc.calc`/`crc.calcpkt` (0 and 1).
  }];
}
def NetVM_CrcKindAttr : EnumAttr<NetVM_Dialect, NetVM_CrcKind, "crc">;

#endif // NETVM_ATTRIBUTES_TD
