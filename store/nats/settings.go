package nats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrSettingsDiffer reports a host opening a depot whose recorded
// settings (Options.Settings) differ from its own; the error's text names
// each one with both values.
var ErrSettingsDiffer = errors.New("this host's settings differ from the depot's")

// settingsKey is the key of the recorded settings in the settings bucket.
const settingsKey = "settings"

// agree records the host's Options.Settings as the depot's when the depot
// has none (the first host to start), and otherwise checks that they are
// the recorded ones: hosts that disagree on a limit would each enforce
// their own on the one shared depot (one host's push evicting what the
// others keep). With Options.ResetSettings the host's settings replace the
// recorded ones.
func (s *Store) agree(ctx context.Context) error {
	if len(s.opts.Settings) == 0 {
		return nil
	}
	kv, err := s.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      s.opts.Prefix + "-settings",
		Description: "depotfs settings every host of the depot must share",
		History:     1,
		Replicas:    s.opts.Replicas,
		Storage:     jetstream.FileStorage,
	})
	if err != nil {
		return fmt.Errorf("settings bucket: %w", err)
	}
	mine, err := json.Marshal(s.opts.Settings)
	if err != nil {
		return err
	}
	if s.opts.ResetSettings {
		if _, err := kv.Put(ctx, settingsKey, mine); err != nil {
			return fmt.Errorf("recording this host's settings: %w", err)
		}
		s.log.Warn("nats: this host's settings replace the depot's; restart the other hosts with them", "settings", s.opts.Settings)
		return nil
	}
	if _, err := kv.Create(ctx, settingsKey, mine); err == nil {
		return nil
	} else if !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("recording the depot's settings: %w", err)
	}
	e, err := kv.Get(ctx, settingsKey)
	if err != nil {
		return fmt.Errorf("reading the depot's settings: %w", err)
	}
	var recorded map[string]string
	if err := json.Unmarshal(e.Value(), &recorded); err != nil {
		return fmt.Errorf("reading the depot's settings: %w", err)
	}
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(s.opts.Settings)) {
		if v, ok := recorded[k]; ok && v != s.opts.Settings[k] {
			diffs = append(diffs, fmt.Sprintf("%s is %s on this host, %s in the depot", k, s.opts.Settings[k], v))
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%w: %s (recorded by the first host to start): start this host with the depot's values",
			ErrSettingsDiffer, strings.Join(diffs, "; "))
	}
	return nil
}
