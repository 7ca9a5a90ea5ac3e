package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
)

// CodeShuttingDown is the JSON-RPC error code of a request refused because
// depotfs is stopping (the implementation-defined server error range, as
// the "busy" refusals).
const CodeShuttingDown = -32000

// ShuttingDownReply returns the JSON-RPC error response that refuses a
// request because depotfs is shutting down, for the request whose id is
// id (as JSON; nil gives null). Both transports answer it from the signal
// on: HTTP with a 503, stdio on its output. It is safe for concurrent use.
func ShuttingDownReply(id json.RawMessage) []byte {
	body, err := rpcErrorBody(id, CodeShuttingDown, "depotfs is shutting down and takes no new calls; retry once it is back",
		map[string]bool{"retryable": true, "shutting_down": true})
	if err != nil { // id was not JSON: answer as to an unreadable request
		return ShuttingDownReply(nil)
	}
	return body
}

// errStdioStopped is what a write to the client gets once ServeStdio has
// returned.
var errStdioStopped = errors.New("mcpserver: the stdio transport has stopped")

// stdioOut is the client's output, shared by mcp-go's stdio loop and the
// gate: each Write (one whole message with its newline, from either) goes
// out alone, and nothing goes out once the transport has stopped. It is
// safe for concurrent use.
type stdioOut struct {
	mu      sync.Mutex
	w       io.Writer
	stopped bool
}

func (o *stdioOut) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stopped {
		return 0, errStdioStopped
	}
	return o.w.Write(p)
}

// stop makes every later Write fail.
func (o *stdioOut) stop() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stopped = true
}

// stdioGate stands between the client's input and mcp-go's stdio loop, so
// that a shutdown answers the requests that come after it instead of
// dropping them. Until shut is called, it hands every line to mcp-go
// through a pipe, which mcp-go reads to its end (mcp-go's own loop, if
// cancelled, drops a line its reader already took). From shut on, it
// closes the pipe between two lines, and answers every request it reads
// itself with ShuttingDownReply, until the input ends or the output
// stops. Its methods are safe for concurrent use.
type stdioGate struct {
	log *slog.Logger
	out *stdioOut
	pr  *io.PipeReader // mcp-go's input
	pw  *io.PipeWriter

	mu     sync.Mutex // held while a line is handed over, so shut waits for its end
	closed bool       // pw is closed: lines are answered here
}

func newStdioGate(out *stdioOut, log *slog.Logger) *stdioGate {
	pr, pw := io.Pipe()
	return &stdioGate{log: log, out: out, pr: pr, pw: pw}
}

// run reads in line by line until it ends or fails, handing each line to
// mcp-go or refusing it. It returns when in does: its owner cannot stop a
// blocked Read, so it lingers until in ends once ServeStdio has returned,
// writing nothing more.
func (g *stdioGate) run(in io.Reader) {
	br := bufio.NewReader(in)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 && !g.pass(line) {
			g.refuse(line)
		}
		if err != nil {
			g.close(err)
			return
		}
	}
}

// pass hands line to mcp-go and reports whether it did: not once the gate
// is shut or mcp-go has stopped reading.
func (g *stdioGate) pass(line []byte) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	_, err := g.pw.Write(line)
	return err == nil
}

// shut stops handing lines to mcp-go: its input ends after the line being
// handed over, if any, and the lines read from then on are refused.
func (g *stdioGate) shut() { g.close(io.EOF) }

// close ends mcp-go's input with err (io.EOF: a clean end).
func (g *stdioGate) close(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		g.closed = true
		g.pw.CloseWithError(err)
	}
}

// refuse answers line, if it is a request, with ShuttingDownReply.
func (g *stdioGate) refuse(line []byte) {
	id, ok := replyID(line)
	if !ok {
		return
	}
	if _, err := g.out.Write(append(ShuttingDownReply(id), '\n')); err != nil {
		g.log.Debug("stdio: a request after the shutdown began went unanswered", "err", err)
		return
	}
	g.log.Debug("stdio: refused a request: depotfs is shutting down", "id", string(id))
}

// replyID returns the id to answer line with, and whether line wants an
// answer: a request does, a notification, a response to a request of the
// server's or a blank line does not, and a line that is no JSON-RPC
// message gets one with a null id (as over HTTP).
func replyID(line []byte) (json.RawMessage, bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, false
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(line, &msg); err != nil {
		return nil, true
	}
	switch {
	case msg.Method != nil:
		return msg.ID, msg.ID != nil
	case msg.Result != nil || msg.Error != nil:
		return nil, false
	}
	return msg.ID, true
}
