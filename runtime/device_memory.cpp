// <tilejit/device_memory.h> over the runtime's DeviceBuffer.
#include "runtime/device_buffer.h"
#include "support/error.h"

#include <tilejit/device_memory.h>

namespace tilejit {

struct DeviceMemory::Impl {
  DeviceBuffer buffer;
};

DeviceMemory::DeviceMemory(size_t bytes, int device) : impl_(std::make_shared<Impl>()) {
  if (bytes) impl_->buffer = DeviceBuffer(bytes, device);
}
void DeviceMemory::upload(const void* host, size_t bytes, size_t offset) {
  impl_->buffer.upload(host, bytes, offset);
}
void DeviceMemory::download(void* host, size_t bytes, size_t offset) const {
  impl_->buffer.download(host, bytes, offset);
}
void* DeviceMemory::data() const {
  return impl_->buffer.data();
}
size_t DeviceMemory::size() const {
  return impl_->buffer.size();
}

Tensor DeviceMemory::view(DType dtype, std::vector<int64_t> shape) const {
  Tensor t = Tensor::contiguous(data(), dtype, std::move(shape));
  t.device_index = impl_->buffer.device();
  if (static_cast<size_t>(t.numel()) * dtype_size(dtype) > size())
    throw Error(str("a view of ", t.describe(), " needs ", t.numel() * dtype_size(dtype),
                    " bytes; the memory has ", size()));
  return t;
}

} // namespace tilejit
