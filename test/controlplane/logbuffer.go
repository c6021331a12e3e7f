package controlplane

import (
	"bytes"
	"sync"
)

// LogBuffer collects a process's output while a test reads it.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Tail is the last n bytes written.
func (b *LogBuffer) Tail(n int) string {
	s := b.String()
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return s
}
