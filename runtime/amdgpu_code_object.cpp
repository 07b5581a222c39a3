#include "runtime/amdgpu_code_object.h"

#include "runtime/elf_image.h"
#include "runtime/msgpack.h"

namespace tilejit {

namespace {

constexpr uint16_t kEmAmdgpu = 224;
constexpr uint32_t kNtAmdgpuMetadata = 32;

uint64_t align4(uint64_t n) {
  return (n + 3) & ~uint64_t{3};
}

/// The metadata note's MessagePack bytes, or empty.
std::string_view metadata_note(ElfReader& r, const std::vector<ElfSection>& sections) {
  for (const ElfSection& s : sections) {
    if (s.type != kShtNote) continue;
    uint64_t p = s.offset;
    const uint64_t end = s.offset + s.size;
    while (p + 12 <= end && !r.bad) {
      const uint32_t namesz = r.get<uint32_t>(p), descsz = r.get<uint32_t>(p + 4);
      const uint32_t type = r.get<uint32_t>(p + 8);
      const uint64_t name_at = p + 12, desc_at = name_at + align4(namesz);
      if (desc_at + descsz > end) break;
      std::string_view name = r.bytes(name_at, namesz);
      if (!name.empty() && name.back() == '\0') name.remove_suffix(1);
      if (type == kNtAmdgpuMetadata && name == "AMDGPU") return r.bytes(desc_at, descsz);
      p = desc_at + align4(descsz);
    }
  }
  return {};
}

int small_int(const msgpack::Value& m, std::string_view key) {
  const int64_t v = m.int_at(key, -1);
  return v < 0 || v > (int64_t{1} << 30) ? -1 : static_cast<int>(v);
}

} // namespace

std::optional<AmdgpuKernelInfo> read_amdgpu_kernel(const std::string& code_object,
                                                   const std::string& kernel_name) {
  ElfReader r{code_object};
  const std::optional<std::vector<ElfSection>> sections = elf_sections(r, kEmAmdgpu);
  if (!sections) return std::nullopt;
  const std::string_view note = metadata_note(r, *sections);
  if (note.empty() || r.bad) return std::nullopt;
  const std::optional<msgpack::Value> meta = msgpack::decode(note);
  if (!meta) return std::nullopt;
  const msgpack::Value* kernels = meta->find("amdhsa.kernels");
  if (!kernels || kernels->kind != msgpack::Value::Kind::array) return std::nullopt;
  for (const msgpack::Value& k : kernels->items) {
    const msgpack::Value* name = k.find(".name");
    if (!name || name->kind != msgpack::Value::Kind::string || name->text != kernel_name) continue;
    AmdgpuKernelInfo info;
    if (const msgpack::Value* t = meta->find("amdhsa.target");
        t && t->kind == msgpack::Value::Kind::string)
      info.target = std::string(t->text);
    info.usage.registers = small_int(k, ".vgpr_count");
    info.usage.shared_bytes = small_int(k, ".group_segment_fixed_size");
    info.usage.stack_bytes = small_int(k, ".private_segment_fixed_size");
    info.sgprs = small_int(k, ".sgpr_count");
    info.agprs = small_int(k, ".agpr_count");
    if (info.agprs < 0) info.agprs = 0; // targets without AGPRs leave it out
    info.vgpr_spills = small_int(k, ".vgpr_spill_count");
    info.sgpr_spills = small_int(k, ".sgpr_spill_count");
    info.wavefront_size = small_int(k, ".wavefront_size");
    info.max_threads = small_int(k, ".max_flat_workgroup_size");
    return info;
  }
  return std::nullopt;
}

} // namespace tilejit
