//===- Drivers.cpp - The device kinds this runtime has --------------------===//
//
// One line per kind of device (device/Device.h). A runtime built without the
// CUDA headers has a cuda driver that refuses every device with
// kNoCudaSupport (device/cuda/NoCuda.cpp).
//
//===----------------------------------------------------------------------===//

#include "device/Device.h"

namespace cleave::rt {

const DeviceDriver &cpuDriver();  // device/cpu/CpuDevice.cpp
const DeviceDriver &cudaDriver(); // device/cuda/CudaDevice.cpp or NoCuda.cpp

const DeviceDriver &deviceDriver(DeviceKind kind) {
  switch (kind) {
  case DeviceKind::cpu:
    return cpuDriver();
  case DeviceKind::cuda:
    return cudaDriver();
  }
  return cpuDriver();
}

} // namespace cleave::rt
