#include "runtime/elf_image.h"

namespace tilejit {

std::string_view ElfReader::cstr(uint64_t offset) {
  if (offset >= data.size()) {
    bad = true;
    return {};
  }
  std::string_view rest = data.substr(offset);
  size_t end = rest.find('\0');
  if (end == std::string_view::npos) {
    bad = true;
    return {};
  }
  return rest.substr(0, end);
}

std::string_view ElfReader::bytes(uint64_t offset, uint64_t size) {
  if (offset > data.size() || data.size() - offset < size) {
    bad = true;
    return {};
  }
  return data.substr(offset, size);
}

std::optional<std::vector<ElfSection>> elf_sections(ElfReader& r, uint16_t machine) {
  const std::string_view d = r.data;
  if (d.size() < 64 || d.compare(0, 4, "\177ELF") != 0) return std::nullopt;
  if (d[4] != 2 || d[5] != 1) return std::nullopt; // ELFCLASS64, little-endian
  if (r.get<uint16_t>(0x12) != machine) return std::nullopt;
  const uint64_t shoff = r.get<uint64_t>(0x28);
  const uint16_t shentsize = r.get<uint16_t>(0x3a);
  const uint16_t shnum = r.get<uint16_t>(0x3c);
  const uint16_t shstrndx = r.get<uint16_t>(0x3e);
  if (r.bad || shentsize < 64 || shstrndx >= shnum) return std::nullopt;
  std::vector<ElfSection> sections(shnum);
  for (uint16_t i = 0; i < shnum; ++i) {
    const uint64_t h = shoff + uint64_t(i) * shentsize;
    sections[i].type = r.get<uint32_t>(h + 4);
    sections[i].offset = r.get<uint64_t>(h + 24);
    sections[i].size = r.get<uint64_t>(h + 32);
    sections[i].link = r.get<uint32_t>(h + 40);
  }
  if (r.bad) return std::nullopt;
  const ElfSection& shstr = sections[shstrndx];
  for (uint16_t i = 0; i < shnum; ++i) {
    const uint32_t name_off = r.get<uint32_t>(shoff + uint64_t(i) * shentsize);
    if (name_off >= shstr.size) return std::nullopt;
    sections[i].name = r.cstr(shstr.offset + name_off);
  }
  if (r.bad) return std::nullopt;
  return sections;
}

} // namespace tilejit
