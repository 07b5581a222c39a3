// Resource usage from ptxas reports and from cubin ELF metadata (see resource_usage.h).
#include "runtime/resource_usage.h"

#include "runtime/elf_image.h"

#include "support/text.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

namespace tilejit {

// ---------------------------------------------------------------------------------------------
// ptxas -v report. For each kernel NVRTC 13 prints (sm_80 shown; sm_90+ omits the cmem items):
//   ptxas info    : Compiling entry function 'spill' for 'sm_80'
//   ptxas info    : Function properties for spill
//   ptxas         .     360 bytes stack frame, 584 bytes spill stores, 668 bytes spill loads
//   ptxas info    : Used 32 registers, used 0 barriers, 360 bytes cumulative stack size,
//                   372 bytes cmem[0]                                  (one line in the log)
// Functions the kernel calls get their own "Function properties for <callee>" block, and smem
// appears ("4264 bytes smem") only when the kernel has static shared memory.

namespace {

/// Leading decimal number of `item` ("584 bytes spill stores" -> 584), or -1.
int leading_int(std::string_view item) {
  item = trim(item);
  size_t digits = 0;
  while (digits < item.size() && item[digits] >= '0' && item[digits] <= '9') ++digits;
  if (digits == 0) return -1;
  return std::atoi(std::string(item.substr(0, digits)).c_str());
}

/// The comma-separated items after `marker` on `line` ("Used " -> {"32 registers", ...}).
std::vector<std::string> items_after(std::string_view line, std::string_view marker) {
  size_t at = line.find(marker);
  if (at == std::string_view::npos) return {};
  return split(line.substr(at + marker.size()), ',');
}

bool item_is(std::string_view item, std::string_view suffix) {
  return ends_with(trim(item), suffix);
}

} // namespace

std::optional<ResourceUsage> parse_ptxas_report(const std::string& log,
                                                const std::string& kernel_name) {
  const std::string entry_marker = "Compiling entry function '";
  const std::string this_entry = entry_marker + kernel_name + "'";
  const std::string props_marker = "Function properties for ";
  std::vector<std::string> lines = split(log, '\n');

  size_t i = 0;
  while (i < lines.size() && lines[i].find(this_entry) == std::string::npos) ++i;
  if (i == lines.size()) return std::nullopt;

  ResourceUsage usage;
  // "ptxas info : (C7518) Potential Performance Loss: wgmma.mma_async instructions are
  // serialized due to ... in the function 'attn_dq'": anywhere in the log, naming the kernel.
  const std::string loss_marker = "Potential Performance Loss: ";
  for (const std::string& line : lines)
    if (size_t at = line.find(loss_marker);
        at != std::string::npos && line.find("'" + kernel_name + "'") != std::string::npos)
      usage.performance_notes.push_back(std::string(trim(line.substr(at + loss_marker.size()))));
  bool in_own_properties = false; // inside "Function properties for <kernel_name>"
  for (++i; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    if (line.find(entry_marker) != std::string_view::npos) break; // next kernel's report
    if (size_t at = line.find(props_marker); at != std::string_view::npos) {
      in_own_properties = trim(line.substr(at + props_marker.size())) == kernel_name;
      continue;
    }
    if (line.find("bytes stack frame") != std::string_view::npos) {
      if (!in_own_properties) continue; // a callee's frame, not the kernel's
      for (const std::string& item : split(line.substr(line.find_first_of("0123456789")), ',')) {
        if (item_is(item, "bytes stack frame")) usage.stack_bytes = leading_int(item);
        if (item_is(item, "bytes spill stores")) usage.spill_store_bytes = leading_int(item);
        if (item_is(item, "bytes spill loads")) usage.spill_load_bytes = leading_int(item);
      }
      continue;
    }
    if (line.find("Used ") != std::string_view::npos &&
        line.find(" registers") != std::string_view::npos) {
      usage.shared_bytes = 0; // ptxas leaves "N bytes smem" out when there is none
      for (const std::string& item : items_after(line, "Used ")) {
        if (item_is(item, "registers")) usage.registers = leading_int(item);
        if (item_is(item, "bytes smem")) usage.shared_bytes = leading_int(item);
        if (item_is(item, "bytes cmem[0]")) usage.const_bytes = leading_int(item);
      }
    }
  }
  return usage;
}

// ---------------------------------------------------------------------------------------------
// Cubin ELF. A cubin is a little-endian ELF64 (e_machine EM_CUDA) whose metadata lives in:
//  - .nv.info: attribute records about each function, keyed by its symbol index;
//  - .nv.shared.<kernel>: a NOBITS section as large as the kernel's static shared memory;
//  - .nv.constant0.<kernel>: the kernel's constant bank 0 (parameters, driver constants).
// The record formats and attribute codes are NVIDIA's (undocumented but stable); the layout
// was checked against NVRTC 13 output and cuFuncGetAttribute on an H100-class GPU.

namespace {

constexpr uint16_t kEmCuda = 190;
// .nv.info record formats: a format byte, an attribute byte, then a 16-bit value, or for
// EIFMT_SVAL a 16-bit size and that many bytes.
constexpr uint8_t kEifmtSval = 0x04;
constexpr uint8_t kEiattrFrameSize = 0x11;
constexpr uint8_t kEiattrMaxStackSize = 0x23;
constexpr uint8_t kEiattrRegcount = 0x2f;
// On sm_90+ ptxas places a kernel's shared variables after a window the driver reserves
// (CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, 1 KiB) and sizes .nv.shared.<kernel>
// to include it; ptxas -v and cuFuncGetAttribute(SHARED_SIZE_BYTES) leave it out. Such cubins
// reference the symbol .nv.reservedSmem.offset0 (sm_100+ also .nv.reservedSmem.cap = 1024).
constexpr uint64_t kDefaultReservedSmem = 1024;

struct Symbol {
  std::string_view name;
  uint8_t type = 0;
  uint64_t value = 0;
};

} // namespace

std::optional<ResourceUsage> read_cubin_resources(const std::string& cubin,
                                                  const std::string& kernel_name) {
  ElfReader r{cubin};
  const std::optional<std::vector<ElfSection>> parsed = elf_sections(r, kEmCuda);
  if (!parsed) return std::nullopt;
  const std::vector<ElfSection>& sections = *parsed;
  const size_t shnum = sections.size();

  auto find_section = [&](std::string_view name) -> const ElfSection* {
    for (const ElfSection& s : sections)
      if (s.name == name) return &s;
    return nullptr;
  };
  if (!find_section(".text." + kernel_name)) return std::nullopt;

  // Symbols: the kernel's index (the key of its .nv.info records) and the reserved-smem marks.
  std::vector<Symbol> symbols;
  for (const ElfSection& s : sections) {
    if (s.type != kShtSymtab || s.link >= shnum) continue;
    const ElfSection& strtab = sections[s.link];
    for (uint64_t off = 0; off + 24 <= s.size; off += 24) {
      uint32_t name_off = r.get<uint32_t>(s.offset + off);
      Symbol sym;
      sym.type = r.get<uint8_t>(s.offset + off + 4) & 0xf;
      sym.value = r.get<uint64_t>(s.offset + off + 8);
      sym.name = name_off < strtab.size ? r.cstr(strtab.offset + name_off) : std::string_view{};
      symbols.push_back(sym);
    }
    break;
  }
  if (r.bad) return std::nullopt;
  int64_t kernel_sym = -1;
  uint64_t reserved_smem = 0;
  bool has_reserved_smem = false;
  for (size_t i = 0; i < symbols.size(); ++i) {
    if (symbols[i].name == kernel_name && symbols[i].type == 2 /* STT_FUNC */)
      kernel_sym = int64_t(i);
    if (symbols[i].name == ".nv.reservedSmem.offset0") has_reserved_smem = true;
    if (symbols[i].name == ".nv.reservedSmem.cap") reserved_smem = symbols[i].value;
  }
  if (kernel_sym < 0) return std::nullopt;
  if (has_reserved_smem && reserved_smem == 0) reserved_smem = kDefaultReservedSmem;

  ResourceUsage usage;
  int max_stack = -1;
  if (const ElfSection* info = find_section(".nv.info")) {
    uint64_t p = info->offset, end = info->offset + info->size;
    while (p + 4 <= end && !r.bad) {
      uint8_t format = r.get<uint8_t>(p), attribute = r.get<uint8_t>(p + 1);
      if (format != kEifmtSval) {
        p += 4;
        continue;
      }
      uint16_t size = r.get<uint16_t>(p + 2);
      if (size >= 8 && p + 4 + size <= end &&
          r.get<uint32_t>(p + 4) == static_cast<uint32_t>(kernel_sym)) {
        int value = static_cast<int>(r.get<uint32_t>(p + 8));
        if (attribute == kEiattrRegcount) usage.registers = value;
        if (attribute == kEiattrFrameSize) usage.stack_bytes = value;
        if (attribute == kEiattrMaxStackSize) max_stack = value;
      }
      p += 4 + size;
    }
  }
  if (r.bad) return std::nullopt;
  if (usage.stack_bytes < 0) usage.stack_bytes = max_stack;

  uint64_t shared = 0;
  if (const ElfSection* s = find_section(".nv.shared." + kernel_name)) shared = s->size;
  if (has_reserved_smem && shared >= reserved_smem) shared -= reserved_smem;
  usage.shared_bytes = static_cast<int>(shared);
  if (const ElfSection* s = find_section(".nv.constant0." + kernel_name))
    usage.const_bytes = static_cast<int>(s->size);
  return usage;
}

} // namespace tilejit
