// Command node is one server of a natstest cluster: the nats-server that
// package natstest starts on the configuration file it writes (see
// natstest.Main). natstest builds it without the race detector, once per
// test process, so that the servers a test starts do not pay for
// instrumentation nobody reads. It is for tests only.
package main

import (
	"fmt"
	"os"

	"github.com/depotfs/depotfs/store/nats/natstest"
)

func main() {
	natstest.Main()
	fmt.Fprintln(os.Stderr, "node: started by package natstest only")
	os.Exit(2)
}
