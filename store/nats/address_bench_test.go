package nats

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/seal"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/entryrec"
)

// BenchmarkAddresses measures what keyed addresses add where content is
// named: a content id (an HMAC, once per open and per blob in a leak
// check), and the encoding and decoding of an entry record (every write,
// and every record every host applies), beside the same in a clear depot.
func BenchmarkAddresses(b *testing.B) {
	kek, err := seal.ParseKey(seal.NewKeyText())
	if err != nil {
		b.Fatal(err)
	}
	k, _, err := seal.NewKeyedRecord(context.Background(), kek)
	if err != nil {
		b.Fatal(err)
	}
	sum := "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	r := &record{Path: "/reports/2026/q3.pdf", Record: entryrec.Record{Kind: store.KindFile, Ino: 7, Size: 100 << 10,
		SHA256: sum, MTime: time.Now(), Present: true, Writer: "agent"}}
	for _, a := range []addresses{{}, {k}} {
		name := map[bool]string{false: "clear", true: "keyed"}[a.keyed()]
		data, err := a.marshal(r)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("id/"+name, func(b *testing.B) {
			for b.Loop() {
				a.id(sum)
			}
		})
		b.Run("encode/"+name, func(b *testing.B) {
			for b.Loop() {
				if _, err := a.marshal(r); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("decode/"+name, func(b *testing.B) {
			for b.Loop() {
				var x record
				if err := json.Unmarshal(data, &x); err != nil {
					b.Fatal(err)
				}
				if err := a.openRecord(&x.Record); err != nil || x.SHA256 != sum {
					b.Fatal(x.SHA256, err)
				}
			}
		})
	}
}
