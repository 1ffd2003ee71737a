package agent

import (
	"errors"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// TestMaxArgLenIsTheKernels pins MaxArgLen to what exec really accepts: the longest argument starts, one byte more
// fails with E2BIG. Were the bound too high, a prompt would pass the check and fail at exec; too low, a prompt that
// fits would be refused.
func TestMaxArgLenIsTheKernels(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("MAX_ARG_STRLEN is Linux's")
	}
	if err := exec.Command("/bin/true", strings.Repeat("x", MaxArgLen)).Run(); err != nil {
		t.Fatalf("an argument of MaxArgLen bytes: %v", err)
	}
	err := exec.Command("/bin/true", strings.Repeat("x", MaxArgLen+1)).Run()
	if !errors.Is(err, syscall.E2BIG) {
		t.Fatalf("an argument of MaxArgLen+1 bytes: %v, want E2BIG", err)
	}
}

func TestTemplatePromptThatCannotBeAnArgument(t *testing.T) {
	inArg, err := NewTemplate("cmd:tool --message {prompt}")
	if err != nil {
		t.Fatal(err)
	}
	onStdin, err := NewTemplate("cmd:tool --read-stdin")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, prompt string
		want         []string // in the error of the {prompt} template; nil: it fits
	}{
		{"a NUL byte", "before\x00after", []string{"NUL byte (at byte 6)", "standard input", "leave {prompt} out"}},
		{"one byte too long", strings.Repeat("y", MaxArgLen+1),
			[]string{"131072 bytes", "at most 131071", "standard input"}},
		{"as long as an argument can be", strings.Repeat("y", MaxArgLen), nil},
		{"control characters and invalid UTF-8 fit", "\x1b[2J\r\b\x7f\xff\xfe", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := Request{RunID: "r", TaskID: "1", Attempt: 1, Prompt: tt.prompt}
			cmd, err := inArg.Command(req)
			switch {
			case tt.want == nil && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want == nil && cmd.Args[2] != tt.prompt:
				t.Fatalf("the argument is not the prompt")
			case tt.want != nil && !errors.Is(err, ErrInput):
				t.Fatalf("err = %v, want ErrInput", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if err != nil && len(err.Error()) > 400 {
				t.Errorf("the error is %d bytes: it must not echo the prompt", len(err.Error()))
			}
			// Without {prompt} the same prompt goes on stdin, whatever it holds.
			cmd, err = onStdin.Command(req)
			if err != nil || cmd.Stdin != tt.prompt {
				t.Fatalf("on stdin: err %v, stdin intact %t", err, cmd.Stdin == tt.prompt)
			}
		})
	}
	t.Run("a command line too long as a whole", func(t *testing.T) {
		many, err := NewTemplate("cmd:tool {prompt} {prompt} {prompt} {prompt} {prompt} {prompt} {prompt} {prompt} {prompt}")
		if err != nil {
			t.Fatal(err)
		}
		_, err = many.Command(Request{RunID: "r", TaskID: "1", Attempt: 1, Prompt: strings.Repeat("z", 120<<10)})
		if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "standard input") {
			t.Fatalf("err = %v, want ErrInput naming standard input", err)
		}
	})
	t.Run("a NUL byte elsewhere is named by its place", func(t *testing.T) {
		_, err := inArg.Command(Request{RunID: "r", TaskID: "1\x00", Attempt: 1, Prompt: "p"})
		if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), `environment variable "ORCH_TASK_ID"`) {
			t.Fatalf("err = %v", err)
		}
	})
}
