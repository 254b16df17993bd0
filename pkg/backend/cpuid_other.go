//go:build !amd64

package backend

// hostCPUID is nil: caches come from sysfs alone off x86.
var hostCPUID cpuidFunc
