package backend

// cpuid executes the CPUID instruction (cpuid_amd64.s).
func cpuid(leaf, sub uint32) (a, b, c, d uint32)

// hostCPUID is the processor's CPUID, where the architecture has one.
var hostCPUID cpuidFunc = cpuid
