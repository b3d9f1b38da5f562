package source

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/agentnas/nas/adapter"
	"github.com/agentnas/nas/program"
)

// proc is one running adapter: its pipes and whether the stream is still
// in step.
type proc struct {
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	out    *bufio.Reader
	broken bool // killed at give: an answer failed or was left unread
	exited chan struct{}
}

// startProc runs the adapter c names, with its stderr going to the log.
func startProc(c ExecConfig) (*proc, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Env = program.Env()
	cmd.Dir = "/"
	cmd.Stdin, cmd.Stdout = inR, outW
	errR, err := cmd.StderrPipe()
	if err == nil {
		program.SetGroup(cmd)
		err = cmd.Start()
	}
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	p := &proc{cmd: cmd, stdin: inW, stdout: outR, out: newProcReader(outR), exited: make(chan struct{})}
	go logStderr(c, errR)
	go func() { cmd.Wait(); close(p.exited) }()
	return p, nil
}

// newProcReader buffers an adapter's answers.
func newProcReader(r io.Reader) *bufio.Reader { return bufio.NewReaderSize(r, 64<<10) }

// logStderr logs what an adapter writes to stderr, a line at a time
// (cut at 1 KiB), until it exits.
func logStderr(c ExecConfig, r io.Reader) {
	br := bufio.NewReaderSize(r, 1024)
	for {
		line, isPrefix, err := br.ReadLine()
		if len(line) > 0 {
			c.Log.Info("adapter", "adapter", c.Path, "stderr", string(line))
		}
		for isPrefix && err == nil {
			_, isPrefix, err = br.ReadLine()
		}
		if err != nil {
			return
		}
	}
}

// kill stops the adapter (its process group) and closes the pipes.
func (p *proc) kill() {
	if p.cmd != nil {
		program.KillGroup(p.cmd)
	}
	p.stdin.Close()
	p.stdout.Close()
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
	}
}

// hello greets a fresh adapter and checks its protocol.
func (p *proc) hello(ctx context.Context, timeout time.Duration) error {
	res, err := p.call(ctx, adapter.Request{Op: adapter.OpHello, Protocol: adapter.Protocol}, timeout)
	switch {
	case err != nil:
		return fmt.Errorf("no greeting: %w", err)
	case res.Error != nil:
		return fmt.Errorf("greeting refused: %w", res.Error)
	case res.Protocol != adapter.Protocol:
		return fmt.Errorf("speaks protocol %d, not %d", res.Protocol, adapter.Protocol)
	}
	return nil
}

// call sends req and reads the answer's line, each within timeout (or
// until ctx ends).
func (p *proc) call(ctx context.Context, req adapter.Request, timeout time.Duration) (*adapter.Response, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() {
		now := time.Now()
		p.stdin.SetWriteDeadline(now)
		p.stdout.SetReadDeadline(now)
	})
	defer stop()
	p.stdin.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("sending the request: %w", err)
	}
	line, err := p.line(timeout)
	if err != nil {
		return nil, err
	}
	var res adapter.Response
	if err := json.Unmarshal(line, &res); err != nil {
		return nil, fmt.Errorf("an answer that is not JSON (%.60q): %w", line, err)
	}
	return &res, nil
}

// errLongLine is an answer longer than adapter.MaxLine.
var errLongLine = errors.New("an answer line longer than 4 MiB")

// line reads one answer line within timeout.
func (p *proc) line(timeout time.Duration) ([]byte, error) {
	p.stdout.SetReadDeadline(time.Now().Add(timeout))
	var buf []byte
	for {
		frag, err := p.out.ReadSlice('\n')
		if len(buf)+len(frag) > adapter.MaxLine {
			return nil, errLongLine
		}
		buf = append(buf, frag...)
		if err == nil {
			return bytes.TrimSuffix(buf, []byte{'\n'}), nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, fmt.Errorf("no answer within %v (killed)", timeout)
			}
			return nil, fmt.Errorf("reading the answer: %w", err)
		}
	}
}

// read reads raw bytes that follow an answer, waiting at most timeout
// for any.
func (p *proc) read(buf []byte, timeout time.Duration) (int, error) {
	p.stdout.SetReadDeadline(time.Now().Add(timeout))
	n, err := p.out.Read(buf)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return n, fmt.Errorf("no bytes for %v (killed)", timeout)
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// drain reads and drops n bytes that follow an answer.
func (p *proc) drain(n int64, timeout time.Duration) error {
	buf := make([]byte, 32<<10)
	for n > 0 {
		k, err := p.read(buf[:min(int64(len(buf)), n)], timeout)
		n -= int64(k)
		if err != nil {
			return err
		}
	}
	return nil
}
