// A bounds-checked view of a 64-bit little-endian ELF image's sections: what the cubin reader
// (resource_usage.cpp) and the AMDGPU code object reader (amdgpu_code_object.cpp) both walk.
// Any read past the image's end marks it bad instead of reading out of bounds: images come from
// caches and compilers, and a corrupt one must give "unknown", never a crash.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

namespace tilejit {

/// Bounds-checked little-endian reads over the image.
struct ElfReader {
  std::string_view data;
  bool bad = false;

  template <typename T> T get(uint64_t offset) {
    if (offset > data.size() || data.size() - offset < sizeof(T)) {
      bad = true;
      return T{};
    }
    T value{};
    std::memcpy(&value, data.data() + offset, sizeof(T)); // hosts are little-endian like images
    return value;
  }
  std::string_view cstr(uint64_t offset);
  /// `size` bytes at `offset` (empty and bad when they run past the end).
  std::string_view bytes(uint64_t offset, uint64_t size);
};

struct ElfSection {
  std::string_view name;
  uint32_t type = 0;
  uint64_t offset = 0, size = 0;
  uint32_t link = 0;
};

constexpr uint32_t kShtSymtab = 2;
constexpr uint32_t kShtNote = 7;

/// The sections of an ELF64 little-endian image for machine `machine` (190: CUDA, 224: AMDGPU),
/// with their names; nullopt when the image is not one or is malformed.
std::optional<std::vector<ElfSection>> elf_sections(ElfReader& r, uint16_t machine);

} // namespace tilejit
