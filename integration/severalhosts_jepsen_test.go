package integration_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
)

// jepsenWriteTimeout is the hosts' write time limit in the Jepsen-style
// test; its quorum losses last longer.
var jepsenWriteTimeout = bySoak(5*time.Second, 30*time.Second)

// jepsenRegisters and jepsenLog are the depot paths the Jepsen-style test
// writes: registers changed by conditional writes, one log appended to.
var jepsenRegisters = []string{"/jepsen/r0", "/jepsen/r1"}

const jepsenLog = "/jepsen/log"

// outcome is what a client learned of one write.
type outcome int

const (
	acked   outcome = iota // the reply confirmed it
	refused                // the reply said it changed nothing (a lost race, no quorum)
	unknown                // the reply said the outcome is unknown, or no reply came
)

// regWrite is one conditional write of a register.
type regWrite struct {
	reg, value string
	ifRev      uint64 // 0 for the unconditional first write
	outcome    outcome
	rev        uint64 // the revision an acknowledgement named
	msg        string // the reply of a write not acknowledged
}

// appendOp is one append of a unique line to the log.
type appendOp struct {
	line    string
	outcome outcome
	msg     string
}

// openRead is a read through another host's mount right after an
// acknowledgement (close-to-open).
type openRead struct {
	path   string
	host   int
	ackRev uint64 // for a register: the acknowledged revision
	line   string // for the log: the acknowledged line
	got    string
	err    error
	at     time.Duration // since the run began, to set beside the faults
}

// hostSlot is one depotfs host whose process the nemesis may kill and
// start again; workers take its current daemon under mu (nil while down).
type hostSlot struct {
	mu sync.Mutex
	d  *daemon
}

func (s *hostSlot) current() *daemon {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.d
}

// history records every operation the workers ran.
type history struct {
	mu      sync.Mutex
	writes  []*regWrite
	appends []*appendOp
	opens   []openRead
	failed  int // reads before a conditional write that failed, so no write was sent
	start   time.Time
}

