// Accelerator choice (server/vm/accel.h): choose_accel for every combination, and reading the
// CPU's virtualisation flag from realistic /proc/cpuinfo texts.
#include <catch2/catch.hpp>

#include <string>

#include "server/vm/accel.h"

using namespace lockroom::vm;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const char* pref_name(AccelPreference p) {
  switch (p) {
    case AccelPreference::kAuto: return "auto";
    case AccelPreference::kKvm: return "kvm";
    case AccelPreference::kTcg: return "tcg";
  }
  return "?";
}

// An Intel host as Linux 6.1 prints it (one processor, trimmed to the lines that matter).
std::string intel_cpuinfo(const std::string& flags, bool with_vmx_flags_line) {
  std::string text =
      "processor\t: 0\n"
      "vendor_id\t: GenuineIntel\n"
      "cpu family\t: 6\n"
      "model\t\t: 85\n"
      "model name\t: Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz\n"
      "stepping\t: 7\n"
      "cpu MHz\t\t: 2500.000\n"
      "cache size\t: 28160 KB\n"
      "fpu\t\t: yes\n"
      "fpu_exception\t: yes\n"
      "cpuid level\t: 22\n"
      "wp\t\t: yes\n"
      "flags\t\t: " + flags + "\n";
  if (with_vmx_flags_line)
    text += "vmx flags\t: vnmi preemption_timer posted_intr invvpid ept_x_only ept_ad ept_1gb flexpriority apicv tsc_offset vtpr mtf vapic ept vpid unrestricted_guest vapic_reg vid ple shadow_vmcs pml ept_mode_based_exec tsc_scaling\n";
  text +=
      "bugs\t\t: spectre_v1 spectre_v2 spec_store_bypass swapgs taa itlb_multihit mmio_stale_data retbleed\n"
      "bogomips\t: 5000.00\n"
      "clflush size\t: 64\n"
      "address sizes\t: 46 bits physical, 48 bits virtual\n"
      "power management:\n\n";
  return text;
}

const std::string kIntelFlagsWithVmx =
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx fxsr sse sse2 ss ht "
    "tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc art arch_perfmon pebs bts rep_good nopl xtopology nonstop_tsc "
    "cpuid aperfmperf pni pclmulqdq dtes64 monitor ds_cpl vmx smx est tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid dca "
    "sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm abm 3dnowprefetch "
    "cpuid_fault epb cat_l3 cdp_l3 invpcid_single intel_ppin ssbd mba ibrs ibpb stibp ibrs_enhanced tpr_shadow vnmi "
    "flexpriority ept vpid ept_ad fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid cqm mpx rdt_a avx512f "
    "avx512dq rdseed adx smap clflushopt clwb intel_pt avx512cd avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves "
    "cqm_llc cqm_occup_llc cqm_mbm_total cqm_mbm_local dtherm ida arat pln pts pku ospke avx512_vnni md_clear "
    "flush_l1d arch_capabilities";

// A cloud guest's Intel flags: the hypervisor hides vmx (and reports "hypervisor").
const std::string kIntelGuestFlags =
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ss ht syscall "
    "nx pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology nonstop_tsc cpuid tsc_known_freq pni pclmulqdq ssse3 "
    "fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand hypervisor lahf_lm "
    "abm 3dnowprefetch invpcid_single ssbd ibrs ibpb stibp ibrs_enhanced fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms "
    "invpcid avx512f avx512dq rdseed adx smap clflushopt clwb avx512cd avx512bw avx512vl xsaveopt xsavec xgetbv1 "
    "xsaves arat avx512_vnni md_clear arch_capabilities";

std::string amd_cpuinfo(const std::string& flags) {
  return "processor\t: 0\n"
         "vendor_id\t: AuthenticAMD\n"
         "cpu family\t: 25\n"
         "model\t\t: 1\n"
         "model name\t: AMD EPYC 7763 64-Core Processor\n"
         "flags\t\t: " + flags + "\n"
         "bugs\t\t: sysret_ss_attrs spectre_v1 spectre_v2 spec_store_bypass srso\n"
         "bogomips\t: 4890.87\n"
         "TLB size\t: 2560 4K pages\n"
         "power management: ts ttp tm hwpstate cpb eff_freq_ro [13] [14]\n\n";
}

