package integration_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// memOf returns the anonymous and file-backed resident memory of process
// pid in MiB (RssAnon, RssFile).
func memOf(t testing.TB, pid int) (anon, file float64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	field := func(name string) float64 {
		for _, l := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(l, name+":"); ok {
				kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
				if err != nil {
					t.Fatal(err)
				}
				return kb / 1024
			}
		}
		t.Fatalf("no %s in /proc/%d/status", name, pid)
		return 0
	}
	return field("RssAnon"), field("RssFile")
}

// BenchmarkSeveralHostsScale measures what a host of a 3-host NATS depot
// costs as the depot grows, beside a bolt server given the same tree in
// the same run: the push (depotfs push of small files, 1,000 per
// directory), each process's anonymous and file-backed memory empty and
// after the push, the time a host killed and started again on its --db
// takes to print its ready line (a NATS host reads the whole tree first),
// and a find over its mount right after. DEPOTFS_SCALE_FILES sets the
// count (100,000 by default):
//
//	DEPOTFS_SCALE_FILES=300000 bench/nats-scale.sh
func BenchmarkSeveralHostsScale(b *testing.B) {
	files := 100000
	if n, err := strconv.Atoi(os.Getenv("DEPOTFS_SCALE_FILES")); err == nil && n > 0 {
		files = n
	}
	src := filepath.Join(b.TempDir(), "tree")
	for i := range files {
		p := filepath.Join(src, fmt.Sprintf("d%04d", i/1000), fmt.Sprintf("f%07d.txt", i))
		if i%1000 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(p, benchText(i, 100+i*37%400), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	last := fmt.Sprintf("/scale/tree/d%04d/f%07d.txt", (files-1)/1000, files-1)
	const readyWithin = 30 * time.Minute
	push := func(d *daemon) time.Duration {
		start := time.Now()
		code, stdout, stderr := runDepotfsWith(b, 2*time.Hour, "", nil, "push", "--url", d.url, "--to", "/scale", src)
		if code != 0 {
			b.Fatalf("push to %s: exit %d\n%s\n%s", d.url, code, stdout, stderr)
		}
		return time.Since(start)
	}
	restart := func(d *daemon) (*daemon, time.Duration) {
		d.kill()
		start := time.Now()
		nd := startDaemon(b, daemonConfig{transport: overHTTP, db: d.db, mount: d.mount, args: d.cfg.args, readyWithin: readyWithin})
		return nd, time.Since(start)
	}
	find := func(d *daemon) time.Duration {
		start := time.Now()
		out, err := exec.Command("find", d.mount, "-type", "f").Output()
		took := time.Since(start)
		if err != nil {
			b.Fatalf("find over %s: %v", d.mount, err)
		}
		if n := strings.Count(string(out), "\n"); n != files {
			b.Fatalf("find over %s: %d files, want %d", d.mount, n, files)
		}
		return took
	}
	for range b.N {
		b.StopTimer()
		bolt := startDaemon(b, daemonConfig{transport: overHTTP, readyWithin: readyWithin})
		h := startHostsB(b, 3)
		boltAnon0, _ := memOf(b, bolt.cmd.Process.Pid)
		natsAnon0, _ := memOf(b, h.all[1].cmd.Process.Pid)
		b.StartTimer()
		boltPush := push(bolt)
		natsPush := push(h.all[0])
		for _, d := range h.all[1:] {
			waitFor(b, 10*time.Minute, "the last file on another host", func() bool {
				_, err := os.Stat(d.path(last))
				return err == nil
			})
		}
		boltAnon, boltFile := memOf(b, bolt.cmd.Process.Pid)
		natsAnon, natsFile := memOf(b, h.all[1].cmd.Process.Pid)
		var each []string
		for _, d := range h.all {
			anon, file := memOf(b, d.cmd.Process.Pid)
			each = append(each, fmt.Sprintf("%.0f+%.0f", anon, file))
		}
		bolt, boltReady := restart(bolt)
		var natsReady time.Duration
		h.all[2], natsReady = restart(h.all[2])
		boltFind, natsFind := find(bolt), find(h.all[2])
		restartedAnon, _ := memOf(b, h.all[2].cmd.Process.Pid)
		b.StopTimer()
		b.ReportMetric(natsAnon, "nats-rssanon-MiB")
		b.ReportMetric(boltAnon, "bolt-rssanon-MiB")
		b.ReportMetric(natsReady.Seconds(), "nats-ready-s")
		b.ReportMetric(boltReady.Seconds(), "bolt-ready-s")
		row := func(what, bolt, nats string) { b.Logf("%-28s | %-16s | %s", what, bolt, nats) }
		mib := func(a, b float64) string { return fmt.Sprintf("%.0f / %.0f MiB", a, b) }
		row(fmt.Sprintf("%d files", files), "bolt", "NATS host (3 hosts, 3 servers)")
		row("push (depotfs push)", boltPush.Round(time.Millisecond).String(), natsPush.Round(time.Millisecond).String()+" (through host 0)")
		row("RssAnon empty / after push", mib(boltAnon0, boltAnon), mib(natsAnon0, natsAnon)+fmt.Sprintf(" (host 1, %.2f KiB a file)", (natsAnon-natsAnon0)*1024/float64(files)))
		row("RssFile after push", fmt.Sprintf("%.0f MiB", boltFile), fmt.Sprintf("%.0f MiB", natsFile))
		row("RssAnon+RssFile, each host", fmt.Sprintf("%.0f+%.0f MiB", boltAnon, boltFile), strings.Join(each, ", ")+" MiB (hosts 0, 1, 2)")
		row("restart to ready line", boltReady.Round(time.Millisecond).String(), natsReady.Round(time.Millisecond).String()+fmt.Sprintf(" (host 2; RssAnon %.0f MiB after its find)", restartedAnon))
		row("find over the mount, first", boltFind.Round(time.Millisecond).String(), natsFind.Round(time.Millisecond).String())
		b.Logf("NATS/bolt: RssAnon after push %.2fx, restart %.1fx", natsAnon/boltAnon, natsReady.Seconds()/boltReady.Seconds())
	}
}
