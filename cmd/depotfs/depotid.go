package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// depotRecord is what a host keeps beside --db of the NATS depot it
// serves: the depot's id, so that it never serves another depot (an empty
// one on other servers answering at --store's address) in its place.
type depotRecord struct {
	Depot    string    `json:"depot"`
	Prefix   string    `json:"prefix"`
	Store    string    `json:"store"`
	Recorded time.Time `json:"recorded"`
}

// depotRecordPath is the file of the record of the depot under prefix,
// beside the --db file: one per prefix, since each prefix is a depot.
func depotRecordPath(db, prefix string) string { return db + ".nats-" + prefix + ".json" }

// viewCachePath is the file where serve keeps its view of the tree of the
// depot under prefix (natsstore.Options.ViewCache), beside the record: a
// restart then reads only what changed since it was written.
func viewCachePath(db, prefix string) string { return db + ".nats-" + prefix + ".view" }

// readDepotRecord returns the recorded depot id, "" when this host has
// none (it never served a depot under the prefix).
func readDepotRecord(path string) (string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("this host's record of its NATS depot: %w", err)
	}
	var r depotRecord
	if err := json.Unmarshal(data, &r); err != nil || r.Depot == "" {
		return "", fmt.Errorf("this host's record of its NATS depot %s: unreadable (%v): remove it to let this host join the depot the cluster holds", path, err)
	}
	return r.Depot, nil
}

// writeDepotRecord records r at path: written aside, synced, then renamed
// over the old record and the directory synced, so a crash leaves the old
// record or the new one.
func writeDepotRecord(path string, r depotRecord) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("recording the NATS depot's id: %w", err)
	}
	_, err = f.Write(append(data, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("recording the NATS depot's id: %w", err)
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("recording the NATS depot's id: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("recording the NATS depot's id: %w", err)
	}
	return nil
}
