package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// progress counts what "depotfs push" has sent and, on a terminal, redraws
// a progress bar a few times a second until stop. Its counters are safe
// for concurrent use.
type progress struct {
	files, bytes atomic.Int64
	totalFiles   int64
	totalBytes   int64
	start        time.Time
	w            io.Writer
	done         chan struct{}
	stopOnce     sync.Once
	wg           sync.WaitGroup
	end          time.Time
}

// newProgress starts counting; with bar set it draws on w until stop.
func newProgress(w io.Writer, files, bytes int64, bar bool) *progress {
	p := &progress{totalFiles: files, totalBytes: bytes, start: time.Now(), w: w, done: make(chan struct{})}
	if bar {
		p.wg.Go(p.draw)
	}
	return p
}

// draw redraws the bar every 200ms until stop, then once more.
func (p *progress) draw() {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			fmt.Fprintf(p.w, "\r%s\n", p.line())
			return
		case <-t.C:
			fmt.Fprintf(p.w, "\r%s", p.line())
		}
	}
}

// line is the bar: bytes, files, rate and time left.
func (p *progress) line() string {
	b, f := p.bytes.Load(), p.files.Load()
	secs := max(time.Since(p.start).Seconds(), 1e-3)
	rate := float64(b) / secs
	frac := 1.0
	if p.totalBytes > 0 {
		frac = min(float64(b)/float64(p.totalBytes), 1)
	}
	const width = 24
	fill := int(frac * width)
	left := "--"
	if rate > 0 && p.totalBytes > b {
		left = (time.Duration(float64(p.totalBytes-b)/rate) * time.Second).Round(time.Second).String()
	}
	return fmt.Sprintf("[%s%s] %3.0f%% %s/%s  %d/%d files  %s/s  %s left ",
		strings.Repeat("#", fill), strings.Repeat(" ", width-fill), frac*100,
		humanSize(b), humanSize(p.totalBytes), f, p.totalFiles, humanSize(int64(rate)), left)
}

// stop ends the bar and fixes the elapsed time; it is idempotent.
func (p *progress) stop() {
	p.stopOnce.Do(func() {
		p.end = time.Now()
		close(p.done)
		p.wg.Wait()
	})
}

// elapsed is the time from the start to stop (or now, before stop).
func (p *progress) elapsed() time.Duration {
	if p.end.IsZero() {
		return time.Since(p.start)
	}
	return p.end.Sub(p.start)
}
