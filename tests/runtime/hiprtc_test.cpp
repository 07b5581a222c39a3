// HIPRTC for real, without an AMD GPU: HIP C++ to gfx90a (wave64) and gfx1030 (wave32) code
// objects, their kernels' resources read back from the metadata note, compile errors as a log,
// in-memory headers; and the readers (MessagePack, code object) on malformed images: nullopt,
// never a crash. Fails when HIPRTC is missing unless TILEJIT_SKIP_HIPRTC_TESTS=1 (tools/setup.sh
// installs it: Debian's libamdhip64-dev).
#include "runtime/amdgpu_code_object.h"
#include "runtime/hiprtc.h"
#include "runtime/msgpack.h"
#include "runtime/nvrtc.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>

namespace tilejit {
namespace {

const char* const kAxpy = R"(#include "tj_scale.h"
extern "C" __global__ void axpy(float* y, const float* x, float a, int n) {
  __shared__ float staged[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  staged[threadIdx.x] = i < n ? x[i] : 0.0f;
  __syncthreads();
  float v = staged[blockDim.x - 1 - threadIdx.x];
  if (i < n) y[i] = TJ_SCALE(a) * v + y[i];
}
)";

bool skip() {
  const char* s = std::getenv("TILEJIT_SKIP_HIPRTC_TESTS");
  return s && std::string(s) == "1" && !Hiprtc::available();
}

HiprtcOutput compile_axpy(const std::string& arch) {
  HiprtcRequest req;
  req.source = kAxpy;
  req.program_name = "axpy.hip";
  req.headers = {{"tj_scale.h", "#define TJ_SCALE(a) (2.0f * (a))\n"}};
  req.arch = arch;
  return Hiprtc::get().compile(req);
}

TEST(Hiprtc, LoadsAndSaysItsVersion) {
  if (skip()) GTEST_SKIP() << Hiprtc::unavailable_reason();
  ASSERT_TRUE(Hiprtc::available()) << Hiprtc::unavailable_reason();
  EXPECT_FALSE(Hiprtc::get().version().empty());
  EXPECT_FALSE(Hiprtc::get().library_path().empty());
}

TEST(Hiprtc, CompilesForBothTargetsAndTheCodeObjectNamesTheResources) {
  if (skip()) GTEST_SKIP() << Hiprtc::unavailable_reason();
  for (const auto& [arch, wave] : {std::pair<std::string, int>{"gfx90a", 64}, {"gfx1030", 32}}) {
    SCOPED_TRACE(arch);
    HiprtcOutput out = compile_axpy(arch);
    ASSERT_TRUE(out.ok) << out.log;
    ASSERT_GT(out.code_object.size(), 64u);
    EXPECT_EQ(out.code_object.compare(0, 4, "\177ELF"), 0);
    std::optional<AmdgpuKernelInfo> info = read_amdgpu_kernel(out.code_object, "axpy");
    ASSERT_TRUE(info.has_value());
    EXPECT_NE(info->target.find(arch), std::string::npos) << info->target;
    EXPECT_EQ(info->wavefront_size, wave);
    EXPECT_EQ(info->usage.shared_bytes, 1024); // staged[256] floats
    EXPECT_GT(info->usage.registers, 0);
    EXPECT_GT(info->sgprs, 0);
    EXPECT_EQ(info->usage.stack_bytes, 0);
    EXPECT_EQ(info->vgpr_spills, 0);
    EXPECT_FALSE(read_amdgpu_kernel(out.code_object, "no_such_kernel").has_value());
  }
}

TEST(Hiprtc, ACompileErrorIsALogNotAThrow) {
  if (skip()) GTEST_SKIP() << Hiprtc::unavailable_reason();
  HiprtcRequest req;
  req.source = "extern \"C\" __global__ void k(float* y) {\n  y[0] = undeclared_name;\n}\n";
  req.program_name = "broken.hip";
  req.arch = "gfx90a";
  HiprtcOutput out = Hiprtc::get().compile(req);
  EXPECT_FALSE(out.ok);
  EXPECT_TRUE(out.code_object.empty());
  EXPECT_NE(out.log.find("undeclared_name"), std::string::npos) << out.log;
  EXPECT_NE(out.log.find("broken.hip:2"), std::string::npos) << out.log;
}

TEST(AmdgpuCodeObject, TruncatedOrCorruptImagesAreUnknownNotACrash) {
  if (skip()) GTEST_SKIP() << Hiprtc::unavailable_reason();
  HiprtcOutput out = compile_axpy("gfx90a");
  ASSERT_TRUE(out.ok) << out.log;
  const std::string& co = out.code_object;
  for (size_t n = 0; n < co.size(); n += 1 + n / 16)
    EXPECT_NO_THROW(read_amdgpu_kernel(co.substr(0, n), "axpy")) << n;
  std::mt19937 rng(7);
  for (int i = 0; i < 400; ++i) {
    std::string bad = co;
    for (int j = 0; j < 8; ++j) bad[rng() % bad.size()] = static_cast<char>(rng());
    (void)read_amdgpu_kernel(bad, "axpy"); // any answer, no crash (ASan and UBSan in CI)
  }
  // Another machine's ELF (a cubin's e_machine) is not a code object.
  std::string other = co;
  other[0x12] = static_cast<char>(190);
  EXPECT_FALSE(read_amdgpu_kernel(other, "axpy").has_value());
}

TEST(Msgpack, DecodesTheMetadataShapes) {
  // {"a": [1, -2, "xy", true, nil, 300, 1.5], "b": {"c": 70000}}
  static const char kBytes[] = "\x82\xa1"
                               "a"
                               "\x97\x01\xfe\xa2xy\xc3\xc0\xcd\x01\x2c"
                               "\xcb\x3f\xf8\x00\x00\x00\x00\x00\x00"
                               "\xa1"
                               "b"
                               "\x81\xa1"
                               "c"
                               "\xce\x00\x01\x11\x70";
  const std::string bytes(kBytes, sizeof(kBytes) - 1);
  ASSERT_EQ(bytes.size(), 33u);
  std::optional<msgpack::Value> v = msgpack::decode(bytes);
  ASSERT_TRUE(v.has_value());
  const msgpack::Value* a = v->find("a");
  ASSERT_TRUE(a && a->kind == msgpack::Value::Kind::array && a->items.size() == 7);
  EXPECT_EQ(a->items[0].integer, 1);
  EXPECT_EQ(a->items[1].integer, -2);
  EXPECT_EQ(a->items[2].text, "xy");
  EXPECT_TRUE(a->items[3].boolean);
  EXPECT_EQ(a->items[4].kind, msgpack::Value::Kind::nil);
  EXPECT_EQ(a->items[5].integer, 300);
  EXPECT_EQ(a->items[6].floating, 1.5);
  ASSERT_NE(v->find("b"), nullptr);
  EXPECT_EQ(v->find("b")->int_at("c", -1), 70000);
  EXPECT_EQ(v->find("b")->int_at("missing", -1), -1);
  EXPECT_EQ(v->find("zz"), nullptr);
  // Every truncation is refused.
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_FALSE(msgpack::decode(bytes.substr(0, n)).has_value()) << n;
}

TEST(Msgpack, HostileInputIsRefusedNotACrash) {
  // Nesting far past any code object's (a stack overflow if unbounded).
  EXPECT_FALSE(msgpack::decode(std::string(100000, '\x91')).has_value());
  // Lengths past the end: a 4-billion-entry array, a 4 GiB string.
  EXPECT_FALSE(msgpack::decode(std::string("\xdd\xff\xff\xff\xff\x01", 6)).has_value());
  EXPECT_FALSE(msgpack::decode(std::string("\xdb\xff\xff\xff\xff", 5)).has_value());
  // An unsigned value past int64, ext types.
  EXPECT_FALSE(msgpack::decode(std::string("\xcf\xff\xff\xff\xff\xff\xff\xff\xff", 9)));
  EXPECT_FALSE(msgpack::decode(std::string("\xd4\x01\x02", 3)).has_value());
  std::mt19937 rng(11);
  for (int i = 0; i < 20000; ++i) {
    std::string b(rng() % 24, '\0');
    for (char& c : b) c = static_cast<char>(rng());
    (void)msgpack::decode(b);
  }
}

} // namespace
} // namespace tilejit
