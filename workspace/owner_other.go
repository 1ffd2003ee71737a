//go:build !unix

package workspace

import "syscall"

func asOwner(string) *syscall.SysProcAttr { return nil }

func giveTo(string, string) error { return nil }

const oNoFollow = 0
