//go:build !unix

package agent

import "os/exec"

// killGroupOnCancel relies on exec's default (kill sh only) where process groups do not exist.
func killGroupOnCancel(*exec.Cmd) {}