const std::string kAmdFlagsWithSvm =
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ht syscall nx "
    "mmxext fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good nopl nonstop_tsc cpuid extd_apicid aperfmperf rapl pni "
    "pclmulqdq monitor ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt aes xsave avx f16c rdrand lahf_lm "
    "cmp_legacy svm extapic cr8_legacy abm sse4a misalignsse 3dnowprefetch osvw ibs skinit wdt tce topoext "
    "perfctr_core perfctr_nb bpext perfctr_llc mwaitx cpb cat_l3 cdp_l3 invpcid_single hw_pstate ssbd mba ibrs ibpb "
    "stibp vmmcall fsgsbase bmi1 avx2 smep bmi2 erms invpcid cqm rdt_a rdseed adx smap clflushopt clwb sha_ni "
    "xsaveopt xsavec xgetbv1 xsaves cqm_llc cqm_occup_llc cqm_mbm_total cqm_mbm_local clzero irperf xsaveerptr "
    "rdpru wbnoinvd amd_ppin brs arat npt lbrv svm_lock nrip_save tsc_scale vmcb_clean flushbyasid decodeassists "
    "pausefilter pfthreshold v_vmsave_vmload vgif v_spec_ctrl umip pku ospke vaes vpclmulqdq rdpid overflow_recov "
    "succor smca";

// The same AMD flags with "svm" itself taken out: "svm_lock" and friends remain.
std::string without_token(std::string flags, const std::string& token) {
  auto at = flags.find(" " + token + " ");
  REQUIRE(at != std::string::npos);
  flags.erase(at, token.size() + 1);
  return flags;
}

}  // namespace

TEST_CASE("accel: choose_accel for every combination of host facts and preference", "[accel]") {
  for (AccelPreference pref : {AccelPreference::kAuto, AccelPreference::kKvm, AccelPreference::kTcg}) {
    for (int bits = 0; bits < 8; ++bits) {
      HostVirt host;
      host.kvm_device = bits & 1;
      host.kvm_openable = bits & 2;
      host.cpu_virt_flag = bits & 4;
      Accel expected = Accel::kTcg;
      if (pref == AccelPreference::kKvm) expected = host.kvm_openable ? Accel::kKvm : Accel::kTcg;
      if (pref == AccelPreference::kAuto)
        expected = host.kvm_device && host.kvm_openable && host.cpu_virt_flag ? Accel::kKvm : Accel::kTcg;
      AccelChoice choice = choose_accel(host, pref);
      INFO("preference " << pref_name(pref) << ", device " << host.kvm_device << ", openable " << host.kvm_openable
                         << ", cpu flag " << host.cpu_virt_flag << ": " << choice.reason);
      CHECK(choice.accel == expected);
      CHECK_FALSE(choice.reason.empty());
    }
  }
}

TEST_CASE("accel: each reason says why, in words a user can act on", "[accel]") {
  HostVirt none;
  CHECK(has(choose_accel(none, AccelPreference::kAuto).reason, "/dev/kvm does not exist"));
  CHECK(has(choose_accel(none, AccelPreference::kTcg).reason, "TCG was requested"));

  HostVirt denied{true, false, true, "Permission denied"};
  auto auto_denied = choose_accel(denied, AccelPreference::kAuto);
  CHECK(has(auto_denied.reason, "cannot be opened (Permission denied)"));
  CHECK(has(auto_denied.reason, "kvm group"));
  auto forced_denied = choose_accel(denied, AccelPreference::kKvm);
  CHECK(forced_denied.accel == Accel::kTcg);
  CHECK(has(forced_denied.reason, "KVM was requested but /dev/kvm cannot be opened (Permission denied)"));

  HostVirt nested{true, true, false, ""};  // the kvm_pvm machines this project is built on
  auto auto_nested = choose_accel(nested, AccelPreference::kAuto);
  CHECK(auto_nested.accel == Accel::kTcg);
  CHECK(has(auto_nested.reason, "neither vmx nor svm"));
  CHECK(has(auto_nested.reason, "LOCKROOM_ACCEL=kvm"));
  auto forced_nested = choose_accel(nested, AccelPreference::kKvm);
  CHECK(forced_nested.accel == Accel::kKvm);
  CHECK(has(forced_nested.reason, "KVM was requested"));

  HostVirt real{true, true, true, ""};
  CHECK(has(choose_accel(real, AccelPreference::kAuto).reason, "hardware virtualisation"));
  CHECK(choose_accel(real, AccelPreference::kTcg).accel == Accel::kTcg);
}