// TestSeveralHostsJepsen: three depotfs hosts (the real binary, each with
// its mount) on a 3-node NATS cluster. Workers on every host make
// conditional writes of registers (guide_cache_file with if_revision, after
// an fs read) and appends of unique lines to one log (fs write, mode
// append) over MCP, concurrently so that they share group commits, and
// after every acknowledgement open the file through the other hosts' mounts.
// A nemesis pauses the tree's leader longer than an election, kills and
// restarts a NATS server, takes two away longer than the write time limit,
// and SIGKILLs a depotfs host and starts it again on its --db. Then, with
// everything back, every host's history, MCP reads and mount must show: the
// register's versions are one chain (each version's write was conditional
// on the version before it), every acknowledged write at the revision it
// was acknowledged with, nothing refused, the final value the newest; the
// log holds every acknowledged line once and no refused line. An unknown
// outcome is settled by what the depot holds, never skipped. An open after
// an acknowledgement may fail but never show older bytes.
//
// By default one round of faults with a 5 s write time limit
// (--nats-write-timeout) and a quorum loss of 7 s, about 40 s; with
// DEPOTFS_SOAK=1 four rounds with the default limit (30 s) and quorum
// losses of 32 s.
func TestSeveralHostsJepsen(t *testing.T) {
	t.Parallel()
	h := startHostsArgs(t, 3, []string{"--tools", "guide,fs", "--rate-calls", "0", "--keep-versions", "100000",
		"--nats-write-timeout", jepsenWriteTimeout.String()})
	slots := make([]*hostSlot, len(h.all))
	for i, d := range h.all {
		slots[i] = &hostSlot{d: d}
	}
	hist := &history{start: time.Now()}
	for _, reg := range jepsenRegisters {
		env := h.all[0].mustCall("guide_cache_file", map[string]any{"path": reg, "content": "init " + reg})
		hist.writes = append(hist.writes, &regWrite{reg: reg, value: "init " + reg, outcome: acked, rev: uint64(env.Data["revision"].(float64))})
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i, s := range slots {
				if d := s.current(); d != nil {
					for _, l := range strings.Split(d.logs.String(), "\n") {
						if (strings.Contains(l, "level=ERROR") || strings.Contains(l, "level=WARN")) && !strings.Contains(l, "outcome=conflict") {
							t.Logf("host %d: %s", i, l)
						}
					}
				}
			}
		}
	})

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range slots {
		for w := range 3 {
			wg.Go(func() { jepsenWorker(slots, i, w, w == 2, hist, stop) })
		}
	}

	faults := jepsenNemesis(t, h, slots, hist.start)
	close(stop)
	wg.Wait()

	anomalies, applied := checkJepsen(t, slots, hist)
	count := map[outcome]int{}
	for _, w := range hist.writes {
		count[w.outcome]++
	}
	for _, a := range hist.appends {
		count[a.outcome]++
	}
	var stale, openErrs int
	for _, o := range hist.opens {
		if o.err != nil {
			openErrs++
		}
	}
	for _, a := range anomalies {
		if strings.HasPrefix(a, "stale open") {
			stale++
		}
	}
	t.Logf("run began %s (times below are since then, to set beside the hosts' logs)", hist.start.UTC().Format(time.RFC3339Nano))
	t.Logf("%d operations (%d register writes, %d appends; %d reads before a write failed): %d acknowledged, %d refused, %d unknown (read back: %d applied, %d not); %d faults (%s); %d opens through another host's mount after an acknowledgement (%d failed with an error, %d stale); %d anomalies",
		len(hist.writes)+len(hist.appends), len(hist.writes), len(hist.appends), hist.failed,
		count[acked], count[refused], count[unknown], applied, count[unknown]-applied, len(faults), strings.Join(faults, ", "),
		len(hist.opens), openErrs, stale, len(anomalies))
	if len(anomalies) > 0 {
		t.Errorf("%d anomalies:\n%s", len(anomalies), strings.Join(anomalies[:min(len(anomalies), 30)], "\n"))
	}
	// A loaded machine acknowledged 134 in the default run; fewer than
	// 50 would leave the checks little to find.
	if count[acked] < 50 {
		t.Errorf("only %d acknowledged operations: the run checked too little", count[acked])
	}
}

