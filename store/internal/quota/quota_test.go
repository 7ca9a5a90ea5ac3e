package quota_test

import (
	"errors"
	"testing"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/quota"
)

func TestCheck(t *testing.T) {
	s, err := quota.New([]store.Quota{{Prefix: "/b", Bytes: 10}, {Prefix: "/a", Bytes: 100}, {Prefix: "/", Bytes: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	committed := s.Zero()
	s.Charge(committed, "/a/x", 90)
	s.Charge(committed, "/ab", 5) // not below /a: whole components
	if uses := s.Uses(committed); uses[0] != (store.QuotaUse{Prefix: "/", Limit: 1000, Charged: 95}) ||
		uses[1] != (store.QuotaUse{Prefix: "/a", Limit: 100, Charged: 90}) || uses[2].Charged != 0 {
		t.Fatalf("Uses = %+v", uses)
	}
	tests := []struct {
		name   string
		change func(d quota.Charges)
		prefix string // "" : accepted
	}{
		{"within", func(d quota.Charges) { s.Charge(d, "/a/y", 10) }, ""},
		{"over", func(d quota.Charges) { s.Charge(d, "/a/y", 11) }, "/a"},
		{"a release never", func(d quota.Charges) { s.Charge(d, "/a/x", -90) }, ""},
		{"a move out and in", func(d quota.Charges) { s.Charge(d, "/a/x", -90); s.Charge(d, "/a/z", 95) }, ""},
		{"net growth over", func(d quota.Charges) { s.Charge(d, "/a/x", -5); s.Charge(d, "/a/z", 20) }, "/a"},
		{"another prefix", func(d quota.Charges) { s.Charge(d, "/c", 900) }, ""},
		{"the root's", func(d quota.Charges) { s.Charge(d, "/c", 906) }, "/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := s.Zero()
			tt.change(d)
			err := s.Check(committed, d)
			var qe *store.QuotaError
			switch {
			case tt.prefix == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.prefix != "" && (!errors.As(err, &qe) || qe.Prefix != tt.prefix || !errors.Is(err, store.ErrLimit)):
				t.Errorf("Check = %v, want a QuotaError of %s", err, tt.prefix)
			}
		})
	}
	// Over already (a quota lowered): adding is refused, releasing not.
	over := s.Zero()
	s.Charge(over, "/b/f", 50)
	add, rel := s.Zero(), s.Zero()
	s.Charge(add, "/b/g", 1)
	s.Charge(rel, "/b/f", -1)
	if s.Check(over, add) == nil || s.Check(over, rel) != nil {
		t.Error("a prefix over its quota: adding accepted or releasing refused")
	}
	var none *quota.Set
	none.Charge(none.Zero(), "/a", 5)
	if none.Check(nil, nil) != nil || none.Uses(nil) != nil {
		t.Error("a nil Set charges or refuses")
	}
}