TEST_CASE("accel: accel_name", "[accel]") {
  CHECK(std::string(accel_name(Accel::kKvm)) == "kvm");
  CHECK(std::string(accel_name(Accel::kTcg)) == "tcg");
}

TEST_CASE("accel: cpuinfo of an Intel host with vmx has the flag", "[accel]") {
  CHECK(cpuinfo_has_virt_flag(intel_cpuinfo(kIntelFlagsWithVmx, true)));
  CHECK(cpuinfo_has_virt_flag(intel_cpuinfo(kIntelFlagsWithVmx, false)));
}

TEST_CASE("accel: cpuinfo of an Intel guest without vmx has no flag", "[accel]") {
  CHECK_FALSE(cpuinfo_has_virt_flag(intel_cpuinfo(kIntelGuestFlags, false)));
  // Flags that merely contain "vmx" do not count: the "vmx flags" line is not the flags line.
  CHECK_FALSE(cpuinfo_has_virt_flag(intel_cpuinfo(kIntelGuestFlags, true)));
}

TEST_CASE("accel: cpuinfo of an AMD host with svm has the flag", "[accel]") {
  CHECK(cpuinfo_has_virt_flag(amd_cpuinfo(kAmdFlagsWithSvm)));
}

TEST_CASE("accel: svm_lock and other flags that contain svm do not count without svm itself", "[accel]") {
  std::string flags = without_token(kAmdFlagsWithSvm, "svm");
  REQUIRE(flags.find("svm_lock") != std::string::npos);
  CHECK_FALSE(cpuinfo_has_virt_flag(amd_cpuinfo(flags)));
  CHECK_FALSE(cpuinfo_has_virt_flag("flags\t\t: fpu svm_lock xsvm svmx vmx_ept nvmx\n"));
}

TEST_CASE("accel: the flag counts at either end of the flags line and on any processor", "[accel]") {
  CHECK(cpuinfo_has_virt_flag("flags\t\t: svm fpu\n"));
  CHECK(cpuinfo_has_virt_flag("flags\t\t: fpu vmx"));             // no trailing newline
  CHECK(cpuinfo_has_virt_flag("flags\t\t: fpu vmx   \t\n"));
  std::string two = intel_cpuinfo(kIntelGuestFlags, false) + intel_cpuinfo(kIntelFlagsWithVmx, false);
  CHECK(cpuinfo_has_virt_flag(two));
}

TEST_CASE("accel: vmx or svm outside the flags line does not count", "[accel]") {
  CHECK_FALSE(cpuinfo_has_virt_flag(""));
  CHECK_FALSE(cpuinfo_has_virt_flag("model name\t: vmx svm special edition\nflags\t\t: fpu sse\n"));
  CHECK_FALSE(cpuinfo_has_virt_flag("bugs\t\t: svm vmx\n"));
  // An arm64 host lists "Features", never vmx/svm.
  CHECK_FALSE(cpuinfo_has_virt_flag("processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics\n"));
}

TEST_CASE("accel: probe_host_virt reports a consistent picture of this host", "[accel]") {
  HostVirt host = probe_host_virt();
  if (!host.kvm_device) CHECK_FALSE(host.kvm_openable);
  if (host.kvm_openable) CHECK(host.kvm_error.empty());
  if (host.kvm_device && !host.kvm_openable) CHECK_FALSE(host.kvm_error.empty());
}
