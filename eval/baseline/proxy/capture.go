// capture.go: collects one output stream (stdout or stderr) of an activation as lines, with a
// byte bound on the log part, and keeps the last non-empty line apart as the result candidate.

package main

import (
	"bytes"
	"fmt"
	"sync"
)

// lineCapture is an io.Writer for one stream of one action process.
//
// The stream is cut into lines at '\n'. The last non-empty line (with any empty lines after
// it) is kept in tail: for stdout it is the action's result; everything before it is log.
// Log lines are kept up to limit bytes; beyond that they are dropped and a note says so. A
// single line is kept up to maxLine bytes (a longer result cannot be valid anyway).
type lineCapture struct {
	mu        sync.Mutex
	limit     int      // bound on the bytes of log lines kept
	maxLine   int      // bound on the bytes of one line
	size      int      // bytes of log lines kept so far
	lines     [][]byte // log lines, in order
	tail      [][]byte // last non-empty line followed by the empty lines after it
	partial   []byte   // the line being written, not yet ended by '\n'
	truncated bool     // some log lines were dropped
}

func newLineCapture(limit, maxLine int) *lineCapture {
	return &lineCapture{limit: limit, maxLine: maxLine}
}

// Write implements io.Writer; it never fails (excess output is dropped, not refused, so the
// action never sees a broken pipe because it logs too much).
func (c *lineCapture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := c.maxLine - len(c.partial); room > 0 {
			if len(chunk) > room {
				chunk = chunk[:room]
			}
			c.partial = append(c.partial, chunk...)
		}
		if i < 0 {
			break
		}
		c.endLine()
		p = p[i+1:]
	}
	return n, nil
}

// endLine files the current partial line (c.mu held).
func (c *lineCapture) endLine() {
	line := bytes.TrimSuffix(c.partial, []byte("\r"))
	line = append([]byte(nil), line...)
	c.partial = c.partial[:0]
	if len(bytes.TrimSpace(line)) > 0 {
		// A new result candidate: the previous one and the empty lines after it are log.
		c.flushTail()
		c.tail = [][]byte{line}
	} else if c.tail != nil {
		c.tail = append(c.tail, line)
	} else {
		c.log(line)
	}
}

func (c *lineCapture) flushTail() {
	for _, l := range c.tail {
		c.log(l)
	}
	c.tail = nil
}

func (c *lineCapture) log(line []byte) {
	if c.size+len(line) > c.limit {
		c.truncated = true
		return
	}
	c.size += len(line)
	c.lines = append(c.lines, line)
}

// close ends the stream: a last line without '\n' still counts.
func (c *lineCapture) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.partial) > 0 {
		c.endLine()
	}
}

// result is the last non-empty line, or nil when the stream had none.
func (c *lineCapture) result() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tail == nil {
		return nil
	}
	return c.tail[0]
}

// logText is the log as newline-terminated text, with a note when lines were dropped. With
// dropResult the result line is left out (it went into the response instead).
func (c *lineCapture) logText(dropResult bool) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	tail := c.tail
	if dropResult && len(tail) > 0 {
		tail = tail[1:]
	}
	for _, l := range tail {
		c.log(l)
	}
	c.tail = nil
	var b bytes.Buffer
	for _, l := range c.lines {
		b.Write(l)
		b.WriteByte('\n')
	}
	if c.truncated {
		fmt.Fprintf(&b, "Logs were truncated because they exceed the limit of %d bytes.\n", c.limit)
	}
	return b.Bytes()
}
