package main

import (
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/depotfs/depotfs/bench/internal/benchd"
)

// The seeded mode (-seeded FILE): the measures of a size on a bolt depot
// written beforehand without pushes (bench/walk.sh -seed), for the sizes
// whose pushes would take hours (10,000,000 files at a push's rate of
// about 1,600 files a second is 1.7 h). There is no push rate, no tmpfs
// (the tree would not fit in memory) and no floor beside it; what it
// measures is what must not grow with the depot, to compare with the
// same measures of a small depot seeded the same way in the same hour:
// restart-to-ready, anonymous memory after a start, after the walks and
// once the kernel has forgotten their inodes (its dentry and inode
// caches dropped a few seconds after the walk, then a few more seconds
// idle) against an empty server's, and each walk's first pass on a fresh
// mount with the kernel's caches dropped before it (the database read
// from disk, as after a reboot), in wall and server CPU µs a file. With -seeded-push P it then pushes P
// more files into the depot (which keeps them, and a snapshot
// "seeded-push" of the whole tree) on a fresh server, and measures what
// the pushes left in anonymous memory and a whole-tree snapshot. The write near the store limit is not measured there: on a
// seeded depot with the snapshot held the store found nothing evictable
// and refused it, so its time would say nothing about a snapshot's cost.

// seeded measures the server on the depot in db, of n files, and then
// pushes push files into it (none if push is 0).
func (b *bench) seeded(db string, n, restarts, push int) {
	b.db, b.mnt, b.blobs = filepath.Join(b.dir, "empty.db"), filepath.Join(b.dir, "mnt"), filepath.Join(b.dir, "blobs")
	// Interrupted, leave no mount: the server gets SIGTERM as this
	// process ends, and unmounts; this makes sure.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	go func() {
		<-sig
		syscall.Unmount(b.mnt, syscall.MNT_DETACH)
		os.Exit(1)
	}()
	fmt.Printf("scalebench -seeded %s: %s, kernel %s, %d files, %d a directory; load average at start: %s\n",
		db, time.Now().UTC().Format(time.RFC3339), kernel(), n, b.perDir, loadavg())
	d := b.start()
	time.Sleep(max(b.pause, 4*time.Second))
	emptyAnon, _ := d.rss()
	d.stop()
	os.Remove(b.db)
	fmt.Printf("empty server: RssAnon %s\n", mib(emptyAnon))

	b.db = db
	// Restarts cold (the caches dropped: the binary and the database
	// read from disk, as after a reboot) and warm (right after a stop,
	// as after an upgrade), alternating.
	var cold, warm []time.Duration
	for range restarts {
		dropCaches()
		d, took := b.restart()
		cold = append(cold, took)
		d.stop()
		d, took = b.restart()
		warm = append(warm, took)
		d.stop()
	}
	slices.Sort(cold)
	slices.Sort(warm)
	fmt.Printf("restart to ready, caches dropped (%d): %v\nrestart to ready, right after a stop (%d): %v\n", restarts, cold, restarts, warm)

	d, _ = b.restart()
	time.Sleep(max(b.pause, 4*time.Second))
	anon, file := d.rss()
	fmt.Printf("after a start: RssAnon %s (%+.0f MiB over empty), RssFile %s, heap in use %s, db %s (%.0f B a file); load %s\n",
		mib(anon), float64(anon-emptyAnon)/(1<<20), mib(file), mib(d.heap()), mib(size(db)), float64(size(db))/float64(n), loadavg())
	fmt.Printf("\n| files | work | first pass, µs a file (each) | server CPU µs a file (each) | RssAnon after the walk (Δ empty) | once the kernel forgets (Δ empty) | load before/after |\n|---|---|---|---|---|---|---|\n")
	for _, w := range b.works {
		cmd, ok := walkCmd[w]
		if !ok {
			log.Fatalf("-works: unknown %q", w)
		}
		var walls, cpus []time.Duration
		var after int64
		load := loadavg()
		for range b.firsts {
			d.stop()
			dropCaches()
			d, _ = b.restart()
			wall, cpu := runOn(fmt.Sprintf(cmd, b.mnt), d.cmd.Process.Pid)
			walls, cpus = append(walls, wall), append(cpus, cpu)
			after, _ = d.rss()
		}
		// The kernel forgets the walk's inodes once the server has
		// given back what the walk left (as it would forget them later,
		// under memory pressure), and the server is left idle to give
		// back what their nodes held.
		time.Sleep(max(b.pause, 4*time.Second))
		forgetInodes()
		time.Sleep(2 * max(b.pause, 4*time.Second))
		forgot, _ := d.rss()
		us := func(ds []time.Duration) string {
			s := ""
			for i, x := range ds {
				if i > 0 {
					s += ", "
				}
				s += fmt.Sprintf("%.2f", float64(x.Nanoseconds())/1e3/float64(n))
			}
			return fmt.Sprintf("%.2f (%s)", float64(benchd.Quantile(ds, 0.5).Nanoseconds())/1e3/float64(n), s)
		}
		fmt.Printf("| %d | %s | %s | %s | %s (%+.0f MiB) | %s (%+.0f MiB) | %s / %s |\n", n, w, us(walls), us(cpus),
			mib(after), float64(after-emptyAnon)/(1<<20), mib(forgot), float64(forgot-emptyAnon)/(1<<20), load, loadavg())
	}
	d.stop()
	if push > 0 {
		b.seededPush(n, push, emptyAnon)
	}
}

// seededPush pushes files n..n+push-1 into the seeded depot with `depotfs
// push` on a fresh server (the one that walked holds the nodes of every
// file the kernel still knows), then measures as the pushed sizes do: the
// server at rest after the pushes, and a whole-tree snapshot.
func (b *bench) seededPush(n, push int, emptyAnon int64) {
	b.src = filepath.Join(b.dir, "src")
	defer os.RemoveAll(b.src)
	d, _ := b.restart()
	took := b.push(d, n, n+push)
	time.Sleep(max(b.pause, 4*time.Second))
	anon, file := d.rss()
	fmt.Printf("\npushed %d files into the depot of %d: %.0f files/s; at rest after: RssAnon %s (%+.0f MiB over empty), RssFile %s, heap in use %s; load %s\n",
		push, n, float64(push)/took.Seconds(), mib(anon), float64(anon-emptyAnon)/(1<<20), mib(file), mib(d.heap()), loadavg())
	fmt.Printf("snapshot of the whole tree: %v\n", d.snapshot("seeded-push"))
	d.stop()
}

// dropCaches writes back the dirty pages and drops the kernel's page,
// dentry and inode caches, so a pass reads the database from disk.
func dropCaches() {
	syscall.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0); err != nil {
		log.Fatalf("drop caches: %v", err)
	}
}

// forgetInodes drops the kernel's dentry and inode caches, not its page
// cache: the kernel forgets the mount's inodes (FORGET to the server)
// without waiting for every dirty page on the machine to be written.
func forgetInodes() {
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("2"), 0); err != nil {
		log.Fatalf("drop the inode cache: %v", err)
	}
}