// dialMCP connects a new MCP session to url without a testing.T, for
// workers that reconnect after their host was killed.
func dialMCP(url string) (*client.Client, error) {
	c, err := client.NewStreamableHttpClient(url)
	if err != nil {
		return nil, err
	}
	if err := c.Start(context.Background()); err != nil {
		c.Close()
		return nil, err
	}
	if err := initialize(c); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// jepsenWorker runs operations on host i until stop: appends when
// appender, else conditional writes of a register. After an
// acknowledgement it opens the file through every other host's mount.
func jepsenWorker(slots []*hostSlot, i, w int, appender bool, hist *history, stop chan struct{}) {
	r := rand.New(rand.NewPCG(uint64(i), uint64(w)))
	var c *client.Client
	var url string
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	for seq := 0; ; seq++ {
		select {
		case <-stop:
			return
		default:
		}
		d := slots[i].current()
		if d == nil || (c != nil && url != d.url) {
			if c != nil {
				c.Close()
				c = nil
			}
			if d == nil {
				time.Sleep(50 * time.Millisecond)
				continue
			}
		}
		if c == nil {
			var err error
			if c, err = dialMCP(d.url); err != nil {
				c = nil
				time.Sleep(100 * time.Millisecond)
				continue
			}
			url = d.url
		}
		// open reads path through every other host's mount.
		open := func(o openRead) {
			for j, s := range slots {
				if d := s.current(); j != i && d != nil {
					o.host = j
					got, err := os.ReadFile(d.path(o.path))
					o.got, o.err = string(got), err
					hist.record(o)
				}
			}
		}
		if appender {
			line := fmt.Sprintf("h%d w%d n%d", i, w, seq)
			op := &appendOp{line: line}
			raw, isErr, err := callRaw(c, "write", map[string]any{"path": strings.TrimPrefix(jepsenLog, "/"), "content": line + "\n", "mode": "append"})
			switch {
			case err != nil:
				op.outcome, op.msg = unknown, err.Error()
			case !isErr:
				op.outcome = acked
			case strings.Contains(string(raw), "is unknown"):
				op.outcome, op.msg = unknown, string(raw)
			default:
				op.outcome, op.msg = refused, string(raw)
			}
			hist.mu.Lock()
			hist.appends = append(hist.appends, op)
			hist.mu.Unlock()
			if op.outcome == acked {
				open(openRead{path: jepsenLog, line: line})
			}
			if err != nil {
				c.Close()
				c = nil
			}
			if op.outcome != acked {
				time.Sleep(50 * time.Millisecond)
			}
			continue
		}
		reg := jepsenRegisters[r.IntN(len(jepsenRegisters))]
		_, rev, err := readFile(c, reg)
		if err != nil {
			hist.mu.Lock()
			hist.failed++
			hist.mu.Unlock()
			if errors.Is(err, errProtocol) {
				c.Close()
				c = nil
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		wr := &regWrite{reg: reg, value: fmt.Sprintf("%s h%d w%d n%d", reg, i, w, seq), ifRev: rev}
		env, err := callWith(c, "guide_cache_file", map[string]any{"path": reg, "content": wr.value, "if_revision": rev})
		switch {
		case err != nil:
			wr.outcome, wr.msg = unknown, err.Error()
		case env.Success:
			wr.outcome = acked
			got, _ := env.Data["revision"].(float64)
			wr.rev = uint64(got)
		case strings.Contains(env.Message, "outcome is unknown"):
			wr.outcome, wr.msg = unknown, env.Message
		default:
			wr.outcome, wr.msg = refused, fmt.Sprintf("%s %+v", env.Message, env.Error)
		}
		hist.mu.Lock()
		hist.writes = append(hist.writes, wr)
		hist.mu.Unlock()
		if wr.outcome == acked {
			open(openRead{path: reg, ackRev: wr.rev})
		}
		if err != nil {
			c.Close()
			c = nil
		}
		if wr.outcome != acked {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func (hist *history) record(o openRead) {
	hist.mu.Lock()
	defer hist.mu.Unlock()
	o.at = time.Since(hist.start).Round(time.Millisecond)
	hist.opens = append(hist.opens, o)
}

// errProtocol marks a call that got no reply from the server.
var errProtocol = errors.New("no reply")

// readFile reads a depot file through the fs read tool: its content and
// revision.
func readFile(c *client.Client, p string) (string, uint64, error) {
	raw, isErr, err := callRaw(c, "read", map[string]any{"path": strings.TrimPrefix(p, "/")})
	if err != nil {
		return "", 0, fmt.Errorf("%w: %w", errProtocol, err)
	}
	if isErr {
		return "", 0, fmt.Errorf("read %s: %s", p, raw)
	}
	var r struct {
		Content  string `json:"content"`
		Metadata struct {
			Revision uint64 `json:"revision"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || r.Metadata.Revision == 0 {
		return "", 0, fmt.Errorf("read %s: reply %s: no content and revision (%v)", p, raw, err)
	}
	return r.Content, r.Metadata.Revision, nil
}

// jepsenNemesis injects the faults, one after another with a few seconds
// of calm between them so that writes are acknowledged between faults,
// and returns what it did. Everything is running again when it returns.
func jepsenNemesis(t *testing.T, h *hosts, slots []*hostSlot, start time.Time) []string {
	var faults []string
	since := func() time.Duration { return time.Since(start).Round(100 * time.Millisecond) }
	var began time.Duration
	calm := func() { time.Sleep(bySoak(1500*time.Millisecond, 3*time.Second)) }
	rounds := bySoak(1, 4)
	calm()
	for round := range rounds {
		// Longer than an election (the servers' timeout is a few
		// seconds): the others elect a new leader while the paused one
		// still believes it leads.
		leader := h.treeLeader(t)
		began = since()
		h.cluster.Pause(leader)
		time.Sleep(10 * time.Second)
		h.cluster.Resume(leader)
		faults = append(faults, fmt.Sprintf("%v-%v SIGSTOP of the tree's leader %s for 10s", began, since(), h.cluster.Nodes[leader].Name))
		h.cluster.WaitReady()
		calm()

		leader = h.treeLeader(t)
		began = since()
		h.cluster.Kill(leader)
		down := bySoak(2*time.Second, 3*time.Second)
		time.Sleep(down)
		h.cluster.Restart(leader)
		faults = append(faults, fmt.Sprintf("%v-%v SIGKILL of the tree's leader %s, restarted after %v", began, since(), h.cluster.Nodes[leader].Name, down))
		calm()

		// Quorum lost for longer than a write's time limit: writes in
		// flight must answer unknown or refused, not hang.
		gone := []int{round % 3, (round + 1) % 3}
		began = since()
		for _, i := range gone {
			h.cluster.Kill(i)
		}
		lost := jepsenWriteTimeout + 2*time.Second
		time.Sleep(lost)
		for _, i := range gone {
			if err := h.cluster.StartNode(i); err != nil {
				t.Fatal(err)
			}
		}
		h.cluster.WaitReady()
		faults = append(faults, fmt.Sprintf("%v-%v quorum lost for %v (%s and %s killed)", began, since(), lost, h.cluster.Nodes[gone[0]].Name, h.cluster.Nodes[gone[1]].Name))
		calm()

		victim := round % len(slots)
		s := slots[victim]
		s.mu.Lock()
		old := s.d
		s.d = nil
		s.mu.Unlock()
		began = since()
		old.kill()
		d := startDaemon(t, daemonConfig{transport: overHTTP, db: old.db, mount: old.mount, args: old.cfg.args})
		s.mu.Lock()
		s.d = d
		s.mu.Unlock()
		faults = append(faults, fmt.Sprintf("%v-%v SIGKILL of depotfs host %d, restarted on its --db", began, since(), victim))
		calm()
	}
	return faults
}

// version is one entry of guide_file_history.
type version struct {
	Revision uint64 `json:"revision"`
	Live     bool   `json:"live"`
	SHA256   string `json:"sha256"`
}

// checkJepsen reads the depot back on every host and returns every
// anomaly: a history that is not one chain, an acknowledged write missing
// or at another revision, a refused write applied, hosts that disagree, a
// final value or log that is not what the acknowledged writes made, a stale
// open. It also returns how many writes of unknown outcome the depot
// holds.
func checkJepsen(t *testing.T, slots []*hostSlot, hist *history) (anomalies []string, applied int) {
	bad := func(format string, args ...any) { anomalies = append(anomalies, fmt.Sprintf(format, args...)) }
	bySum := map[string]*regWrite{}
	for _, w := range hist.writes {
		bySum[sha256hex([]byte(w.value))] = w
	}
	// revOf is the revision each applied register write holds.
	revOf := map[string]uint64{}
	for _, reg := range jepsenRegisters {
		var first []version
		for i, s := range slots {
			d := s.current()
			var vs []version
			waitFor(t, 60*time.Second, "guide_file_history on host "+fmt.Sprint(i), func() bool {
				env, err := d.tryCall("guide_file_history", map[string]any{"path": reg})
				if err != nil || !env.Success {
					return false
				}
				raw, _ := json.Marshal(env.Data["versions"])
				return json.Unmarshal(raw, &vs) == nil
			})
			slices.Reverse(vs) // oldest first
			if i == 0 {
				first = vs
			} else if !slices.Equal(vs, first) {
				bad("hosts disagree on the history of %s: host 0 %v, host %d %v", reg, first, i, vs)
			}
			var content string
			var rev uint64
			waitFor(t, 60*time.Second, "an fs read on host "+fmt.Sprint(i), func() bool {
				var err error
				content, rev, err = readFile(d.client, reg)
				return err == nil
			})
			var mount []byte
			waitFor(t, 60*time.Second, "a read through the mount of host "+fmt.Sprint(i), func() bool {
				var err error
				mount, err = os.ReadFile(d.path(reg))
				return err == nil
			})
			if len(vs) == 0 {
				bad("%s: no history on host %d", reg, i)
				continue
			}
			last := vs[len(vs)-1]
			if !last.Live || last.Revision != rev || last.SHA256 != sha256hex([]byte(content)) || string(mount) != content {
				bad("%s on host %d: newest version %+v, fs read %q at %d, mount %q", reg, i, last, content, rev, mount)
			}
		}
		var prev *version
		for k, v := range first {
			w := bySum[v.SHA256]
			switch {
			case w == nil:
				bad("%s: version %d holds content no client wrote (sha256 %s)", reg, v.Revision, v.SHA256)
			case w.reg != reg:
				bad("%s: version %d holds a write of %s", reg, v.Revision, w.reg)
			case revOf[w.value] != 0:
				bad("%s: write %q applied twice, at %d and %d", reg, w.value, revOf[w.value], v.Revision)
			case w.outcome == refused:
				bad("%s: refused write %q applied at %d (reply: %s)", reg, w.value, v.Revision, w.msg)
			case w.outcome == acked && w.rev != v.Revision:
				bad("%s: write %q acknowledged at %d, applied at %d", reg, w.value, w.rev, v.Revision)
			case k == 0 && w.ifRev != 0:
				bad("%s: first version %q was conditional on %d", reg, w.value, w.ifRev)
			case k > 0 && w.ifRev != prev.Revision:
				bad("%s: version %d (%q, if_revision %d) follows version %d: not one chain", reg, v.Revision, w.value, w.ifRev, prev.Revision)
			}
			if w != nil {
				revOf[w.value] = v.Revision
			}
			prev = &first[k]
		}
	}
	for _, w := range hist.writes {
		if w.outcome == unknown && revOf[w.value] != 0 {
			applied++
		}
		if w.outcome == acked && revOf[w.value] == 0 {
			bad("%s: acknowledged write %q at %d is not in the history", w.reg, w.value, w.rev)
		}
	}

	var logContent string
	for i, s := range slots {
		d := s.current()
		var content string
		waitFor(t, 60*time.Second, "an fs read of the log on host "+fmt.Sprint(i), func() bool {
			var err error
			content, _, err = readFile(d.client, jepsenLog)
			return err == nil
		})
		mount, err := os.ReadFile(d.path(jepsenLog))
		if err != nil || string(mount) != content {
			bad("the log on host %d: fs read %d bytes, mount %d bytes (%v)", i, len(content), len(mount), err)
		}
		if i == 0 {
			logContent = content
		} else if content != logContent {
			bad("hosts disagree on the log: host 0 %d bytes, host %d %d bytes", len(logContent), i, len(content))
		}
	}
	times := map[string]int{}
	for _, l := range strings.Split(strings.TrimSuffix(logContent, "\n"), "\n") {
		times[l]++
	}
	known := map[string]bool{}
	for _, a := range hist.appends {
		known[a.line] = true
		n := times[a.line]
		if a.outcome == unknown && n == 1 {
			applied++
		}
		switch {
		case n > 1:
			bad("log: %q appended %d times (%v)", a.line, n, a.outcome)
		case a.outcome == acked && n != 1:
			bad("log: acknowledged append %q missing", a.line)
		case a.outcome == refused && n != 0:
			bad("log: refused append %q applied (reply: %s)", a.line, a.msg)
		}
	}
	for l := range times {
		if l != "" && !known[l] {
			bad("log: line %q no client appended", l)
		}
	}

	for _, o := range hist.opens {
		switch {
		case o.err != nil:
		case o.path == jepsenLog && !strings.Contains(o.got, o.line+"\n"):
			bad("stale open at %v of the log on host %d: acknowledged line %q missing (%d bytes read)", o.at, o.host, o.line, len(o.got))
		case o.path != jepsenLog:
			w := bySum[sha256hex([]byte(o.got))]
			if w == nil || revOf[w.value] == 0 {
				bad("open of %s on host %d after revision %d was acknowledged: %q, never applied", o.path, o.host, o.ackRev, o.got)
			} else if revOf[w.value] < o.ackRev {
				bad("stale open at %v of %s on host %d: %q (revision %d) after revision %d was acknowledged", o.at, o.path, o.host, o.got, revOf[w.value], o.ackRev)
			}
		}
	}
	return anomalies, applied
}
