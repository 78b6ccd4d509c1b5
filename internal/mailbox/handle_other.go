//go:build !windows

package mailbox

type mapHandle = uintptr
