#include "core/cpu_info.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace biaslab {

TEST(CpuInfo, ParsesTheFirstProcessorsModelAndKernelFlags) {
  const std::string text =
      "processor\t: 0\n"
      "vendor_id\t: AuthenticAMD\n"
      "model name\t: AMD EPYC 9R14\n"
      "flags\t\t: fpu sse2 avx2 fma avx512f avx512bw avx512_bf16 avx512_vnni\n"
      "\n"
      "processor\t: 1\n"
      "model name\t: Other\n"
      "flags\t\t: fpu amx_bf16\n";
  const CpuInfo info = parse_cpuinfo(text);
  EXPECT_EQ(info.model, "AMD EPYC 9R14");
  // Reported in kIsaFlags' order, not /proc's; the second processor is not read.
  EXPECT_EQ(info.isa, (std::vector<std::string>{"avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16"}));
  EXPECT_TRUE(info.has("avx512_bf16"));
  EXPECT_FALSE(info.has("amx_bf16"));
  EXPECT_EQ(info.str(), "AMD EPYC 9R14 (avx2 fma avx512f avx512bw avx512_vnni avx512_bf16)");
  // As meta.json and `bench --json` record it.
  const nlohmann::json j = {{"cpu", info}};
  EXPECT_EQ(j.dump(), R"({"cpu":{"isa":["avx2","fma","avx512f","avx512bw","avx512_vnni","avx512_bf16"],)"
                      R"("model":"AMD EPYC 9R14"}})");
}

TEST(CpuInfo, UnreadableTextGivesUnknownAndNoFlags) {
  const CpuInfo info = parse_cpuinfo("");
  EXPECT_EQ(info.model, "unknown");
  EXPECT_TRUE(info.isa.empty());
  EXPECT_FALSE(cpu_info().model.empty());  // this machine's, whatever it is
}

}  // namespace biaslab
