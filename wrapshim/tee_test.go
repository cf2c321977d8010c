package wrapshim

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"vibebrowser/manager/api"
)

// Output sent to a regular file is read back after the call: what the call wrote since the offset at its
// start, through a file of the shim's own, the agent's offset left where the call left it. A file cut short,
// rewound or removed during the call is untold, with why.
func TestFileTail(t *testing.T) {
	big := strings.Repeat("x", api.CallOutputMax) + "the end"
	tests := []struct {
		name     string
		during   func(t *testing.T, f *os.File, path string) // the call's writes, and whatever else happened
		want     string
		wantCut  bool
		wantWhy  string
		appendTo bool
	}{
		{name: "written", during: func(t *testing.T, f *os.File, _ string) { f.WriteString("new output\n") }, want: "new output\n"},
		{name: "appended", appendTo: true, during: func(t *testing.T, f *os.File, _ string) { f.WriteString("appended\n") }, want: "appended\n"},
		{name: "nothing written", during: func(*testing.T, *os.File, string) {}, want: ""},
		{name: "more than the tail", during: func(t *testing.T, f *os.File, _ string) { f.WriteString(big) },
			want: big[len(big)-api.CallOutputMax:], wantCut: true},
		{name: "truncated then written", during: func(t *testing.T, f *os.File, _ string) {
			f.WriteString("first\n")
			f.Truncate(0)
			f.WriteString("second\n")
		}, wantWhy: "truncated"},
		{name: "truncated at the end", during: func(t *testing.T, f *os.File, _ string) {
			f.WriteString(strings.Repeat("y", 10000))
			f.Truncate(3)
		}, wantWhy: "truncated"},
		{name: "truncated and appended", appendTo: true, during: func(t *testing.T, f *os.File, _ string) {
			f.Truncate(0)
			f.WriteString("again\n")
		}, wantWhy: "truncated or rewound"},
		{name: "a hole written past", during: func(t *testing.T, f *os.File, _ string) {
			f.Truncate(0)
			f.WriteAt([]byte("z"), 1<<20) // far past: the blocks between are a hole
			f.Seek(1<<20+1, io.SeekStart)
		}, wantWhy: "truncated"},
		{name: "deleted", during: func(t *testing.T, f *os.File, path string) {
			f.WriteString("gone\n")
			os.Remove(path)
		}, wantWhy: "deleted or replaced"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.txt")
			if err := os.WriteFile(path, []byte(strings.Repeat("earlier output\n", 100)), 0o600); err != nil {
				t.Fatal(err)
			}
			flags := os.O_WRONLY // the shell's > opens it write-only
			if tt.appendTo {
				flags |= os.O_APPEND
			}
			f, err := os.OpenFile(path, flags, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if !tt.appendTo {
				f.Seek(0, io.SeekEnd)
			}
			ft := startFileTail(f)
			if ft == nil {
				t.Fatal("startFileTail = nil")
			}
			tt.during(t, f, path)
			before, _ := f.Seek(0, io.SeekCurrent)
			tail, cut, why := ft.kept()
			if after, _ := f.Seek(0, io.SeekCurrent); after != before {
				t.Errorf("kept moved the agent's offset from %d to %d", before, after)
			}
			if tt.wantWhy != "" {
				if !strings.Contains(why, tt.wantWhy) || tail != "" {
					t.Errorf("kept() = %q, %q; want untold because %q", tail, why, tt.wantWhy)
				}
				return
			}
			if why != "" || tail != tt.want || cut != tt.wantCut {
				t.Errorf("kept() = %.60q (cut %v), %q; want %.60q (cut %v)", tail, cut, why, tt.want, tt.wantCut)
			}
		})
	}
}

// TestTapsOutputKeptOpen: a process the CLI left behind keeps its stdout open. The shim stops waiting after
// the output grace, with everything the CLI wrote passed on and kept, and the stream named untold; a stream
// that ends is not.
func TestTapsOutputKeptOpen(t *testing.T) {
	agentR, agentW, err := os.Pipe() // the agent's stdout
	if err != nil {
		t.Fatal(err)
	}
	defer agentR.Close()
	errR, errW, err := os.Pipe() // the agent's stderr
	if err != nil {
		t.Fatal(err)
	}
	defer errR.Close()
	code, err := os.CreateTemp(t.TempDir(), "code")
	if err != nil {
		t.Fatal(err)
	}
	defer code.Close()
	tp := startTaps([3]*os.File{code, agentW, errW}, false)
	// The CLI: writes, and leaves a copy of its stdout with a process of its own; its stderr ends.
	cliOut, err := syscall.Dup(int(tp.stdio[1].Fd()))
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(cliOut)
	want := strings.Repeat("x", 100<<10) // more than the pipe holds: the relay must be running
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		syscall.Write(cliOut, []byte(want)) // returns once all of it is in the pipe or passed on
		syscall.Write(int(tp.stdio[2].Fd()), []byte("warning"))
	}()
	got := make(chan string)
	go func() {
		b, _ := io.ReadAll(agentR)
		got <- string(b)
	}()
	go io.Copy(io.Discard, errR)
	<-wrote // the CLI exits
	var rep api.CallReport
	tp.finish(&rep)
	agentW.Close()
	errW.Close()
	if !slices.Equal(rep.Untold, []string{"stdout (kept open by a process the CLI left behind)"}) {
		t.Errorf("untold %q; want stdout alone", rep.Untold)
	}
	if rep.Stderr != "warning" {
		t.Errorf("stderr kept %q; want %q", rep.Stderr, "warning")
	}
	syscall.Close(cliOut)
	if s := <-got; s != want {
		t.Errorf("the agent read %d bytes of the CLI's %d", len(s), len(want))
	}
}
