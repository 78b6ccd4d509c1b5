package mailbox

import "syscall"

type mapHandle = syscall.Handle
