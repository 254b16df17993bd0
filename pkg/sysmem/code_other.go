//go:build !linux

package sysmem

// ReleaseCode does nothing where the advice is not available.
func ReleaseCode() (int64, error) { return 0, nil }

// ReleaseCodeForGood does nothing where the advice is not available.
func ReleaseCodeForGood() (int64, error) { return 0, nil }
