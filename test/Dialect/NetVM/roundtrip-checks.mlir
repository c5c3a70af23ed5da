// RUN: netvm-opt %s | netvm-opt | FileCheck %s

// CHECK-LABEL: netvm.application @checks
netvm.application @checks {
  netvm.pe @p attributes {datamem_size = 4 : i32} {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      // CHECK: netvm.check_bounds packet[%{{.*}}], 2
      netvm.check_bounds packet[%c0], 2
      // CHECK: %[[N:.*]] = netvm.info_len
      %n = netvm.info_len
      // CHECK: netvm.check_bounds info[%{{.*}}], %[[N]]
      netvm.check_bounds info[%c0], %n
      // CHECK: netvm.watchdog
      netvm.watchdog
      netvm.drop
    }
  }
}
