package audit_test

import (
	"testing"

	"github.com/depotfs/depotfs/internal/audit"
)

// BenchmarkAppend measures one record's cost with fsync (the policy) and
// without (what fsync costs), appended by one writer or by many at once
// (group commit shares fsyncs).
func BenchmarkAppend(b *testing.B) {
	for _, bc := range []struct {
		name     string
		noSync   bool
		parallel bool
	}{
		{"fsync/serial", false, false},
		{"fsync/parallel", false, true},
		{"nosync/serial", true, false},
		{"nosync/parallel", true, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			l, _ := newLog(b, &audit.Options{NoSync: bc.noSync})
			if bc.parallel {
				b.SetParallelism(8)
				b.RunParallel(func(pb *testing.PB) {
					for i := 0; pb.Next(); i++ {
						if err := l.Append(record(i)); err != nil {
							b.Error(err)
							return
						}
					}
				})
				return
			}
			for i := 0; b.Loop(); i++ {
				if err := l.Append(record(i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
