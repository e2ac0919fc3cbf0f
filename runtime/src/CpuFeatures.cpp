//===- CpuFeatures.cpp - Can this machine run an artifact's code? ---------===//
//
// The table maps the x86 instruction-set extensions LLVM can generate code
// for to the names Linux gives them in /proc/cpuinfo, which lists only what
// both the CPU and the kernel support (AVX-512 state saved by XSAVE, say).
//
//===----------------------------------------------------------------------===//

#include "CpuFeatures.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <set>
#include <sstream>

namespace cleave::rt {

namespace {

struct FeatureName {
  const char *llvm;
  const char *procName;
};

// LLVM's X86 feature names (llvm/lib/Target/X86/X86.td) of instruction-set
// extensions, and /proc/cpuinfo's (arch/x86/include/asm/cpufeatures.h).
constexpr FeatureName kX86Features[] = {
    {"cmov", "cmov"},
    {"cx8", "cx8"},
    {"cx16", "cx16"},
    {"mmx", "mmx"},
    {"fxsr", "fxsr"},
    {"sse", "sse"},
    {"sse2", "sse2"},
    {"sse3", "pni"},
    {"ssse3", "ssse3"},
    {"sse4.1", "sse4_1"},
    {"sse4.2", "sse4_2"},
    {"sse4a", "sse4a"},
    {"popcnt", "popcnt"},
    {"sahf", "lahf_lm"},
    {"lzcnt", "abm"},
    {"movbe", "movbe"},
    {"bmi", "bmi1"},
    {"bmi2", "bmi2"},
    {"adx", "adx"},
    {"aes", "aes"},
    {"pclmul", "pclmulqdq"},
    {"sha", "sha_ni"},
    {"rdrnd", "rdrand"},
    {"rdseed", "rdseed"},
    {"f16c", "f16c"},
    {"fma", "fma"},
    {"fma4", "fma4"},
    {"xop", "xop"},
    {"avx", "avx"},
    {"avx2", "avx2"},
    {"xsave", "xsave"},
    {"xsaveopt", "xsaveopt"},
    {"xsavec", "xsavec"},
    {"xsaves", "xsaves"},
    {"fsgsbase", "fsgsbase"},
    {"vaes", "vaes"},
    {"vpclmulqdq", "vpclmulqdq"},
    {"gfni", "gfni"},
    {"avxvnni", "avx_vnni"},
    {"avx512f", "avx512f"},
    {"avx512cd", "avx512cd"},
    {"avx512bw", "avx512bw"},
    {"avx512dq", "avx512dq"},
    {"avx512vl", "avx512vl"},
    {"avx512ifma", "avx512ifma"},
    {"avx512vbmi", "avx512vbmi"},
    {"avx512vbmi2", "avx512_vbmi2"},
    {"avx512vnni", "avx512_vnni"},
    {"avx512bitalg", "avx512_bitalg"},
    {"avx512vpopcntdq", "avx512_vpopcntdq"},
    {"avx512bf16", "avx512_bf16"},
    {"avx512fp16", "avx512_fp16"},
    {"avx512vp2intersect", "avx512_vp2intersect"},
    {"amx-tile", "amx_tile"},
    {"amx-int8", "amx_int8"},
    {"amx-bf16", "amx_bf16"},
    {"amx-fp16", "amx_fp16"},
};

#if defined(__x86_64__) || defined(__i386__)
/// Extensions whose instructions need nothing from the kernel (no register
/// state to save, no control-register bit): where CPUID has them they run,
/// whether or not /proc/cpuinfo lists them. Seen: a KVM guest kernel whose
/// cpuinfo lacks abm (lzcnt) and sse4a although CPUID reports both and
/// lzcnt executes (x86-64-v3 code was refused there).
struct CpuidBit {
  const char *procName;
  uint32_t leaf;
  uint32_t subleaf;
  int reg; // 1: EBX, 2: ECX
  int bit;
};
constexpr CpuidBit kUngatedBits[] = {
    {"cx16", 1, 0, 2, 13},
    {"movbe", 1, 0, 2, 22},
    {"popcnt", 1, 0, 2, 23},
    {"bmi1", 7, 0, 1, 3},
    {"bmi2", 7, 0, 1, 8},
    {"adx", 7, 0, 1, 19},
    {"lahf_lm", 0x80000001, 0, 2, 0},
    {"abm", 0x80000001, 0, 2, 5},
    {"sse4a", 0x80000001, 0, 2, 6},
};

/// The Linux names of kUngatedBits that CPUID reports.
std::string cpuidFlags() {
  std::string out;
  unsigned maxBasic = __get_cpuid_max(0, nullptr);
  unsigned maxExtended = __get_cpuid_max(0x80000000, nullptr);
  for (const CpuidBit &b : kUngatedBits) {
    unsigned max = b.leaf >= 0x80000000 ? maxExtended : maxBasic;
    if (b.leaf > max)
      continue;
    unsigned regs[4] = {};
    __cpuid_count(b.leaf, b.subleaf, regs[0], regs[1], regs[2], regs[3]);
    if (regs[b.reg] >> b.bit & 1)
      out += std::string(" ") + b.procName;
  }
  return out;
}
#else
std::string cpuidFlags() { return {}; }
#endif

} // namespace

std::string hostCpuFlags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    // "flags\t\t: fpu vme ..."
    if (line.rfind("flags", 0) != 0)
      continue;
    size_t colon = line.find(':');
    if (colon != std::string::npos)
      return line.substr(colon + 1) + cpuidFlags();
  }
  return {};
}

std::vector<std::string>
missingCpuFeatures(const std::vector<std::string> &required,
                   std::string_view cpuFlags) {
  std::set<std::string, std::less<>> have;
  std::istringstream words{std::string(cpuFlags)};
  for (std::string w; words >> w;)
    have.insert(w);
  std::vector<std::string> missing;
  for (const std::string &feature : required) {
    const FeatureName *known =
        std::find_if(std::begin(kX86Features), std::end(kX86Features),
                     [&](const FeatureName &f) { return feature == f.llvm; });
    if (known != std::end(kX86Features) && !have.count(known->procName))
      missing.push_back(feature);
  }
  return missing;
}

} // namespace cleave::rt
